"""One websocket on a socket of its own: `WebSocket` (its keepalive: server/keepalive.py).

A `/ws` upgrade (server/front.py routes it here) becomes a `WebSocket`: whole data frames
are parsed by its `FrameParser` (server/wsframes.py, which also skips pongs, all but the
last of a read's pings, and the bytes of a message longer than `max_frame`), every other
frame by websockets' `ServerProtocol`, which also makes the control frames (C-accelerated
unmasking for both; server/wsprotocol.py); `text_frame` makes the text frames (once for a
push many connections send), and this module moves the bytes itself, with `os.read` and
`os.write` on the socket (no coroutine frames of trio's streams on an idle connection; its
reads, writes and framing are timed: `io_seconds`, charged to its client).

Two ways to read: `receive` waits for the socket through trio (a read that emptied the
socket is followed by a wait, not by a read that fails), for a connection's own task
(its hello, the end of its closing handshake); `read_some` and `next_message` never wait,
for the server's reactor (server/reactor.py), which reads a greeted connection when epoll
says its socket is readable, with `flush_soon` for the pongs its reads call for. A
connection costs its session's task and its writer task, and nothing more (keepalive
pings come from one server-wide `Pinger`).

`WebSocket` speaks the calls a `Session` uses, in Starlette's shape: `accept`, `receive`
(a dict: `websocket.receive` with `text`, `bytes` or `skipped`, or `websocket.disconnect`),
`send_text`, `close`; and `send_at_once` (a non-blocking write of one message, for an
outbox with nothing waiting) with `flush` (the rest it owes). Close codes follow RFC 6455
(1002 protocol violation, 1007 text that is not UTF-8, 1008 too many frames that complete
no message, 1009 message too big).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from time import perf_counter
from typing import Any

import attrs
import trio
from websockets.frames import CloseCode, Opcode
from websockets.http11 import Request
from websockets.protocol import CLOSED, CONNECTING, OPEN
from websockets.server import ServerProtocol

from actors.runtime.waiter import Turn
from server.wsframes import FrameParser
from server.wsprotocol import OpenProtocol, let_go, text_frame

log = logging.getLogger("petridish.transport")

RECEIVE = 65536  # bytes a read asks for
# Fragments of one message, held or skipped: an empty one adds nothing to its size
# (`max_size`), so only this bounds what a message that never ends holds and costs.
MAX_FRAGMENTS = 1024
_DISCONNECT = {"type": "websocket.disconnect"}


class HandshakeFailed(Exception):
    """The client's upgrade request was refused (the HTTP error response was sent)."""


@attrs.frozen
class Skipped:
    """A message longer than `max_frame` (within `max_size`), handed out in place of its
    data, which was counted as it came and not kept (`FrameParser._frames`)."""

    text: bool  # or binary
    fragmented: bool  # or one frame


# ---- one websocket ---------------------------------------------------------------------------

