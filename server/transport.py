"""One port, two servers: `/ws` framed by websockets' sans-I/O protocol, HTTP by Hypercorn.

Every connection's request head is read first (bounded in size and time). A websocket
upgrade of `/ws` becomes a `WebSocket` here: websockets' `ServerProtocol` parses and
frames (C-accelerated masking), and this module moves the bytes itself, with `os.read`
and `os.write` on the socket and trio's `wait_readable`/`wait_writable` (so an idle
connection's reader is three coroutine frames shallower than through trio's streams, and
its reads, writes and framing are timed: `io_seconds`, charged to its client). A
connection costs its session's reader and writer tasks and nothing more (keepalive pings
come from one server-wide `Pinger`). Anything else goes to Hypercorn's own
per-connection server over a stream that replays the head, and from there to the
Starlette app (static files, `/mcp`, `/healthz`, `/metrics`).

Why: Hypercorn's pure-Python websocket framing (h11, wsproto, its ASGI plumbing and
Starlette's) was 42% of the server's CPU per request and a third of an idle
connection's memory (docs/performance.md).

`WebSocket` speaks the four calls a `Session` uses, in Starlette's shape: `accept`,
`receive` (a dict: `websocket.receive` with `text` or `bytes`, or `websocket.disconnect`),
`send_text`, `close`. Close codes follow RFC 6455 (1002 protocol violation, 1007 text
that is not UTF-8, 1009 message too big).
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import Any

import trio
from hypercorn.app_wrappers import ASGIWrapper
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio.lifespan import Lifespan
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import ConnectionState
from websockets.exceptions import InvalidState
from websockets.frames import CloseCode, Opcode
from websockets.http11 import Request
from websockets.protocol import CLOSED, CONNECTING, OPEN
from websockets.server import ServerProtocol

from actors.runtime.waiter import Turn
from server.tcp_guard import TcpGuard, refuse

log = logging.getLogger("petridish.transport")

MAX_HEAD = 16384  # bytes of a request head (request line and headers)
RECEIVE = 65536
_DISCONNECT = {"type": "websocket.disconnect"}


class HandshakeFailed(Exception):
    """The client's upgrade request was refused (the HTTP error response was sent)."""


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


class ReplayStream(trio.abc.HalfCloseableStream):
    """`inner` with `head` received again first (for Hypercorn, which reads it itself)."""

    def __init__(self, inner: trio.SocketStream, head: bytes) -> None:
        self._inner = inner
        self._head = head

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
        """As the inner stream."""
        await self._inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        """As the inner stream."""
        await self._inner.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        """As the inner stream."""
        await self._inner.send_eof()

    async def aclose(self) -> None:
        """As the inner stream."""
        await self._inner.aclose()


# ---- one websocket ---------------------------------------------------------------------------

