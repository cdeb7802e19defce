"""The client side of Colyseus 0.16's wire protocol, as far as `bench peers` needs it.

A client joins a room in two steps:

1. matchmaking, over HTTP: `POST /matchmake/{create|joinOrCreate}/{room name}` with the
   room options as a JSON body; the answer is a seat reservation
   `{"room": {"roomId", "processId", ...}, "sessionId"}` (or `{"code", "error"}`);
2. the websocket `ws://HOST:PORT/{processId}/{roomId}?sessionId=...`: the server sends
   JOIN_ROOM (its reconnection token, serializer id and schema handshake), the client
   answers JOIN_ROOM to confirm, and a room with a synchronized state then sends
   ROOM_STATE (the whole state); afterwards ROOM_STATE_PATCH frames carry the changes.

Messages both ways are binary frames `[ROOM_DATA, type, msgpack(payload)]`, the type a
string in schema's encoding (for one shorter than 32 bytes: `0xa0 | length`, then the
bytes). The counter room's state (bench/peers_node/server.js) is a flat schema of three
fields, `revision` and `adds` (uint32) and `total` (float64), encoded as one byte
`operation | field index` and the value, little-endian.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import msgpack
import trio

JOIN_ROOM = 10
ERROR = 11
ROOM_DATA = 13
ROOM_STATE = 14
ROOM_STATE_PATCH = 15
SWITCH_TO_STRUCTURE = 255
# The counter state's fields by index (the order defineTypes gives them in server.js).
COUNTER_FIELDS = (("revision", struct.Struct("<I")), ("adds", struct.Struct("<I")),
                  ("total", struct.Struct("<d")))
_INDEX_MASK = 0x3F  # the low 6 bits of an operation byte: the field index


class ColyseusError(RuntimeError):
    """The server refused a matchmaking request or a join."""


async def matchmake(host: str, port: int, method: str, room: str,
                    options: dict[str, Any] | None = None) -> dict[str, Any]:
    """A seat reservation from the matchmaker (HTTP/1.0: the body runs to the close)."""
    body = json.dumps(options or {}).encode()
    head = (f"POST /matchmake/{method}/{room} HTTP/1.0\r\nHost: {host}:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
    stream = await trio.open_tcp_stream(host, port)
    async with stream:
        await stream.send_all(head.encode() + body)
        data = bytearray()
        while chunk := await stream.receive_some(65536):
            data += chunk
    status, _, rest = bytes(data).partition(b"\r\n")
    _, _, payload = rest.partition(b"\r\n\r\n")
    if b" 200 " not in status + b" ":
        raise ColyseusError(f"matchmaking {method}/{room}: {status.decode(errors='replace')}")
    seat = json.loads(payload)
    if "error" in seat:
        raise ColyseusError(f"matchmaking {method}/{room}: {seat}")
    return seat


def room_url(host: str, port: int, seat: dict[str, Any]) -> str:
    """The websocket address of a seat reservation."""
    room = seat["room"]
    return f"ws://{host}:{port}/{room['processId']}/{room['roomId']}?sessionId={seat['sessionId']}"


async def confirm_join(ws: Any) -> None:
    """Wait for the server's JOIN_ROOM and confirm it (the first frame a client sends)."""
    frame = await ws.recv()
    if not isinstance(frame, bytes) or not frame or frame[0] != JOIN_ROOM:
        raise ColyseusError(f"expected JOIN_ROOM, got {frame[:40]!r}")
    await ws.send(bytes([JOIN_ROOM]))  # binary


def encode_type(name: str) -> bytes:
    """A message type in schema's string encoding (short names only)."""
    raw = name.encode()
    if len(raw) >= 32:
        raise ValueError(f"message type {name!r}: at most 31 bytes here")
    return bytes([0xA0 | len(raw)]) + raw


def message_prefix(name: str) -> bytes:
    """The bytes of a ROOM_DATA frame before its msgpack payload."""
    return bytes([ROOM_DATA]) + encode_type(name)


def message(name: str, payload: Any) -> bytes:
    """A whole ROOM_DATA frame."""
    return message_prefix(name) + msgpack.packb(payload)


def read_message(frame: bytes) -> tuple[str, Any] | None:
    """(type, payload) of a ROOM_DATA frame with a string type; None for any other frame."""
    if len(frame) < 2 or frame[0] != ROOM_DATA or frame[1] & 0xE0 != 0xA0:
        return None
    end = 2 + (frame[1] & 0x1F)
    payload = msgpack.unpackb(frame[end:]) if len(frame) > end else None
    return frame[2:end].decode(), payload


def read_counter(frame: bytes) -> dict[str, float] | None:
    """The counter fields a ROOM_STATE or ROOM_STATE_PATCH frame sets; None for other frames.

    Only the flat counter state is understood: a frame that switches to another structure
    (a state with children) raises ValueError rather than being misread.
    """
    if not frame or frame[0] not in (ROOM_STATE, ROOM_STATE_PATCH):
        return None
    fields: dict[str, float] = {}
    at = 1
    while at < len(frame):
        op = frame[at]
        if op == SWITCH_TO_STRUCTURE:
            raise ValueError("not the flat counter state")
        name, codec = COUNTER_FIELDS[op & _INDEX_MASK]
        (fields[name],) = codec.unpack_from(frame, at + 1)
        at += 1 + codec.size
    return fields
