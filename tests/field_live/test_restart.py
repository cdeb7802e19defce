"""SIGKILL the server mid-game: the field and its board come back; the agents finish."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import trio

from protocol.client import Client
from tests.field_live._live import ready, start
from tests.server.server_process import ServerProcess

REPO = Path(__file__).resolve().parents[2]


async def _figures(url: str) -> tuple[dict, dict]:
    async with Client.connect(url) as c:
        await ready(c, "r")
        obs = await c.request("field.observe", "field:r", {"rect": [0, 0, 40, 40]})
        board = await c.request("field.leaderboard", "field:r", {})
        return obs, board


def _agent(url: str, k: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(REPO / "examples" / "field_agent.py"), "--url",
                             url, "--game", "r", "--name", f"p{k}"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


async def test_sigkill_mid_game_keeps_field_and_board(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path, "--open").start()
    agents: list[subprocess.Popen] = []
    try:
        async with Client.connect(server.ws_url) as c:
            await start(c, "r", size=40, seed=5)
            agents = [_agent(server.ws_url, k) for k in range(2)]
            with trio.fail_after(60):
                # Both agents joined (a join cut by the kill would be lost to its agent)
                # and some cells are committed.
                while True:
                    glance = await c.request("field.observe", "field:r", {"rect": [0, 0, 1, 1]})
                    if len(glance["agents"]) == 2 and glance["totals"]["commits"] >= 3:
                        break
                    await trio.sleep(0.1)
        for a in agents:
            os.kill(a.pid, signal.SIGSTOP)  # hold the game still while we compare
        # A write a stopped agent sent just before the stop may still land: wait until
        # two reads agree, so `before` is the state the killed server had made durable.
        before, settled = await _figures(server.ws_url), None
        with trio.fail_after(30):
            while settled != before:
                await trio.sleep(0.3)
                settled, before = before, await _figures(server.ws_url)
        server.kill()
        server.start(port=server.port)
        after = await _figures(server.ws_url)
        assert after == before
        # Two anonymous agents: two callers, each its own leaderboard user.
        assert before[0]["totals"]["commits"] >= 3 and len(before[1]["users"]) == 2
        for a in agents:
            os.kill(a.pid, signal.SIGCONT)
        for a in agents:
            out, _ = await trio.to_thread.run_sync(a.communicate, None, 120)
            assert a.returncode == 0, out
        obs, _ = await _figures(server.ws_url)
        assert obs["totals"]["solved"] == obs["tiles_total"]
    finally:
        for a in agents:
            if a.poll() is None:
                a.kill()
                a.wait()
        server.kill()
