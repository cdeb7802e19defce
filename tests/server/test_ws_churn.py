"""Short connections in numbers must not take the server down.

A close that meets another send of the same connection (a keepalive ping, or the answer
to a Close frame that crossed ours) once raised BusyResourceError inside Hypercorn and
ended every connection of the process; `/ws` is framed by server/transport.py now, whose
sends share one lock. The churn test drives that race as it happened.
"""

from __future__ import annotations

import json
from pathlib import Path

import trio
from websockets.trio.client import connect

from protocol.client import Client
from tests.server.server_process import ServerProcess


async def test_many_short_connections_leave_the_server_running(tmp_path: Path) -> None:
    # One address opens them all: its budgets of connections and refused hellos are raised.
    server = ServerProcess(tmp_path / "data", "--budget", "connections_per_address=1000",
                           "--budget", "ungreeted_per_address=1000",
                           "--budget", "hello_failures=1000")
    await trio.to_thread.run_sync(server.start)
    try:
        refused = 0

        async def one(i: int) -> None:
            nonlocal refused
            async with connect(server.ws_url, compression=None, open_timeout=30) as ws:
                token = "pdg_bad" if i % 2 else None  # refused and closed 1008, or greeted
                await ws.send(json.dumps({"op": "hello", "protocol": 1, "token": token}))
                reply = json.loads(await ws.recv())
                refused += not reply["ok"]
            # leaving the block closes at once, crossing the server's own close (1008)

        for _ in range(8):
            async with trio.open_nursery() as nursery:
                for i in range(30):
                    nursery.start_soon(one, i)
        assert refused == 8 * 15
        async with Client.connect(server.ws_url) as c:
            assert await c.request("lobby.list") == {"worlds": [], "total": 0, "offset": 0}
        assert server.proc is not None and server.proc.poll() is None
        assert not any("Traceback" in line for line in server.output), "".join(server.output)
    finally:
        await trio.to_thread.run_sync(server.kill)
