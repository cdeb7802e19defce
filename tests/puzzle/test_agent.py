"""`examples/puzzle_agent.py` wins the whole starter pack against a live server (a real
`petridish serve` process), with the solver's hints; an `unknown` hint is asked again with
twice the budget while that can change its answer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

from actors.puzzle.catalog import bundled
from examples.puzzle_agent import Agent, budget_after
from protocol.client import Client
from protocol.ops.puzzle import MAX_HINT_MS, MIN_HINT_MS
from server.auth import TokenStore
from tests.server.server_process import REPO, ServerProcess
from tests.server.ws_harness import running_server


async def test_the_example_agent_wins_the_starter_pack(tmp_path: Path) -> None:
    with ServerProcess(tmp_path, "--open") as server:
        agent = await trio.to_thread.run_sync(lambda: subprocess.run(
            [sys.executable, str(REPO / "examples" / "puzzle_agent.py"), "--url",
             server.ws_url, "--room", "starter-run"], check=False, cwd=REPO,
            capture_output=True,
            text=True, timeout=300))
        assert agent.returncode == 0, agent.stdout + agent.stderr
        levels = bundled("starter").levels
        assert len(agent.stdout.splitlines()) == len(levels)
        async with Client.connect(server.ws_url) as c:
            view = await c.request("puzzle.view", "puzzle:starter-run")
        assert view["solved"] == [lv.id for lv in levels] and view["won"]


async def test_an_unknown_hint_is_asked_again_with_twice_the_budget(tmp_path: Path) -> None:
    # Before: the same budget again, which gives the same answer (a budget is search work).
    asked: list[int] = []

    class Watched(Agent):
        async def request(self, op: str, args: dict[str, Any] | None = None) -> Any:
            if op == "puzzle.hint":
                asked.append(args["budget_ms"] if args else 0)
            return await super().request(op, args)

    token = TokenStore(tmp_path).create("agent", "ann")
    async with running_server(tmp_path) as srv, Client.connect(srv.ws_url, token=token) as c:
        view = await c.request("puzzle.create", "puzzle:spell", {"level": "spell"})
        won = await Watched(c, "spell", MIN_HINT_MS).win_level(view)  # spell needs ~900
    assert won["won"] and asked == [100, 200, 400, 800]


def test_the_budget_doubles_on_the_node_cap_only_up_to_the_ops_maximum() -> None:
    assert budget_after(1000, "node cap 2000 reached") == 2000
    assert budget_after(5000, "keke fast path: ...; node cap 10000 reached") == MAX_HINT_MS
    assert budget_after(MAX_HINT_MS, "node cap 16000 reached") is None  # the same again
    assert budget_after(2000, "memory cap 134217728 bytes reached") is None
    assert budget_after(2000, "time cap 9 s reached") == 2000  # a less busy moment may do
