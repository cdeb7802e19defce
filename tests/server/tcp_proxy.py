"""A TCP relay between clients and a server on loopback that a test can hold or cut: a network
drop, for real (tests/server/test_client.py, test_budgets.py, tests/cluster)."""

from __future__ import annotations

import trio


class Proxy:
    """A TCP relay to the server whose connections the test can cut (a network drop)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.accepted = 0
        self._scopes: set[trio.CancelScope] = set()
        self._flowing = trio.Event()
        self._flowing.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on a free loopback port until cancelled."""
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started()
        await trio.serve_listeners(self._relay, listeners)

    async def _relay(self, client: trio.SocketStream) -> None:
        self.accepted += 1
        upstream = await trio.open_tcp_stream("127.0.0.1", self.target_port)
        with trio.CancelScope() as scope:
            self._scopes.add(scope)
            async with client, upstream, trio.open_nursery() as nursery:
                nursery.start_soon(self._pump, client, upstream, False)
                nursery.start_soon(self._pump, upstream, client, True)
        self._scopes.discard(scope)

    async def _pump(self, source: trio.SocketStream, sink: trio.SocketStream,
                    downstream: bool) -> None:
        async for chunk in source:
            if downstream:
                await self._flowing.wait()
            await sink.send_all(chunk)
        await sink.send_eof()

    def hold(self) -> None:
        """Stop passing the server's bytes to clients (until the next `cut`)."""
        self._flowing = trio.Event()

    def release(self) -> None:
        """Pass the server's bytes to clients again."""
        self._flowing.set()

    def cut(self) -> None:
        """Drop every open connection abruptly; new ones are accepted as before."""
        for scope in list(self._scopes):
            scope.cancel()
        self._flowing.set()

    def cut_in(self, nursery: trio.Nursery, seconds: float) -> None:
        """`cut` after `seconds`."""
        async def cut_later() -> None:
            await trio.sleep(seconds)
            self.cut()

        nursery.start_soon(cut_later)
