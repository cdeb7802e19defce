"""One port, two servers: `/ws` served by server/transport.py, HTTP by Hypercorn.

Our own accept loop hands each connection to a task that reads its request head first
(bounded in size and time). A websocket upgrade of `/ws` becomes a `WebSocket`
(server/transport.py) for the session handler; anything else goes to Hypercorn's own
per-connection server over a stream that replays the head, and from there to the
Starlette app (static files, `/mcp`, `/healthz`, `/metrics`). HTTP/1.1 only: HTTP/2's
preface is refused (the connection closed) and `Upgrade: h2c` is not taken (`_Http11`).

Why: Hypercorn's pure-Python websocket framing (h11, wsproto, its ASGI plumbing and
Starlette's) was 42% of the server's CPU per request and a third of an idle
connection's memory (docs/performance.md).
"""

from __future__ import annotations

import errno
import logging
import math
import os
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import h11
import trio
from hypercorn.app_wrappers import ASGIWrapper
from hypercorn.config import Config as HypercornConfig
from hypercorn.protocol import ProtocolWrapper
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.trio.lifespan import Lifespan
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import ConnectionState

from server.keepalive import Pinger
from server.tcp_guard import TcpGuard, refuse
from server.trace import Throttle
from server.transport import RECEIVE, HandshakeFailed, WebSocket

log = logging.getLogger("petridish.front")

MAX_HEAD = 16384  # bytes of a request head (request line and headers)
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\n"  # how an HTTP/2 client "with prior knowledge" begins


# ---- the head, and a stream that replays it ------------------------------------------------

async def read_head(stream: trio.abc.ReceiveStream) -> bytes | None:
    """The bytes received until the end of the request head (maybe more), or None when the
    peer closed first or sent more than MAX_HEAD bytes without ending it."""
    data = bytearray()
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD:
            return None
        try:
            chunk = await stream.receive_some(RECEIVE)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return None
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def upgrade_target(head: bytes) -> str | None:
    """The path of a websocket upgrade request (`GET <path> HTTP/1.1` with `Upgrade:
    websocket`), or None for any other request."""
    line, _, rest = head.partition(b"\r\n")
    parts = line.split(b" ")
    if len(parts) != 3 or parts[0] != b"GET":
        return None
    for header in rest.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        name, _, value = header.partition(b":")
        if name.strip().lower() == b"upgrade" and b"websocket" in value.lower():
            return parts[1].split(b"?", 1)[0].decode("latin-1")
    return None


SEND_SLICE = 65536  # bytes of an HTTP answer a client must take within send_timeout


class ReplayStream(trio.abc.HalfCloseableStream):
    """`inner` with `head` received again first (for Hypercorn, which reads it itself), and
    its sends bounded: a client that has not taken SEND_SLICE bytes of an answer within
    `send_timeout` seconds has its connection closed (`stalled` is told first), and `cut`
    closes it at once (a shutdown past its graceful wait). Hypercorn writes shielded from
    every cancellation and has no write timeout: a client that read nothing of its answer
    held its connection, and a shutdown, for good."""

    def __init__(self, inner: trio.SocketStream, head: bytes, send_timeout: float = math.inf,
                 stalled: Callable[[], None] | None = None) -> None:
        self._inner = inner
        self._head = head
        self._send_timeout = send_timeout
        self._stalled = stalled

    def cut(self) -> None:
        """Close the socket now: a send or receive waiting on it raises ClosedResourceError
        (on which Hypercorn ends the connection), shielded or not."""
        self._inner.socket.close()

    @property
    def socket(self) -> Any:
        """The socket (Hypercorn reads the peer's address from it)."""
        return self._inner.socket

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        """The replayed head first, then the stream's bytes."""
        if self._head:
            size = len(self._head) if max_bytes is None else max_bytes
            data, self._head = self._head[:size], self._head[size:]
            await trio.lowlevel.checkpoint()
            return data
        return await self._inner.receive_some(max_bytes)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """As the inner stream, SEND_SLICE bytes at a time, each within `send_timeout` (else
        the stream is closed and this raises BrokenResourceError, on which Hypercorn ends
        the connection): a client reading steadily is never cut, whatever the answer's size."""
        view = memoryview(data)
        for at in range(0, max(len(view), 1), SEND_SLICE):
            with trio.move_on_after(self._send_timeout) as waited:
                await self._inner.send_all(view[at:at + SEND_SLICE])
            if waited.cancelled_caught:
                if self._stalled is not None:
                    self._stalled()
                await trio.aclose_forcefully(self._inner)
                raise trio.BrokenResourceError(f"the client took under {SEND_SLICE} bytes in "
                                               f"{self._send_timeout:g} s")

    async def wait_send_all_might_not_block(self) -> None:
        """As the inner stream."""
        await self._inner.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        """As the inner stream."""
        await self._inner.send_eof()

    async def aclose(self) -> None:
        """As the inner stream."""
        await self._inner.aclose()


