"""`examples/puzzle_agent.py` wins the whole starter pack against a live server (a real
`petridish serve` process), with the solver's hints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import trio

from actors.puzzle.catalog import bundled
from protocol.client import Client
from tests.server.server_process import REPO, ServerProcess


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
