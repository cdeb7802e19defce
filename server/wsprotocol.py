"""The websocket protocol below a `WebSocket` (server/transport.py): the text frames the
server writes (`text_frame`), and websockets' Sans-I/O protocol for the frames it does not
parse itself (`OpenProtocol`, which tells each close for a violation; `let_go`, for one
done with), among whose frames a `SkippedFrame` stands for one not kept."""

from __future__ import annotations

import struct
from collections.abc import Callable, Generator

import attrs
from websockets.frames import CloseCode, Opcode
from websockets.protocol import CLOSED, OPEN
from websockets.server import ServerProtocol

from protocol.errors import forget_frames

_NOT_VIOLATIONS = frozenset({CloseCode.ABNORMAL_CLOSURE, CloseCode.INTERNAL_ERROR})


class OpenProtocol(ServerProtocol):
    """websockets' protocol of a connection past its handshake, which tells `violated` the
    close code of each failure it closes the connection for: websockets' parser's and the
    transport's own (not a lost connection's, which sends no close, nor websockets' own
    internal error's, which is not the client's doing). Frames longer than
    `max_size` fail it with 1009."""

    def __init__(self, max_size: int, violated: Callable[[int], None] | None) -> None:
        super().__init__(state=OPEN, max_size=max_size)
        self.violated = violated

    def fail(self, code: CloseCode | int, reason: str = "") -> None:
        """Fail the connection with `code` (websockets' `fail`), telling `violated`."""
        if (self.state is OPEN and code not in _NOT_VIOLATIONS
                and self.violated is not None):
            self.violated(int(code))
        super().fail(code, reason)


@attrs.frozen
class SkippedFrame:
    """A data frame the transport skipped unread, among websockets' frames (which it tells
    apart by `opcode`, no frame's)."""

    kind: Opcode  # its opcode
    fin: bool  # the last of its message
    opcode = None


def _parsed_all() -> Generator[None, None, None]:
    """The parser of a protocol done with: it takes whatever it is fed and holds nothing."""
    while True:
        yield


def let_go(protocol: ServerProtocol) -> None:
    """Close a websockets protocol done with, and break the reference cycles it is in so
    that dropping it frees it: its parser is a generator whose frame holds it, and an
    error it failed with (a frame, the handshake) holds through its traceback a frame
    that holds it. Left alone, a connection's protocols (and what they hold) wait for the
    cyclic garbage collector (tests/server/test_cyclic_garbage.py)."""
    parser = _parsed_all()
    next(parser)
    protocol.parser = parser
    protocol.state = CLOSED  # as its end of stream would (it is read no more)
    forget_frames(protocol.parser_exc)
    forget_frames(protocol.handshake_exc)  # (also held by the refused upgrade's request)
    protocol.parser_exc = protocol.handshake_exc = None


class _LastFrame:
    """The text framed last and its frame, as one pair (read and replaced whole): a push
    offered to many connections in a row is encoded and framed once."""

    __slots__ = ("pair",)

    def __init__(self) -> None:
        self.pair: tuple[str | None, bytes] = (None, b"")


_last = _LastFrame()


def text_frame(text: str) -> bytes:
    """One unfragmented, unmasked text frame (a server's: RFC 6455 section 5.2) of `text`
    (UnicodeEncodeError for text that is not valid Unicode). The connections negotiate no
    extension, so a frame is the same for all of them."""
    last_text, last_frame = _last.pair
    if text is last_text:
        return last_frame
    payload = text.encode()
    size = len(payload)
    if size < 126:
        head = bytes((0x81, size))
    elif size < 65536:
        head = struct.pack("!BBH", 0x81, 126, size)
    else:
        head = struct.pack("!BBQ", 0x81, 127, size)
    data = head + payload
    _last.pair = (text, data)
    return data