# ---- HTTP/1.1 only -----------------------------------------------------------------------

class _Http11(H11Protocol):
    """Hypercorn's HTTP/1.1, which never turns into HTTP/2: the server speaks plain HTTP/1.1
    (docs/operations.md), and HTTP/2's streams (100 per connection) would multiply the
    per-address connection budget. Hypercorn has no setting for it over plain TCP."""

    async def _check_protocol(self, event: h11.Request) -> None:
        """Hypercorn's switch to HTTP/2 (on `Upgrade: h2c`, or on HTTP/2's preface as a
        later request of a connection): none. An `Upgrade: h2c` request is answered as
        HTTP/1.1; a later preface goes to the app as a request (405: no route takes `PRI`),
        then its next bytes get a 400 (as the first request it is refused unread:
        `serve_front`)."""


class _Http11Server(TCPServer):
    """Hypercorn's connection server speaking `_Http11` (the protocol its `run` makes
    is replaced, unused, as it is set), which ends once its client has: Hypercorn waited
    out the keep-alive timeout on a connection its client had closed while it was idle
    (or reset while its answer was being made), its place held in the per-address count
    (server/tcp_guard.py) all along."""

    _read_ended = False  # no request can come any more (end of stream, reset, or closed)

    async def _read_data(self) -> None:
        """Hypercorn's reading, then no keep-alive wait (an answer going out still ends)."""
        await super()._read_data()
        self._read_ended = True
        await self.idle_task.stop()

    async def _idle_timeout(self) -> None:
        """Hypercorn's keep-alive wait, none once nothing more can be read: the connection
        ends with its last task."""
        if not self._read_ended:
            await super()._idle_timeout()

    @property
    def protocol(self) -> ProtocolWrapper:
        """The connection's protocol, `_Http11` inside."""
        return self._wrapper

    @protocol.setter
    def protocol(self, wrapper: ProtocolWrapper) -> None:
        wrapper.protocol = _Http11(wrapper.app, wrapper.config, wrapper.context,
                                   wrapper.task_group, wrapper.state, wrapper.ssl,
                                   wrapper.client, wrapper.server, wrapper.send)
        self._wrapper = wrapper


# ---- the front door ----------------------------------------------------------------------------

ACCEPT_RETRY = 0.1  # seconds before accepting again when the process is out of descriptors
ACCEPT_LOG_EVERY = 10.0  # seconds between two logs of failed accepts
_OUT_OF_RESOURCES = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}
CONNECTION_TASK = "server.front.connection"  # every connection task's name (one string)


async def _accept(listener: trio.SocketListener, connections: trio.Nursery,
                  handle: Callable[[trio.SocketStream], Awaitable[None]]) -> None:
    """Accept on `listener` until cancelled, each connection served by `handle` in a task
    of `connections` (trio's `serve_listeners` adds a coroutine frame per connection, and
    a name string per task). A failure for want of descriptors is logged at most every
    ACCEPT_LOG_EVERY seconds, with how many there were."""
    throttle = Throttle(ACCEPT_LOG_EVERY)  # (a flood must not fill the log)
    while True:
        try:
            stream = await listener.accept()
        except OSError as exc:
            if exc.errno not in _OUT_OF_RESOURCES:
                raise
            if (held := throttle.due()) is not None:
                log.error("accept failed (%s), %d time(s) since the last report; retrying "
                          "every %g s", os.strerror(exc.errno), held + 1, ACCEPT_RETRY)
            await trio.sleep(ACCEPT_RETRY)
            continue
        connections.start_soon(handle, stream, name=CONNECTION_TASK)


async def _head_within(stream: trio.SocketStream, timeout: float) -> bytes | None:
    """The request head (`read_head`), or None when it did not come within `timeout`."""
    with trio.move_on_after(timeout):
        return await read_head(stream)
    return None

WsHandler = Callable[[WebSocket], Awaitable[None]]


