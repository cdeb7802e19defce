"""Five example agents finish a 100x100 field together while a spectator watches."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import trio

from protocol.client import Client
from tests.field_live._live import start, stored_replay
from tests.server.ws_harness import running_server

REPO = Path(__file__).resolve().parents[2]
AGENTS = 5


async def _watch(client: Client, topic: str, seen: list[dict], pushes: list[int],
                 task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    async with client.subscribe(topic) as sub:
        task_status.started()
        async for push in sub:
            if push.kind == "snapshot":
                assert push.data["status"] == "ready" and not seen
                seen.append({"rev": push.rev, "snapshot": True})
                continue
            pushes.append(len(push.data))
            seen.extend(push.data)


async def test_five_agents_finish_a_field(tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as srv, Client.connect(srv.ws_url) as c:
        await start(c, "big", size=100, seed=1)
        seen: list[dict] = []
        pushes: list[int] = []
        async with trio.open_nursery() as watchers:
            await watchers.start(_watch, c, "field:big", seen, pushes)
            async with trio.open_nursery() as n:
                for k in range(AGENTS):
                    cmd = [sys.executable, str(REPO / "examples" / "field_agent.py"), "--url",
                           srv.ws_url, "--game", "big", "--name", f"p{k}", "--model", f"m{k % 2}"]
                    n.start_soon(partial(trio.run_process, cmd, capture_stdout=True,
                                         capture_stderr=True))
            obs = await c.request("field.observe", "field:big", {"rect": [0, 0, 100, 100]})
            with trio.fail_after(10):
                while not seen or seen[-1]["rev"] < obs["revision"]:
                    await trio.sleep(0.05)
            watchers.cancel_scope.cancel()
        # every tile solved, every agent healthy, one merged territory
        assert obs["totals"]["solved"] == obs["tiles_total"] == len(obs["tiles"])
        assert all(t["status"] == "solved" for t in obs["tiles"])
        assert len(obs["agents"]) == AGENTS
        assert {a["health"]["state"] for a in obs["agents"]} == {"healthy"}, obs["agents"]
        assert len({a["group"] for a in obs["agents"]}) == 1
        # the live state is the replay of the stored events
        actor = await srv.state.directory.get("field:big")
        assert actor.state.state == await stored_replay(srv.state.directory, "field:big")
        # the spectator saw a snapshot, then every later event once, in order, with dirty tiles
        first = seen[0]["rev"]
        revs = [e["rev"] for e in seen[1:]]
        assert revs == list(range(first + 1, obs["revision"] + 1))
        assert all(isinstance(e["dirty"], list) for e in seen[1:])
        assert any(e["dirty"] for e in seen[1:] if e["kind"] == "commit")
        board = await c.request("field.leaderboard", "field:big", {})
        assert sum(r["agents"] for r in board["models"]) == AGENTS
        assert sum(r["reward"] for r in board["users"]) == obs["totals"]["reward"]