class WebSocket:
    """A websocket over `stream` whose request head was `head` (see the module doc), from
    the client at address `peer`."""

    def __init__(self, stream: trio.SocketStream, head: bytes, max_size: int,
                 peer: str = "") -> None:
        self._stream = stream
        self._max_size = max_size
        end = head.find(b"\r\n\r\n") + 4
        self._protocol = ServerProtocol(max_size=max_size)  # the handshake's (see accept)
        self._protocol.receive_data(head[:end])
        events = self._protocol.events_received()
        self.request: Request | None = events[0] if events and isinstance(
            events[0], Request) else None
        self._early = head[end:]  # what the client sent past its head, before our answer
        self._events: list[Any] = []  # frames not yet read, the next one last
        self._send_lock = Turn()
        self._fragments: list[bytes] | None = None
        self._fragment_opcode: Opcode | None = None
        self.last_received = trio.current_time()
        self.ping_sent: float | None = None  # when an unanswered ping went out
        self.io_seconds = 0.0  # spent reading, writing and framing (take_io_seconds)
        self.peer = peer

    @property
    def headers(self) -> Any:
        """The upgrade request's headers (empty when it could not be parsed); read them
        before `accept`, which lets them go (an idle connection need not hold them)."""
        if self._protocol.state is not CONNECTING:
            raise RuntimeError("the upgrade request's headers are gone once accepted")
        return self.request.headers if self.request is not None else {}

    @property
    def open(self) -> bool:
        """True until the closing handshake starts or the connection is lost."""
        return self._protocol.state is OPEN

    async def accept(self) -> None:
        """Answer the upgrade (101), or send the refusal and raise HandshakeFailed."""
        if self.request is None:
            await self._abort()
            raise HandshakeFailed("no valid HTTP request")
        response = self._protocol.accept(self.request)
        self._protocol.send_response(response)
        await self._flush()
        if self._protocol.state is not OPEN:
            await self._abort()
            raise HandshakeFailed(f"upgrade refused with {response.status_code}")
        # The handshake's parser keeps the request in its frame for the connection's life;
        # frames go to a protocol made open instead, so an idle connection holds neither.
        self.request = None
        self._protocol = ServerProtocol(state=OPEN, max_size=self._max_size)
        if self._early:
            self._protocol.receive_data(self._early)
            self._early = b""
            self._events = self._protocol.events_received()[::-1]
            await self._flush()

    async def receive(self) -> dict[str, Any]:
        """The next message (`websocket.receive` with `text` or `bytes`), or
        `websocket.disconnect` once the connection closed (cleanly or not)."""
        if self._events:  # one read held several: one message per turn of the run queue
            await trio.lowlevel.checkpoint()
        while True:
            while self._events:
                message = self._message(self._events.pop())
                if message is not None:
                    return message
            if self._protocol.state is not OPEN:
                await self._flush()  # the close of a text that was not UTF-8 goes out now
            if self._protocol.state is CLOSED:
                await self._abort()
                return _DISCONNECT
            # The socket is read here, not through trio's stream layers (three coroutine
            # frames on every idle connection's stack, and a send-conflict check and error
            # translation per read); see `_fd` for why that is safe.
            await trio.lowlevel.checkpoint_if_cancelled()
            fd = self._fd()
            started = perf_counter()
            try:
                data: bytes | None = os.read(fd, RECEIVE) if fd >= 0 else b""
            except BlockingIOError:
                data = None  # waited for below: inside `except` the wait would hold the error
            except OSError:  # reset, or closed under us: the end of the stream
                data = b""
            if data is None:
                self.io_seconds += perf_counter() - started
                try:
                    await trio.lowlevel.wait_readable(fd)
                except (trio.ClosedResourceError, trio.BrokenResourceError):
                    pass  # closed by another task: the next read sees it
                continue
            if data:
                self.last_received = trio.current_time()
                self.ping_sent = None
                self._protocol.receive_data(data)
            else:
                self._protocol.receive_eof()
            self._events = self._protocol.events_received()[::-1]
            self.io_seconds += perf_counter() - started
            await trio.lowlevel.cancel_shielded_checkpoint()  # bytes read are never lost
            await self._flush()  # pongs, close replies, and the close of a violation

    def _message(self, frame: Any) -> dict[str, Any] | None:
        """The message a frame completes (None for control frames and fragments)."""
        opcode = frame.opcode
        if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
            if not frame.fin:
                self._fragments, self._fragment_opcode = [frame.data], opcode
                return None
            return self._complete(opcode, frame.data)
        if opcode is Opcode.CONT and self._fragments is not None:
            self._fragments.append(frame.data)
            if not frame.fin:
                return None
            data, self._fragments = b"".join(self._fragments), None
            assert self._fragment_opcode is not None
            return self._complete(self._fragment_opcode, data)
        if opcode is Opcode.CLOSE:
            return None  # the protocol answered it; the next read sees the end
        return None  # ping (answered) or pong

    def _complete(self, opcode: Opcode, data: bytes) -> dict[str, Any] | None:
        if opcode is Opcode.BINARY:
            return {"type": "websocket.receive", "bytes": data}
        try:
            return {"type": "websocket.receive", "text": data.decode()}
        except UnicodeDecodeError as exc:
            self._protocol.fail(CloseCode.INVALID_DATA, f"{exc.reason} at position {exc.start}")
            self._events.clear()
            return None

    async def send_text(self, text: str) -> None:
        """Send one text message (UnicodeEncodeError, before anything is sent, for text
        that is not valid Unicode; ConnectionError once the connection is closing)."""
        started = perf_counter()
        data = text.encode()
        try:
            self._protocol.send_text(data)
        except InvalidState:
            raise ConnectionError("the websocket is closing") from None
        finally:
            self.io_seconds += perf_counter() - started
        await self._flush()

    async def refuse(self, status: int, text: str) -> None:
        """Answer the upgrade with HTTP `status` and `text` instead of 101, and drop the
        connection (an origin the server does not trust)."""
        self._protocol.send_response(self._protocol.reject(status, text))
        await self._flush()
        await self._abort()

    async def close(self, code: int = 1000) -> None:
        """Start the closing handshake with `code` (nothing when it already started)."""
        if self._protocol.state is OPEN:
            self._protocol.send_close(code)
            await self._flush()

    async def ping(self, now: float) -> None:
        """Send a keepalive ping (the pinger's call)."""
        if self._protocol.state is not OPEN:
            return
        self.ping_sent = now
        self._protocol.send_ping(b"")
        await self._flush()

    async def abort(self) -> None:
        """Drop the connection without a closing handshake."""
        await self._abort()

    async def _flush(self) -> None:
        chunks = self._protocol.data_to_send()
        if not chunks:
            return
        # The lock only orders the writer's sends with the reader's pongs: taken without
        # a yield when free (`async with` yields even then, and with hundreds of writers
        # woken by one push each yield is a round of the run queue before the send).
        try:
            self._send_lock.acquire_nowait()
        except trio.WouldBlock:
            await self._send_lock.acquire()
        try:
            for chunk in chunks:
                if chunk:
                    await self._write(chunk)
                else:  # the protocol's end of stream: the server closes TCP first
                    await self._abort()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._protocol.receive_eof()
        finally:
            self._send_lock.release()
        if self._protocol.close_expected() and self._protocol.state is not OPEN:
            await self._abort()

    async def _write(self, data: bytes) -> None:
        """Write all of `data` to the socket (the send lock held), timing the system calls
        into `io_seconds`; ClosedResourceError or BrokenResourceError when it cannot."""
        view = memoryview(data)
        while view:
            fd = self._fd()
            if fd < 0:
                raise trio.ClosedResourceError("the websocket's socket is closed")
            started = perf_counter()
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                pass
            except OSError as exc:
                raise trio.BrokenResourceError(str(exc)) from exc
            finally:
                self.io_seconds += perf_counter() - started
            if view:
                await trio.lowlevel.wait_writable(fd)
        await trio.lowlevel.cancel_shielded_checkpoint()  # what was written is sent

    def _fd(self) -> int:
        """The socket's file descriptor, or -1 once it is closed. Asked afresh before each
        system call (a closed descriptor's number is reused by the next connection), with
        no await between the two: trio closes sockets on this thread, so nothing can close
        it in between. trio's `notify_closing` wakes a task waiting on it."""
        return self._stream.socket.fileno()

    def take_io_seconds(self) -> float:
        """Seconds spent in this socket's reads, writes and framing since the last call
        (its session charges them to its client)."""
        spent, self.io_seconds = self.io_seconds, 0.0
        return spent

    async def _abort(self) -> None:
        await trio.aclose_forcefully(self._stream)