async def serve_front(app: Any, config: HypercornConfig, ws_path: str, ws_handler: WsHandler,
                      *, host: str, port: int, max_size: int, max_frame: int,
                      ping_interval: float | None, head_timeout: float, shutdown: trio.Event,
                      send_timeout: float = math.inf, guard: TcpGuard | None = None,
                      ping_dropped: Callable[[str, float, str], None] | None = None,
                      send_dropped: Callable[[str, float, str], None] | None = None,
                      violated: Callable[[int], None] | None = None,
                      task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED
                      ) -> None:
    """Serve `ws_handler` on `ws_path` and `app` (ASGI, through Hypercorn) for the rest, on
    one port, until `shutdown` is set; reports the bound address like Hypercorn's `serve`.
    `guard` admits (or refuses) each connection before its head is read
    (server/tcp_guard.py). A websocket's message past `max_size` closes it, one past
    `max_frame` is skipped unread; `violated` is told the code of each close for a
    violation (server/transport.py). An HTTP answer's write not taken within `send_timeout`
    ends its connection (`ReplayStream`), told to `send_dropped` as a websocket's missed
    pong is to `ping_dropped`: (peer, seconds, what).

    On shutdown the listeners close at once (new connections are refused), Hypercorn's idle
    keep-alive connections end, and this returns when every connection task has ended;
    the caller bounds that (it cancels the surrounding scope after its graceful timeout;
    then the sockets of HTTP answers still being sent are closed under them).
    """
    app = ASGIWrapper(app)
    lifespan_state: dict[str, Any] = {}
    lifespan = Lifespan(app, config, lifespan_state)
    context = WorkerContext(None)
    pinger = Pinger(ping_interval, ping_dropped)
    answering: set[ReplayStream] = set()  # Hypercorn's connections (cut past shutdown)

    async def handle(stream: trio.SocketStream) -> None:
        """One connection, in its own task (one coroutine deep, for an idle websocket)."""
        admitted = ""  # the peer the guard admitted, released at the end
        try:
            try:
                peer = str(stream.socket.getpeername()[0])
            except OSError:  # gone already
                return
            if guard is not None:
                refusal = guard.admit(peer, stream)
                if refusal is not None:
                    await refuse(stream, refusal)
                    return
                admitted = peer
            head = await _head_within(stream, head_timeout)
            if head is None or head.startswith(H2_PREFACE):  # HTTP/1.1 only: _Http11
                return
            if upgrade_target(head) != ws_path:
                stalled = None if send_dropped is None else partial(
                    send_dropped, peer, send_timeout,
                    f"took under {SEND_SLICE // 1024} KiB of an HTTP answer")
                replay = ReplayStream(stream, head, send_timeout, stalled)
                http = _Http11Server(app, config, context,
                                     ConnectionState(lifespan_state.copy()), replay)
                answering.add(replay)
                try:
                    await http
                finally:  # its protocol sends through it: a cycle, left to the collector
                    answering.discard(replay)
                    vars(http).pop("_wrapper", None)
                return
            ws = WebSocket(stream, head, max_size, peer, max_frame=max_frame,
                           violated=violated)
            del head  # an idle websocket need not hold its request
            pinger.sockets.add(ws)
            try:
                await ws_handler(ws)
            except HandshakeFailed:
                pass  # answered with its HTTP error (websockets logs it): nothing of ours failed
            finally:
                pinger.sockets.discard(ws)
                await ws.abort()
        finally:
            if admitted:
                guard.release(admitted, stream)
            await trio.aclose_forcefully(stream)

    async with trio.open_nursery() as lifespan_nursery:
        await lifespan_nursery.start(lifespan.handle_lifespan)
        await lifespan.wait_for_startup()
        listeners = await trio.open_tcp_listeners(port, host=host)
        binds = []
        for listener in listeners:
            address = listener.socket.getsockname()
            binds.append(f"http://{address[0]}:{address[1]}")
        async with trio.open_nursery() as connections:
            connections.start_soon(pinger.run, connections)
            async with trio.open_nursery() as accepting:
                for listener in listeners:
                    accepting.start_soon(_accept, listener, connections, handle)
                task_status.started(binds)
                await shutdown.wait()
                accepting.cancel_scope.cancel()
            for listener in listeners:
                await listener.aclose()
            await context.terminated.set()  # Hypercorn's idle connections close now
            # Every handler ends on its own (sessions drain); the pinger does not.
            try:
                while len(connections.child_tasks) > 1:
                    await trio.sleep(0.01)
            finally:  # (cancelled by the caller past its graceful wait: Hypercorn's sends
                for replay in list(answering):  # are shielded, so their sockets are cut)
                    replay.cut()
            connections.cancel_scope.cancel()
        await lifespan.wait_for_shutdown()
        lifespan_nursery.cancel_scope.cancel()


def hypercorn_config(graceful_timeout: float, keep_alive_timeout: float = 5.0
                     ) -> HypercornConfig:
    """Hypercorn's settings for the HTTP side: no access log; its errors go to our log
    (`hypercorn.error`: the error log keeps its warnings)."""
    hc = HypercornConfig()
    hc.graceful_timeout = graceful_timeout
    hc.keep_alive_timeout = keep_alive_timeout  # an idle keep-alive connection is closed
    hc.accesslog = None
    hc.errorlog = logging.getLogger("hypercorn.error")
    return hc
