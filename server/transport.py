"""One websocket on a socket of its own: `WebSocket` (its keepalive: server/keepalive.py).

A `/ws` upgrade (server/front.py routes it here) becomes a `WebSocket`: whole data frames
are parsed here (`_frames`, which also skips pongs, all but the last of a read's pings, and
the bytes of a message longer than `max_frame`), every other frame by websockets'
`ServerProtocol`, which also makes the control frames (C-accelerated unmasking for both;
server/wsprotocol.py); `text_frame` makes the text frames (once for a push many
connections send), and this module moves the bytes itself, with `os.read` and `os.write`
on the socket (no coroutine frames of trio's streams on an idle connection; its reads,
writes and framing are timed: `io_seconds`, charged to its client).

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
from websockets.frames import CloseCode, Frame, Opcode
from websockets.http11 import Request
from websockets.protocol import CLOSED, CONNECTING, OPEN
from websockets.server import ServerProtocol
from websockets.speedups import apply_mask

from actors.runtime.waiter import Turn
from server.ratelimit import TokenBucket
from server.wsprotocol import OpenProtocol, SkippedFrame, let_go, text_frame

log = logging.getLogger("petridish.transport")

RECEIVE = 65536  # bytes a read asks for
# Fragments of one message: an empty one adds nothing to its size (`max_size`), so only
# this bounds what a message that never ends holds and costs.
MAX_FRAGMENTS = 1024
_WHOLE = {0x81: Opcode.TEXT, 0x82: Opcode.BINARY}  # first bytes of whole data frames
_DATA = {Opcode.CONT.value, Opcode.TEXT.value, Opcode.BINARY.value}
_PING, _PONG = 0x89, 0x8A  # first bytes of ping and pong frames
_DISCONNECT = {"type": "websocket.disconnect"}


class HandshakeFailed(Exception):
    """The client's upgrade request was refused (the HTTP error response was sent)."""


@attrs.frozen
class Skipped:
    """A message longer than `max_frame` (within `max_size`), handed out in place of its
    data, which was counted as it came and not kept (`WebSocket._frames`)."""

    text: bool  # or binary


# ---- one websocket ---------------------------------------------------------------------------