# ---- keepalive --------------------------------------------------------------------------------

class Pinger:
    """One task pinging every websocket quiet for `interval` seconds, and dropping those
    quiet for two intervals since a ping (a peer that is gone, or never reads); each drop
    is told to `dropped(peer, seconds)`."""

    def __init__(self, interval: float | None,
                 dropped: Callable[[str, float], None] | None = None) -> None:
        self.interval = interval
        self.sockets: set[WebSocket] = set()
        self.dropped = dropped

    async def run(self, nursery: trio.Nursery) -> None:
        """Ping until cancelled (returns at once when pings are off)."""
        if self.interval is None:
            return
        while True:
            await trio.sleep(self.interval / 2)
            now = trio.current_time()
            for ws in list(self.sockets):
                if ws.ping_sent is not None and now - ws.ping_sent > self.interval:
                    if self.dropped is not None:
                        self.dropped(ws.peer, now - ws.ping_sent)
                    else:
                        log.warning("websocket %s answered no ping for %g s; dropped",
                                    ws.peer, now - ws.ping_sent)
                    ws.ping_sent = None
                    nursery.start_soon(ws.abort)
                elif ws.ping_sent is None and now - ws.last_received >= self.interval:
                    nursery.start_soon(ws.ping, now)


# ---- the front door ----------------------------------------------------------------------------

