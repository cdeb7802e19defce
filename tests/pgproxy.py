"""A TCP proxy in front of the tests' PostgreSQL that a test can break, to play a database
that goes away (or a network that stops carrying packets) for one client while the
others still reach it.

    proxy = await nursery.start(PgProxy(postgres_dsn).serve)
    store = PostgresEventStore(proxy.dsn)   # every connection of it goes through the proxy
    proxy.cut()        # every connection closed, new ones refused (PostgreSQL is down)
    await proxy.all_closed()
    proxy.blackhole()  # connections stay open, nothing is carried (a partition)
    proxy.restore()    # carried again (held bytes go on; cut connections stay closed)

`PgProxy(dsn, drop_options=True)` plays a connection pooler that drops the startup
message's `options` (PgBouncer does), refusing TLS and GSS encryption as it goes.
"""

from __future__ import annotations

import trio
from psycopg.conninfo import conninfo_to_dict, make_conninfo

PASS, CUT, BLACKHOLE = "pass", "cut", "blackhole"
ENCRYPTION_REQUESTS = (80877103, 80877104)  # SSLRequest, GSSENCRequest: answered "N"


class PgProxy:
    """Carries connections to the PostgreSQL of `dsn` until told otherwise."""

    def __init__(self, dsn: str, *, drop_options: bool = False) -> None:
        info = conninfo_to_dict(dsn)
        self.drop_options = drop_options
        self._target = (str(info["host"]), int(info["port"]))
        self._dsn = dsn
        self.port = 0
        self.mode = PASS
        self.connections = 0  # accepted so far
        self._changed = trio.Event()
        self._scopes: set[trio.CancelScope] = set()

    @property
    def dsn(self) -> str:
        """`dsn` through this proxy."""
        return make_conninfo(self._dsn, host="127.0.0.1", port=str(self.port))

    async def serve(self, *, task_status: trio.TaskStatus[PgProxy]) -> None:
        """Listen on a free port of 127.0.0.1 until cancelled."""
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self)
        await trio.serve_listeners(self._carry, listeners)

    def cut(self) -> None:
        """Close every connection; refuse (accept and close) new ones."""
        self._set(CUT)
        for scope in list(self._scopes):
            scope.cancel()

    async def all_closed(self) -> None:
        """Wait until every connection cut is closed on this side (its client can see it)."""
        while self._scopes:
            await trio.sleep(0.005)

    def blackhole(self) -> None:
        """Keep every connection open but carry nothing, either way."""
        self._set(BLACKHOLE)

    def restore(self) -> None:
        """Carry connections again."""
        self._set(PASS)

    def _set(self, mode: str) -> None:
        self.mode = mode
        self._changed.set()
        self._changed = trio.Event()

    async def _while_blackholed(self) -> None:
        while self.mode == BLACKHOLE:
            await self._changed.wait()

    async def _carry(self, client: trio.SocketStream) -> None:
        self.connections += 1
        server: trio.SocketStream | None = None
        with trio.CancelScope() as scope:
            self._scopes.add(scope)
            try:
                await self._while_blackholed()
                if self.mode == CUT:
                    return
                server = await trio.open_tcp_stream(*self._target)
                if self.drop_options:
                    await server.send_all(await _startup_without_options(client))
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._pump, client, server, nursery.cancel_scope)
                    nursery.start_soon(self._pump, server, client, nursery.cancel_scope)
            except OSError:
                pass
            finally:
                for stream in (client, server):  # (no await: this scope may be cancelled)
                    if stream is not None:
                        stream.socket.close()
                self._scopes.discard(scope)

    async def _pump(self, source: trio.SocketStream, sink: trio.SocketStream,
                    scope: trio.CancelScope) -> None:
        try:
            while data := await source.receive_some(1 << 16):
                await self._while_blackholed()
                if self.mode == CUT:
                    break
                await sink.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        scope.cancel()


async def _startup_without_options(client: trio.SocketStream) -> bytes:
    """The client's startup message without its `options` (its encryption requests before
    it refused)."""
    while True:
        length = int.from_bytes(await _exactly(client, 4), "big")
        body = await _exactly(client, length - 4)
        if int.from_bytes(body[:4], "big") not in ENCRYPTION_REQUESTS:
            break
        await client.send_all(b"N")
    fields = body[4:].split(b"\0")
    pairs = [(k, v) for k, v in zip(fields[0::2], fields[1::2], strict=False) if k]
    rest = b"".join(k + b"\0" + v + b"\0" for k, v in pairs if k != b"options") + b"\0"
    return (8 + len(rest)).to_bytes(4, "big") + body[:4] + rest


async def _exactly(stream: trio.SocketStream, n: int) -> bytes:
    data = b""
    while len(data) < n:
        if not (chunk := await stream.receive_some(n - len(data))):
            raise OSError("the client closed during its startup")
        data += chunk
    return data
