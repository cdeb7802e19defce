"""A lean websocket client for load generation (RFC 6455, client side, no extensions).

The `websockets` client costs this machine about 150-200 us of CPU per round trip (a
reader task per connection, a frame parser of generators, a queue between them): more
than a Node server spends on the whole request, so a load generator built on it measures
itself. This one is a buffer and a loop in the caller's task: `recv` reads the socket
only when asked, parses the frames in place, answers pings on the way, and returns each
data frame's payload as bytes. Frames out are masked with the all-zero key (valid, and it
leaves the payload as it is: the server unmasks at the same cost whatever the key).

It serves one task per connection (no concurrent `send`s or `recv`s) and trusts what it
talks to (a local server of this benchmark): it checks the handshake and the framing,
not limits.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct

import trio

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
TEXT, BINARY, CLOSE, PING, PONG, CONTINUATION = 0x1, 0x2, 0x8, 0x9, 0xA, 0x0
_ZERO_MASK = b"\x00\x00\x00\x00"
_U16 = struct.Struct("!H")
_U64 = struct.Struct("!Q")


class Closed(Exception):
    """The server closed the connection (its close code, when it sent one)."""


def frame(payload: bytes, opcode: int) -> bytes:
    """A whole client frame (FIN set) of `payload`: build it once, send it often."""
    return _header(opcode, len(payload)) + payload


def _header(opcode: int, size: int) -> bytes:
    if size < 126:
        return bytes([0x80 | opcode, 0x80 | size]) + _ZERO_MASK
    if size < 1 << 16:
        return bytes([0x80 | opcode, 0x80 | 126]) + _U16.pack(size) + _ZERO_MASK
    return bytes([0x80 | opcode, 0x80 | 127]) + _U64.pack(size) + _ZERO_MASK


class WsClient:
    """One websocket connection; open it with `await WsClient.connect(url)`."""

    def __init__(self, stream: trio.abc.Stream, buffer: bytearray) -> None:
        self.stream = stream
        self._buffer = buffer  # bytes received, not yet parsed
        self._fragments: list[bytes] = []  # of a message sent in several frames

    @classmethod
    async def connect(cls, url: str) -> WsClient:
        """Open `ws://host:port/path` and do the opening handshake."""
        if not url.startswith("ws://"):
            raise ValueError(f"only ws:// addresses: {url!r}")
        hostport, _, path = url[5:].partition("/")
        host, _, port = hostport.rpartition(":")
        stream = await trio.open_tcp_stream(host, int(port))
        key = base64.b64encode(os.urandom(16))
        await stream.send_all(
            b"GET /" + path.encode() + b" HTTP/1.1\r\nHost: " + hostport.encode()
            + b"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key
            + b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
        buffer = bytearray()
        while (end := buffer.find(b"\r\n\r\n")) < 0:
            chunk = await stream.receive_some(65536)
            if not chunk:
                raise Closed(f"{url}: closed during the handshake")
            buffer += chunk
        head = bytes(buffer[:end]).decode("latin-1").split("\r\n")
        del buffer[:end + 4]  # what follows is already frames (a server may speak first)
        accept = base64.b64encode(hashlib.sha1(key + _GUID).digest()).decode()
        headers = {k.strip().lower(): v.strip() for k, _, v in
                   (line.partition(":") for line in head[1:])}
        if " 101 " not in head[0] + " " or headers.get("sec-websocket-accept") != accept:
            await stream.aclose()
            raise Closed(f"{url}: handshake refused: {head[0]}")
        return cls(stream, buffer)

    async def send(self, payload: bytes, opcode: int = BINARY) -> None:
        """One frame of `payload` (TEXT: it is UTF-8)."""
        await self.stream.send_all(frame(payload, opcode))

    async def send_frame(self, framed: bytes) -> None:
        """One frame built with `frame`."""
        await self.stream.send_all(framed)

    async def recv(self) -> bytes:
        """The payload of the next data message (text or binary, as bytes)."""
        while True:
            frame = self._frame()
            if frame is None:
                chunk = await self.stream.receive_some(65536)
                if not chunk:
                    raise Closed("the connection dropped")
                self._buffer += chunk
                continue
            opcode, fin, payload = frame
            if opcode == PING:
                await self.stream.send_all(_header(PONG, len(payload)) + payload)
            elif opcode == CLOSE:
                code = _U16.unpack_from(payload)[0] if len(payload) >= 2 else None
                raise Closed(code)
            elif opcode == PONG:
                continue
            elif opcode == CONTINUATION or not fin:
                self._fragments.append(payload)
                if fin:
                    whole, self._fragments = b"".join(self._fragments), []
                    return whole
            else:
                return payload

    def _frame(self) -> tuple[int, bool, bytes] | None:
        """Take the first whole frame off the buffer: (opcode, fin, payload), or None."""
        buf = self._buffer
        if len(buf) < 2:
            return None
        b0, b1 = buf[0], buf[1]
        if b1 & 0x80:
            raise Closed("a server frame was masked (protocol error)")
        size, at = b1 & 0x7F, 2
        if size == 126:
            if len(buf) < 4:
                return None
            size, at = _U16.unpack_from(buf, 2)[0], 4
        elif size == 127:
            if len(buf) < 10:
                return None
            size, at = _U64.unpack_from(buf, 2)[0], 10
        if len(buf) < at + size:
            return None
        payload = bytes(buf[at:at + size])
        del buf[:at + size]
        return b0 & 0x0F, bool(b0 & 0x80), payload

    async def aclose(self) -> None:
        """Say close (1000) and drop the connection without waiting for the answer."""
        try:
            await self.stream.send_all(_header(CLOSE, 2) + _U16.pack(1000))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        await self.stream.aclose()