ACCEPT_RETRY = 0.1  # seconds before accepting again when the process is out of descriptors
_OUT_OF_RESOURCES = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}
CONNECTION_TASK = "server.transport.connection"  # every connection task's name (one string)


async def _accept(listener: trio.SocketListener, connections: trio.Nursery,
                  handle: Callable[[trio.SocketStream], Awaitable[None]]) -> None:
    """Accept on `listener` until cancelled, each connection served by `handle` in a task
    of `connections` (trio's `serve_listeners` adds a coroutine frame per connection, and
    a name string per task)."""
    while True:
        try:
            stream = await listener.accept()
        except OSError as exc:
            if exc.errno not in _OUT_OF_RESOURCES:
                raise
            log.error("accept failed (%s); retrying in %g s", os.strerror(exc.errno),
                      ACCEPT_RETRY)
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
                      *, host: str, port: int, max_size: int, ping_interval: float | None,
                      head_timeout: float, shutdown: trio.Event,
                      guard: TcpGuard | None = None,
                      ping_dropped: Callable[[str, float], None] | None = None,
                      task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED
                      ) -> None:
    """Serve `ws_handler` on `ws_path` and `app` (ASGI, through Hypercorn) for the rest, on
    one port, until `shutdown` is set; reports the bound address like Hypercorn's `serve`.
    `guard` admits (or refuses) each connection before its head is read
    (server/tcp_guard.py).

    On shutdown the listeners close at once (new connections are refused), Hypercorn's idle
    keep-alive connections end, and this returns when every connection task has ended;
    the caller bounds that (it cancels the surrounding scope after its graceful timeout).
    """
    app = ASGIWrapper(app)
    lifespan_state: dict[str, Any] = {}
    lifespan = Lifespan(app, config, lifespan_state)
    context = WorkerContext(None)
    pinger = Pinger(ping_interval, ping_dropped)

    async def handle(stream: trio.SocketStream) -> None:
        """One connection, in its own task (one coroutine deep, for an idle websocket)."""
        admitted = ""  # the peer the guard admitted, released at the end
        try:
            try:
                peer = str(stream.socket.getpeername()[0])
            except OSError:  # gone already
                return
            if guard is not None:
                refusal = guard.admit(peer)
                if refusal is not None:
                    await refuse(stream, refusal)
                    return
                admitted = peer
            head = await _head_within(stream, head_timeout)
            if head is None:
                return
            if upgrade_target(head) != ws_path:
                await TCPServer(app, config, context, ConnectionState(lifespan_state.copy()),
                                ReplayStream(stream, head))
                return
            ws = WebSocket(stream, head, max_size, peer)
            del head  # an idle websocket need not hold its request
            pinger.sockets.add(ws)
            try:
                await ws_handler(ws)
            finally:
                pinger.sockets.discard(ws)
                await ws.abort()
        finally:
            if admitted:
                guard.release(admitted)
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
            while len(connections.child_tasks) > 1:
                await trio.sleep(0.01)
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