class WebSocket(FrameParser):
    """A websocket over `stream` whose request head was `head` (see the module doc), from
    the client at address `peer`: a message longer than `max_size` fails it (1009), one
    longer than `max_frame` (None: `max_size`) is `Skipped`; `violated` is told the code of
    each close for a violation (`OpenProtocol`)."""

    # A pong a pass of `next_message` made waits for `flush` (the socket or its lock was
    # busy); its reader has the writer flush and sets it back.
    flush_owed = False

    def __init__(self, stream: trio.SocketStream, head: bytes, max_size: int,
                 peer: str = "", *, max_frame: int | None = None,
                 violated: Callable[[int], None] | None = None) -> None:
        super().__init__(max_size, max_size if max_frame is None else max_frame)
        self._stream = stream
        self._violated = violated
        end = head.find(b"\r\n\r\n") + 4
        self._protocol = ServerProtocol(max_size=max_size)  # the handshake's (see accept)
        self._protocol.receive_data(head[:end])
        events = self._protocol.events_received()
        self.request: Request | None = events[0] if events and isinstance(
            events[0], Request) else None
        self._early = head[end:]  # what the client sent past its head, before our answer
        self._events: list[Any] = []  # frames not yet read, the next one last
        self._drained = False  # the last read took all the socket had (the next would fail)
        self._send_lock = Turn()
        self._rest: memoryview | None = None  # what `send_at_once` could not write yet
        self._held: list[bytes] = []  # the protocol's frames `flush_soon` left for `flush`
        self._fragments: list[bytes] | None = None  # a fragmented message's, held
        self._fragment_opcode: Opcode | None = None
        self._fragment_count = 0  # ... its fragments so far, held or skipped
        self.last_received = trio.current_time()  # any bytes: alive (the `Pinger`'s)
        self.ping_sent: float | None = None  # when an unanswered ping went out
        self.io_seconds = 0.0  # spent reading, writing and framing (take_io_seconds)
        self.peer = peer
        self.on_abort: Callable[[], None] | None = None  # told before the socket closes

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
        let_go(self._protocol)
        self._protocol = OpenProtocol(self._max_size, self._violated)
        if self._early:
            self._events = self._frames(self._early, trio.current_time())[::-1]
            self._early = b""
            await self._flush()

    async def receive(self) -> dict[str, Any]:
        """The next message (`websocket.receive` with `text`, `bytes`, or `skipped`: a
        `Skipped`), or `websocket.disconnect` once the connection closed (cleanly or not)."""
        if self.has_message:  # one read held several: one message per turn of the run queue
            await trio.lowlevel.checkpoint()
        waited = False  # this call yielded to wait for the socket
        while True:
            message = self.next_message()
            if message is not None:
                if isinstance(message, str):
                    return {"type": "websocket.receive", "text": message}
                if isinstance(message, bytes):
                    return {"type": "websocket.receive", "bytes": message}
                return {"type": "websocket.receive", "skipped": message}
            if self.flush_owed:  # (not with a message in hand: a cancel would lose it)
                self.flush_owed = False
                await self._flush()
            if self._protocol.state is not OPEN:
                await self._flush()  # the close of a text that was not UTF-8 goes out now
            if self._protocol.state is CLOSED:
                await self._abort()
                return _DISCONNECT
            await trio.lowlevel.checkpoint_if_cancelled()
            fd = self._fd()
            # After a read that emptied the socket, the next would fail: wait first.
            if fd >= 0 and (self._drained or not self.read_some()):
                self._drained = False
                waited = True
                try:
                    await trio.lowlevel.wait_readable(fd)
                except (trio.ClosedResourceError, trio.BrokenResourceError):
                    pass  # closed by another task: the next read sees it
                continue
            if fd < 0:
                self.read_some()  # the end of the stream
            if not waited:  # a read that found bytes without a wait yields here
                await trio.lowlevel.cancel_shielded_checkpoint()  # bytes read are never lost
            await self._flush()  # pongs, close replies, and the close of a violation

    def read_some(self) -> bool:
        """One read of the socket into the parser, without waiting: False when the socket
        had nothing (EAGAIN); True when it gave bytes or its end (`next_message` then hands
        out what they complete). The socket is read here, not through trio's stream layers
        (three coroutine frames on every idle connection's stack, and a send-conflict check
        and error translation per read); see `_fd` for why that is safe."""
        fd = self._fd()
        started = perf_counter()
        data = b""
        if fd >= 0:
            try:
                data = os.read(fd, RECEIVE)
            except BlockingIOError:
                self.io_seconds += perf_counter() - started
                return False
            except OSError:  # reset, or closed under us: the end of the stream
                pass
        if data:
            self._drained = len(data) < RECEIVE
            self.last_received, self.ping_sent = trio.current_time(), None
            self._events = self._frames(data, self.last_received)[::-1]
        else:
            self._protocol.receive_eof()
            self._events = self._protocol.events_received()[::-1]
        self.io_seconds += perf_counter() - started
        return True

    @property
    def has_message(self) -> bool:
        """True while frames already read wait to be handed out (a complete message may be
        among them), parsed or not."""
        return bool(self._events) or self._unparsed is not None

    def next_message(self) -> str | bytes | Skipped | None:
        """The next complete message already read (text, bytes, or `Skipped`), or None.
        The frames of a read are parsed a pass at a time, as they are handed out."""
        while True:
            while self._events:
                message = self._message(self._events.pop())
                if message is not None:
                    return message
            if self._unparsed is None:
                return None
            started = perf_counter()  # (its client's time, as the read's)
            self._events = self._frames(b"", self.last_received)[::-1]
            self.io_seconds += perf_counter() - started
            if not self.flush_soon():  # a pong of this pass that must wait for `flush`
                self.flush_owed = True

    def _message(self, frame: Any) -> str | bytes | Skipped | None:
        """The message a frame completes (None for control frames and fragments)."""
        opcode = frame.opcode
        if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
            if not frame.fin:
                self._fragments, self._fragment_opcode = [frame.data], opcode
                self._fragment_count = 1
                return None
            return self._complete(opcode, frame.data)
        if opcode is Opcode.CONT and self._fragments is not None:
            if self._too_many_fragments():
                return None
            self._fragments.append(frame.data)
            if not frame.fin:
                return None
            data, self._fragments = b"".join(self._fragments), None
            assert self._fragment_opcode is not None
            return self._complete(self._fragment_opcode, data)
        if opcode is Opcode.CLOSE:
            return None  # the protocol answered it; the next read sees the end
        if opcode is None:  # a `SkippedFrame`: what its message held goes, as will the rest
            self._fragments = None
            if frame.kind is not Opcode.CONT:
                self._fragment_opcode, self._fragment_count = frame.kind, 1
            elif self._too_many_fragments():
                return None
            if not frame.fin:
                return None
            return Skipped(self._fragment_opcode is Opcode.TEXT, frame.kind is Opcode.CONT)
        return None  # ping (answered) or pong

    def _too_many_fragments(self) -> bool:
        """Count one more fragment of the message being received, held or skipped: True
        when it is past MAX_FRAGMENTS (the connection is failed, 1009)."""
        if self._fragment_count < MAX_FRAGMENTS:
            self._fragment_count += 1
            return False
        self._fragments = None
        self._protocol.fail(CloseCode.MESSAGE_TOO_BIG, f"more than {MAX_FRAGMENTS} fragments")
        self._drop_read()
        return True

    def _drop_read(self) -> None:
        """What was read and is not handed out yet goes, parsed or not (a failure, the
        server's close, an abort)."""
        self._events.clear()
        self._unparsed = None

    def _complete(self, opcode: Opcode, data: bytes) -> str | bytes | None:
        if opcode is Opcode.BINARY:
            return data
        try:
            return data.decode()
        except UnicodeDecodeError as exc:
            self._protocol.fail(CloseCode.INVALID_DATA, f"{exc.reason} at position {exc.start}")
            self._drop_read()
            return None

    async def send_text(self, text: str) -> None:
        """Send one text message (UnicodeEncodeError, before anything is sent, for text
        that is not valid Unicode; ConnectionError once the connection is closing)."""
        started = perf_counter()
        data = text_frame(text)
        self.io_seconds += perf_counter() - started
        if self._protocol.state is not OPEN:
            raise ConnectionError("the websocket is closing")
        await self._flush(data)

    def send_at_once(self, text: str) -> bool:
        """Write one text message now if the socket takes it without waiting: True when
        it took the message, or a part of it with the rest owed (`owes`: the next send or
        `flush` writes it first); False when nothing was written (a send in progress, a
        full socket, a closing connection). UnicodeEncodeError as `send_text`."""
        if (self._send_lock.held or self._rest is not None or self._held
                or self._protocol.state is not OPEN):
            return False
        started = perf_counter()
        data = text_frame(text)
        self.io_seconds += perf_counter() - started
        try:
            written = self._write_some(data)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            return False  # the writer's send finds out
        if written < len(data):
            if not written:
                return False  # full: the frame waits for room
            self._rest = memoryview(data)[written:]
        return True

    @property
    def owes(self) -> bool:
        """True while part of a message `send_at_once` began (or frames `flush_soon` left)
        waits to be written."""
        return self._rest is not None or bool(self._held)

    async def flush(self) -> None:
        """Write what is owed (the rest of a message `send_at_once` began)."""
        await self._flush()

    async def refuse(self, status: int, text: str) -> None:
        """Answer the upgrade with HTTP `status` and `text` instead of 101, and drop the
        connection (an origin the server does not trust)."""
        self._protocol.send_response(self._protocol.reject(status, text))
        await self._flush()
        await self._abort()

    async def close(self, code: int = 1000) -> None:
        """Start the closing handshake with `code` (nothing when it already started). What
        the client sent before it that is not handed out yet is dropped (unparsed, past
        the pass being handed out)."""
        if self._protocol.state is OPEN:
            self._protocol.send_close(code)
            self._drop_read()
            await self._flush()

    async def ping(self, now: float) -> None:
        """Send a keepalive ping (the pinger's call)."""
        if self._protocol.state is not OPEN:
            return
        self.ping_sent = now
        self._protocol.send_ping(b"")
        await self._flush()

    async def abort(self) -> None:
        """Drop the connection without a closing handshake (the end of every connection:
        its protocol and a refused upgrade's request are let go, see `let_go`)."""
        self.request = None
        self._drop_read()
        let_go(self._protocol)
        await self._abort()

    def flush_soon(self) -> bool:
        """Write the protocol's own frames (pongs) now if the socket is free and takes them
        without waiting: True when nothing is left, False when `flush` must write the rest
        (a send in progress, a full socket)."""
        chunks = self._held + self._protocol.data_to_send()
        self._held = []
        if not chunks:
            return True
        if self._send_lock.held or self._rest is not None or b"" in chunks:
            self._held = chunks  # after the send in progress (and the end of the stream)
            return False
        for k, chunk in enumerate(chunks):
            try:
                written = self._write_some(chunk)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._protocol.receive_eof()
                return True
            if written < len(chunk):
                self._rest = memoryview(chunk)[written:]
                self._held = chunks[k + 1:]
                return False
        return True

    async def _flush(self, data: bytes = b"") -> None:
        """Write the rest owed, the protocol's own frames (handshake, pongs, close), then
        `data`: one checkpoint for all."""
        chunks = self._protocol.data_to_send()
        if self._held:
            chunks, self._held = self._held + chunks, []
        if not chunks and not data and self._rest is None:
            return
        # The lock orders the writer's sends with the reader's pongs and a ping: taken
        # without a yield when free (`async with` yields even then, and with hundreds of
        # writers woken by one push each yield is a round of the run queue before the send).
        try:
            self._send_lock.acquire_nowait()
        except trio.WouldBlock:
            await self._send_lock.acquire()
        try:
            if self._rest is not None:  # a message begun: nothing may come between its parts
                rest, self._rest = self._rest, None
                await self._write(rest)
            for chunk in chunks:
                if chunk:
                    await self._write(chunk)
                else:  # the protocol's end of stream: the server closes TCP first
                    await self._abort()
            if data:
                await self._write(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._protocol.receive_eof()
        finally:
            self._send_lock.release()
        await trio.lowlevel.cancel_shielded_checkpoint()  # what was written is sent
        if self._protocol.close_expected() and self._protocol.state is not OPEN:
            await self._abort()

    async def _write(self, data: bytes | memoryview) -> None:
        """Write all of `data` to the socket (the send lock held), timing the system calls
        into `io_seconds`; ClosedResourceError or BrokenResourceError when it cannot."""
        view = memoryview(data)
        while view := view[self._write_some(view):]:
            await trio.lowlevel.wait_writable(self._fd())

    def _write_some(self, data: bytes | memoryview) -> int:
        """One non-blocking write: the bytes the socket took (0 when it is full), timed
        into `io_seconds`; ClosedResourceError or BrokenResourceError when it cannot."""
        fd = self._fd()
        if fd < 0:
            raise trio.ClosedResourceError("the websocket's socket is closed")
        started = perf_counter()
        try:
            return os.write(fd, data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise trio.BrokenResourceError(str(exc)) from exc
        finally:
            self.io_seconds += perf_counter() - started

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

    def fileno(self) -> int:
        """The socket's file descriptor (-1 once it is closed)."""
        return self._fd()

    async def _abort(self) -> None:
        if self.on_abort is not None:
            told, self.on_abort = self.on_abort, None
            told()
        await trio.aclose_forcefully(self._stream)
