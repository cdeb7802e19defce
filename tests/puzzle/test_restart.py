"""SIGKILL the server mid-level: the room comes back at the same move (board, moves, undo
stack, mechanics) and the level is finished after the restart; the hint's worker process
does not outlive the server."""

from __future__ import annotations

from pathlib import Path

import psutil
import trio

from protocol.client import Client
from tests.puzzle.live import play
from tests.server.server_process import ServerProcess

ROOM = "puzzle:kill"


async def test_a_sigkill_mid_level_brings_the_room_back_at_the_same_move(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path, "--open").start()
    try:
        async with Client.connect(server.ws_url) as c:
            view = await c.request("puzzle.create", ROOM, {"level": "plates"})
            reply = await play(c, ROOM, "drrrr", view["revision"])  # the box opens the gate
            assert reply["room"]["mechanics"] == {"gate": {"open": True}}
            hint = await c.request("puzzle.hint", ROOM, {"budget_ms": 8000})
            assert hint["status"] == "solved"
            before = await c.request("puzzle.view", ROOM)
            key = c.key  # the player's anonymous identity, to come back as after the restart
        workers = [p for p in psutil.Process(server.proc.pid).children(recursive=True)
                   if "multiprocessing" in " ".join(p.cmdline())]
        assert workers, "the hint ran in a worker process"
        server.kill()
        _, alive = psutil.wait_procs(workers, timeout=10)
        assert not alive, "the hint worker exits with the server"
        server.start(port=server.port)
        async with Client.connect(server.ws_url, key=key) as c:
            after = await c.request("puzzle.view", ROOM)
            assert after == before
            undone = await c.request("puzzle.undo", ROOM, {})
            assert undone["room"]["moves"] == "drrr"
            assert undone["room"]["mechanics"] == {"gate": {"open": False}}
            redo = await play(c, ROOM, "r", undone["room"]["revision"])
            won = await play(c, ROOM, hint["moves"], redo["room"]["revision"])
            assert won["room"]["won"]
            with trio.fail_after(10):
                while not (await c.request("puzzle.leaderboard", ROOM, {}))["fewest"]:
                    await trio.sleep(0.05)
    finally:
        server.kill()
