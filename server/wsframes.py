"""The frames of the bytes a websocket reads: `FrameParser`, the part of `WebSocket`
(server/transport.py) that parses a client's whole data frames itself, skips what it need
not keep (pongs, all but the last of a read's pings, the bytes of a message longer than
`max_frame`), and hands every other frame to websockets' parser whole
(server/wsprotocol.py)."""

from __future__ import annotations

from typing import Any

from websockets.frames import CloseCode, Frame, Opcode
from websockets.protocol import OPEN
from websockets.server import ServerProtocol
from websockets.speedups import apply_mask

from server.ratelimit import TokenBucket
from server.wsprotocol import SkippedFrame

_WHOLE = {0x81: Opcode.TEXT, 0x82: Opcode.BINARY}  # first bytes of whole data frames
_DATA = {Opcode.CONT.value, Opcode.TEXT.value, Opcode.BINARY.value}
_PING, _PONG = 0x89, 0x8A  # first bytes of ping and pong frames
# Frames parsed in one pass over a read: a read of 64 KiB may hold ~11,000 empty frames,
# and the rest waits as bytes for the next pass (see `_frames`).
FRAMES_PER_PASS = 64


class FrameParser:
    """A mixin of `WebSocket`: the parser's state, and `_frames`, which its reads call. A
    message may be `max_size` bytes long; one longer than `max_frame` is skipped, not kept."""

    _protocol: ServerProtocol  # the websocket's: websockets' parser of every other frame

    def __init__(self, max_size: int, max_frame: int) -> None:
        self._max_size = max_size
        self._max_frame = max_frame
        self._partial = bytearray()  # the start of a frame not yet whole (see `_frames`)
        # While a frame is begun (0: none is): how long `_partial` must grow before it is
        # parsed again, or, with `_partial` empty, the bytes of its payload left to skip.
        self._need = 0
        self._in_message = False  # a fragmented message is being received
        self._size = 0  # ... its bytes so far
        self._room = self._max_frame  # bytes the next data frame may have and be kept (-1:
        # its message is skipped)
        self._skipping: SkippedFrame | None = None  # handed on once its payload is skipped
        # When the frame or fragmented message being received began (None: none is); the
        # `Pinger` (server/keepalive.py) drops a connection that does not finish it in time.
        self.message_began: float | None = None
        # What the client's frames that complete no message spend (pings, pongs, and
        # fragments but a message's last; None: unbounded); past it the connection is
        # closed with 1008 (its session's, server/session.py).
        self.overhead: TokenBucket | None = None
        # The bytes of a read a pass left unparsed, where the next pass starts in them, and
        # the last ping it has not handed to websockets yet.
        self._unparsed: tuple[bytes, int, bytes] | None = None

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
        fails with 1009, and on a control frame (or one of a reserved opcode) longer than 125
        bytes with 1002 (RFC 6455 5.5), both on the frame's header, before its payload is
        read.

        A client's pongs are skipped here, and of its pings websockets sees only the last
        before each frame it parses (RFC 6455 5.5.3): a flood of pings costs a header each,
        not a parse and a pong each. They and the fragments but a message's last spend the
        `overhead` bucket, checked once per pass; past it the connection fails with 1008.

        A frame, or a fragmented message, unfinished after this read has begun at
        `message_began`: the `Pinger` drops a connection that holds one too long (its bytes
        keep it alive, but a frame trickled a byte at a time, or fragments that never end,
        would hold what the server buffers for good).

        One pass parses FRAMES_PER_PASS frames at most (of any kind); the rest of the read
        waits, as bytes, for the next call (`data` is then empty: nothing is read before the
        rest is parsed). So a read of thousands of empty frames holds a pass's frames, not
        thousands of objects, and the `overhead` bucket, checked each pass, stops a flood of
        frames that complete no message a pass past its burst, not at the read's end.
        """
        start, ping = 0, b""  # where this pass begins in `buf`; the last ping not yet seen
        if self._unparsed is not None:  # what the last pass left of a read
            assert not data, "read while a read is not parsed yet (bytes out of order)"
            (buf, start, ping), self._unparsed = self._unparsed, None
        elif self._need:  # a frame begun
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
        at, end = start, len(buf)
        need = 0  # bytes from `at` the frame there needs before it can be parsed
        overhead = 0  # frames here that complete no message
        left = FRAMES_PER_PASS
        while at < end and left and protocol.state is OPEN:
            left -= 1
            if end - at < 2:
                need = 2
                break
            b0, b1 = buf[at], buf[at + 1]
            size, head = b1 & 0x7F, 2
            if size > 125:  # a longer size follows (a small frame pays this test only)
                head = 4 if size == 126 else 10
                if end - at < head:
                    need = head
                    break
                size = int.from_bytes(buf[at + 2:at + head])
                if size > 125 and b0 & 0x0F not in _DATA:  # (websockets reads it whole)
                    protocol.fail(CloseCode.PROTOCOL_ERROR, "control frame too long"
                                  if b0 & 0x08 else "invalid opcode")
                    return frames
            if b1 & 0x80:
                head += 4  # the mask
            if size > self._room and b0 & 0x0F in _DATA:  # not kept (a control frame is)
                if size > self._max_size - self._size:
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
        if at < end and not need and protocol.state is OPEN:  # whole frames past this pass
            self._unparsed, at = (buf, at, ping), end
        elif ping:
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
