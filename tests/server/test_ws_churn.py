"""Short connections in numbers must not take the server down.

Hypercorn 0.18 ends a connection without its send lock, so a close that meets another
send of the same connection (its first keepalive ping, or the answer to a Close frame
that crossed ours) raised BusyResourceError and ended every connection of the process.
`server/hypercorn_close.py` guards it; the churn test drives the race as it happened, the
unit test pins the guard without timing.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import trio
import trio.testing
from hypercorn.trio.tcp_server import TCPServer
from websockets.trio.client import connect

from protocol.client import Client
from server import hypercorn_close
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
            assert await c.request("lobby.list") == {"worlds": []}
        assert server.proc is not None and server.proc.poll() is None
        assert not any("Traceback" in line for line in server.output), "".join(server.output)
    finally:
        await trio.to_thread.run_sync(server.kill)


class FakeStream:
    """Records what a connection's close does to its stream."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def send_eof(self) -> None:
        self.calls.append("send_eof")
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        self.calls.append("aclose")


async def test_close_waits_for_the_send_lock_or_skips_the_eof() -> None:
    hypercorn_close.install()
    hypercorn_close.install()  # idempotent
    free = SimpleNamespace(send_lock=trio.Lock(), stream=FakeStream())
    await TCPServer._close(free)  # type: ignore[arg-type]
    assert free.stream.calls == ["send_eof", "aclose"]
    assert not free.send_lock.locked()

    busy = SimpleNamespace(send_lock=trio.Lock(), stream=FakeStream())
    release = trio.Event()

    async def sending() -> None:  # another task of the connection, in the middle of a send
        async with busy.send_lock:
            await release.wait()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sending)
        await trio.testing.wait_all_tasks_blocked()
        await TCPServer._close(busy)  # type: ignore[arg-type]
        assert busy.stream.calls == ["aclose"]  # no EOF sent beside the other send
        release.set()