class WebSocket:
    """A websocket over `stream` whose request head was `head` (see the module doc), from
    the client at address `peer`: a message longer than `max_size` fails it (1009), one
    longer than `max_frame` (None: `max_size`) is `Skipped`; `violated` is told the code of
    each close for a violation (`OpenProtocol`)."""

    def __init__(self, stream: trio.SocketStream, head: bytes, max_size: int,
                 peer: str = "", *, max_frame: int | None = None,
                 violated: Callable[[int], None] | None = None) -> None:
        self._stream = stream
        self._max_size = max_size
        self._max_frame = max_size if max_frame is None else max_frame
        self._violated = violated
        end = head.find(b"\r\n\r\n") + 4
        self._protocol = ServerProtocol(max_size=max_size)  # the handshake's (see accept)
        self._protocol.receive_data(head[:end])
        events = self._protocol.events_received()
        self.request: Request | None = events[0] if events and isinstance(
            events[0], Request) else None
        self._early = head[end:]  # what the client sent past its head, before our answer
        self._events: list[Any] = []  # frames not yet read, the next one last
        self._partial = bytearray()  # the start of a frame not yet whole (see `_frames`)
        # While a frame is begun (0: none is): how long `_partial` must grow before it is
        # parsed again, or, with `_partial` empty, the bytes of its payload left to skip.
        self._need = 0
        self._in_message = False  # a fragmented message is being received
        self._size = 0  # ... its bytes so far
        self._room = self._max_frame  # bytes the next data frame may have and be kept (-1:
        # its message is skipped)
        self._skipping: SkippedFrame | None = None  # handed on once its payload is skipped
        self._drained = False  # the last read took all the socket had (the next would fail)
        self._send_lock = Turn()
        self._rest: memoryview | None = None  # what `send_at_once` could not write yet
        self._held: list[bytes] = []  # the protocol's frames `flush_soon` left for `flush`
        self._fragments: list[bytes] | None = None
        self._fragment_opcode: Opcode | None = None
        self.last_received = trio.current_time()  # any bytes: alive (the `Pinger`'s)
        self.ping_sent: float | None = None  # when an unanswered ping went out
        # When the frame or fragmented message being received began (None: none is); the
        # `Pinger` (server/keepalive.py) drops a connection that does not finish it in time.
        self.message_began: float | None = None
        # What the client's frames that complete no message spend (pings, pongs, and
        # fragments but a message's last; None: unbounded); past it the connection is
        # closed with 1008 (its session's, server/session.py).
        self.overhead: TokenBucket | None = None
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
        if self._events:  # one read held several: one message per turn of the run queue
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

    def _frames(self, data: bytes, now: float) -> list[Any]:
        """The frames `data` (read at `now`) completes, after what the last reads left.

        A whole, unfragmented text or binary frame of a client (masked, no reserved bit)
        within the size limit is parsed here; any other frame goes to websockets' parser
        (control frames, fragments, violations: it answers pings, closes on violations),
        whole. So websockets' parser holds no part of a frame while the connection is open
        (a partial frame waits here, `max_frame` bytes at most), and it sees every frame.

        A data frame longer than its message may still take (`_room`) is not kept, nor is
        the rest of its message (`_skip`): its payload is counted down as it arrives
        (`_need`), and it is handed on at the payload's end. A skipped text is not checked
        to be UTF-8: the server refuses what it never reads. Past `max_size` the connection
        fails with 1009, and on a control frame longer than 125 bytes and than `_room` with
        1002, both before the frame's payload is read (a shorter one that is still too long
        is read whole, then refused 1002 by websockets).

        A client's pongs are skipped here, and of its pings websockets sees only the last
        before each frame it parses (RFC 6455 5.5.3): a flood of pings costs a header each,
        not a parse and a pong each. They and the fragments but a message's last spend the
        `overhead` bucket, checked once per read; past it the connection fails with 1008.

        A frame, or a fragmented message, unfinished after this read has begun at
        `message_began`: the `Pinger` drops a connection that holds one too long (its bytes
        keep it alive, but a frame trickled a byte at a time, or fragments that never end,
        would hold what the server buffers for good).
        """
        if self._need:  # a frame begun
            if not self._partial:  # its payload skipped, and then it is done with
                if len(data) < self._need:
                    self._need -= len(data)
                    return []
                data, self._need = data[self._need:], 0
                return [self._skipping, *self._frames(data, now)]
            else:  # appended to until whole (no copy per read)
                self._partial += data
                if len(self._partial) < self._need:
                    return []
                buf, self._partial, self._need = bytes(self._partial), bytearray(), 0
        else:
            buf = data
        frames: list[Any] = []
        protocol = self._protocol
        at, end = 0, len(buf)
        need = 0  # bytes from `at` the frame there needs before it can be parsed
        ping = b""  # the last ping websockets has not seen yet
        overhead = 0  # frames here that complete no message
        while at < end and protocol.state is OPEN:
            if end - at < 2:
                need = 2
                break
            b0, b1 = buf[at], buf[at + 1]
            size, head = b1 & 0x7F, 2
            if size == 126:
                if end - at < 4:
                    need = 4
                    break
                size, head = int.from_bytes(buf[at + 2:at + 4]), 4
            elif size == 127:
                if end - at < 10:
                    need = 10
                    break
                size, head = int.from_bytes(buf[at + 2:at + 10]), 10
            if b1 & 0x80:
                head += 4  # the mask
            if size > self._room:  # not kept, or a control frame within a skipped message
                if b0 & 0x0F not in _DATA:
                    if size > 125:  # (websockets would read it whole first)
                        protocol.fail(CloseCode.PROTOCOL_ERROR, "control frame too long")
                        return frames
                elif size > self._max_size - self._size:
                    protocol.fail(CloseCode.MESSAGE_TOO_BIG, f"more than {self._max_size} bytes")
                    return frames
                elif end - at < head:
                    need = head  # its mask is still to come
                    break
                else:
                    overhead += self._follow(b0, size, kept=False)
                    frames += self._skip(ping, b0, b1)
                    ping, at = b"", at + head + size
                    if at > end and protocol.state is OPEN:  # its payload goes on
                        self._need, self._skipping, at = at - end, frames.pop(), end
                    continue
            stop = at + head + size
            if stop > end:
                need = stop - at
                break
            opcode = _WHOLE.get(b0)
            if opcode is not None and b1 & 0x80 and not self._in_message:
                frames.append(Frame(opcode, apply_mask(buf[at + head:stop],
                                                       buf[at + head - 4:at + head])))
            elif head == 6 and b0 in (_PING, _PONG):  # masked, at most 125 bytes
                overhead += 1
                if b0 == _PING:
                    ping = buf[at:stop]
            else:
                if b0 & 0x0F in _DATA:  # a fragment: websockets follows the message
                    overhead += self._follow(b0, size, kept=True)
                protocol.receive_data(ping + buf[at:stop])
                ping = b""
                frames += protocol.events_received()
            at = stop
        if overhead and self.overhead is not None and not self.overhead.take(now, overhead):
            protocol.fail(CloseCode.POLICY_VIOLATION, f"more than {self.overhead.rate:g} "
                          "pings, pongs and fragments per second")
            return []  # (its parser discards what follows)
        if ping:
            protocol.receive_data(ping)
            frames += protocol.events_received()
        if at < end:
            if protocol.state is OPEN:
                self._partial, self._need = bytearray(buf[at:]), need
            else:  # closing: what follows is websockets' to discard
                protocol.receive_data(buf[at:])
                frames += protocol.events_received()
        if not (self._need or self._in_message):
            self.message_began = None
        elif self.message_began is None:
            self.message_began = now
        return frames

    def _follow(self, b0: int, size: int, kept: bool) -> bool:
        """Follow the message of a data frame of `size` bytes beginning `b0` that is parsed
        by websockets, or (not `kept`) skipped: True when it is not the message's last."""
        self._in_message = not b0 & 0x80
        if self._in_message:
            self._size += size
            self._room = self._max_frame - self._size if kept else -1
        else:
            self._size, self._room = 0, self._max_frame
        return self._in_message

    def _skip(self, ping: bytes, b0: int, b1: int) -> list[Any]:
        """The events of `ping` and of a data frame not kept whose header begins `b0`,
        `b1`: websockets checks it (opcode, mask, reserved bits, its place in a message) as
        an empty frame's, and a `SkippedFrame` stands for that frame, last (`_message`
        then drops what its message held)."""
        protocol = self._protocol
        protocol.receive_data(ping + bytes((b0, b1 & 0x80)) + bytes(4))
        events = protocol.events_received()
        if protocol.state is OPEN:
            frame = events.pop()
            events.append(SkippedFrame(frame.opcode, frame.fin))
        return events

    @property
    def held(self) -> int:
        """Bytes held of a frame or message not yet whole (about `max_frame` at most)."""
        return len(self._partial) + sum(map(len, self._fragments or ()))

    @property
    def has_message(self) -> bool:
        """True while frames already read wait to be handed out (a complete message may be
        among them)."""
        return bool(self._events)

    def next_message(self) -> str | bytes | Skipped | None:
        """The next complete message already read (text, bytes, or `Skipped`), or None."""
        while self._events:
            message = self._message(self._events.pop())
            if message is not None:
                return message
        return None

    def _message(self, frame: Any) -> str | bytes | Skipped | None:
        """The message a frame completes (None for control frames and fragments)."""
        opcode = frame.opcode
        if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
            if not frame.fin:
                self._fragments, self._fragment_opcode = [frame.data], opcode
                return None
            return self._complete(opcode, frame.data)
        if opcode is Opcode.CONT and self._fragments is not None:
            if len(self._fragments) >= MAX_FRAGMENTS:
                self._fragments = None
                self._protocol.fail(CloseCode.MESSAGE_TOO_BIG,
                                    f"more than {MAX_FRAGMENTS} fragments")
                self._events.clear()
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
            if frame.kind is not Opcode.CONT:
                self._fragment_opcode = frame.kind
            self._fragments = None
            return Skipped(self._fragment_opcode is Opcode.TEXT) if frame.fin else None
        return None  # ping (answered) or pong

    def _complete(self, opcode: Opcode, data: bytes) -> str | bytes | None:
        if opcode is Opcode.BINARY:
            return data
        try:
            return data.decode()
        except UnicodeDecodeError as exc:
            self._protocol.fail(CloseCode.INVALID_DATA, f"{exc.reason} at position {exc.start}")
            self._events.clear()
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
        """Drop the connection without a closing handshake (the end of every connection:
        its protocol and a refused upgrade's request are let go, see `let_go`)."""
        self.request = None
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
