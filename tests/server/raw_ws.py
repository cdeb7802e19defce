"""A websocket client at the frame level over a bare trio TCP stream: for tests that must
send what no library sends (invalid UTF-8, reserved bits, unmasked frames), that hold
thousands of cheap idle connections, or that stop reading."""

from __future__ import annotations

import base64
import json
import os
import struct
from typing import Any

import trio

TEXT, BINARY, CLOSE, PING, PONG = 0x1, 0x2, 0x8, 0x9, 0xA


class HandshakeRefused(Exception):
    """The server answered the upgrade with another status than 101."""

    def __init__(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"HTTP {status}: {body[:200]!r}")
        self.status = status
        self.body = body
        self.headers = headers or {}  # lower-cased names


def request(port: int, path: str = "/ws", headers: dict[str, str] | None = None) -> bytes:
    """The bytes of a websocket upgrade request."""
    key = base64.b64encode(os.urandom(16)).decode()
    fields = {"Host": f"127.0.0.1:{port}", "Upgrade": "websocket", "Connection": "Upgrade",
              "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13", **(headers or {})}
    lines = [f"GET {path} HTTP/1.1", *(f"{k}: {v}" for k, v in fields.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def frame(opcode: int, payload: bytes, *, fin: bool = True, rsv: int = 0,
          mask: bool = True) -> bytes:
    """One frame as a client sends it (masked unless told otherwise)."""
    head = bytes([(0x80 if fin else 0) | (rsv << 4) | opcode])
    n = len(payload)
    bit = 0x80 if mask else 0
    if n < 126:
        head += bytes([bit | n])
    elif n < 1 << 16:
        head += bytes([bit | 126]) + struct.pack(">H", n)
    else:
        head += bytes([bit | 127]) + struct.pack(">Q", n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


class RawSocket:
    """One websocket connection, frame by frame."""

    def __init__(self, stream: trio.SocketStream, buffer: bytes) -> None:
        self.stream = stream
        self.buffer = bytearray(buffer)

    @classmethod
    async def open(cls, port: int, headers: dict[str, str] | None = None,
                   path: str = "/ws", local: str | None = None) -> RawSocket:
        """Connect (from loopback address `local`, if given) and upgrade (HandshakeRefused
        when the server says no)."""
        stream = await trio.open_tcp_stream("127.0.0.1", port, local_address=local)
        await stream.send_all(request(port, path, headers))
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = await stream.receive_some(65536)
            if not chunk:
                await stream.aclose()
                raise HandshakeRefused(0, data)
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        if status != 101:
            with trio.move_on_after(1):
                while chunk := await stream.receive_some(65536):
                    rest += chunk
            await stream.aclose()
            fields = (line.partition(b":") for line in head.split(b"\r\n")[1:])
            raise HandshakeRefused(status, rest, {k.strip().lower().decode(): v.strip().decode()
                                                  for k, _, v in fields})
        return cls(stream, rest)

    async def send(self, data: bytes) -> None:
        """Send raw bytes (a frame made by `frame`)."""
        await self.stream.send_all(data)

    async def send_json(self, value: Any) -> None:
        """Send one text frame of JSON."""
        await self.send(frame(TEXT, json.dumps(value).encode()))

    async def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                raise EOFError("the server closed the TCP connection")
            self.buffer += chunk
        out = bytes(self.buffer[:n])
        del self.buffer[:n]
        return out

    async def recv_frame(self) -> tuple[int, bytes]:
        """The next frame from the server: (opcode, payload); EOFError on a bare close."""
        b0, b1 = await self._read(2)
        n = b1 & 0x7F
        if n == 126:
            (n,) = struct.unpack(">H", await self._read(2))
        elif n == 127:
            (n,) = struct.unpack(">Q", await self._read(8))
        return b0 & 0x0F, await self._read(n)

    async def recv_json(self, timeout: float = 10.0) -> dict[str, Any]:
        """The next text frame, decoded (pings are skipped)."""
        with trio.fail_after(timeout):
            while True:
                opcode, payload = await self.recv_frame()
                if opcode == TEXT:
                    return json.loads(payload)
                if opcode == CLOSE:
                    raise EOFError(f"closed: {close_code(payload)}")

    async def hello(self, token: str | None = None) -> dict[str, Any]:
        """Say hello; the reply."""
        await self.send_json({"op": "hello", "protocol": 1, "token": token})
        return await self.recv_json()

    async def close_code(self, timeout: float = 10.0) -> int | None:
        """Read until the server's close frame: its code (None: the TCP connection ended
        without one)."""
        with trio.fail_after(timeout):
            try:
                while True:
                    opcode, payload = await self.recv_frame()
                    if opcode == CLOSE:
                        return close_code(payload)
            except (EOFError, trio.BrokenResourceError):
                return None

    async def aclose(self) -> None:
        """Drop the TCP connection."""
        await self.stream.aclose()


def close_code(payload: bytes) -> int | None:
    """The code of a close frame's payload."""
    return struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None
