"""The servers of `bench peers` as the load generator sees them: one `Side` per kind.

A side says how a connection opens (its greeting, and the world or room it adds to) and
what one add is. Every side runs on the same client stack (trio and the lean websocket
client of bench/_wsclient.py) and costs the client the same small work per add: one
`send_all` of a frame built when the connection opened (one add is in flight per
connection, so one request id serves them all: our server does not check ids), one
frame parsed in, and a check of the reply that reads only what it needs: our reply's
head and the revision (`re` on the JSON text), Colyseus's type and the revision (msgpack).
`client_cost` measures that work with the network left out, per side, so the figures
can show it is the same.
"""

from __future__ import annotations

import json
import re
import time
from abc import ABC, abstractmethod
from typing import Any

import attrs
import msgpack
import trio

from bench import _colyseus as colyseus
from bench._wsclient import BINARY, TEXT, WsClient, frame

_OK = b'{"id":1,"ok":true,'  # our server writes compact JSON, id and ok first
_REVISION = re.compile(rb'"revision":(\d+)')
_PUSH = re.compile(rb'\{"topic":"[^"]*","rev":(\d+),"kind":"(\w+)"')


def add_request(kind: str, to: str) -> bytes:
    """The JSON text of our add request to world `to` (the echoes carry it too)."""
    return json.dumps({"id": 1, "op": f"{kind}.add", "to": to,
                       "args": {"amount": 1, "note": ""}}, separators=(",", ":")).encode()


@attrs.define
class Conn:
    """One client connection: its socket, the frame of its add, and the last revision it
    saw (a spectator)."""

    ws: WsClient
    add_frame: bytes = b""
    last: int = 0


class Dropped(Exception):
    """The server dropped a spectator that fell behind (our `resync` push)."""


class Side(ABC):
    """A server under load."""

    name: str

    @abstractmethod
    async def open_own(self, index: int) -> Conn:
        """A connection with its own world (room), after one untimed add."""

    @abstractmethod
    async def open_shared(self, index: int, role: str) -> Conn:
        """A connection to the one shared world (room): `role` is "writer", "spectator"
        (its `last` is the revision it starts from) or "idle" (greeted, then silent).
        Index 0 opens first and creates what the others join."""

    @abstractmethod
    async def add(self, conn: Conn) -> int:
        """One add; the revision it made."""

    @abstractmethod
    async def delivery(self, conn: Conn) -> int | None:
        """A spectator's next frame: the revision it brings, None for another frame."""


class Ours(Side):
    """Our server: JSON text frames, the hello, worlds made with `lobby.create`."""

    def __init__(self, url: str, kind: str) -> None:
        self.name = "ours"
        self.url = url
        self.kind = kind

    def add_frame(self, to: str) -> bytes:
        """The framed add request to world `to`."""
        return frame(add_request(self.kind, to), TEXT)

    async def _call(self, ws: WsClient, request: dict[str, Any],
                    ok: tuple[str, ...] = ()) -> Any:
        """Send one request and read its reply (no push is due meanwhile); its result, or
        None for a refusal whose code is in `ok`."""
        await ws.send(json.dumps({"id": 1, **request}).encode(), TEXT)
        reply = json.loads(await ws.recv())
        if reply.get("ok"):
            return reply.get("result")
        if reply["error"]["code"] in ok:
            return None
        raise RuntimeError(f"{request.get('op')} refused: {reply}")

    async def _greeted(self) -> WsClient:
        ws = await WsClient.connect(self.url)
        await self._call(ws, {"op": "hello", "protocol": 1, "client": "bench-peers/1.0"})
        return ws

    async def _world(self, ws: WsClient, name: str) -> str:
        # A world made at a lower level of connections is reused.
        await self._call(ws, {"op": "lobby.create", "args": {"kind": self.kind, "name": name}},
                         ok=("already_exists",))
        return f"{self.kind}:{name}"

    async def open_own(self, index: int) -> Conn:
        ws = await self._greeted()
        conn = Conn(ws, self.add_frame(await self._world(ws, f"c{index}")))
        await self.add(conn)
        return conn

    async def open_shared(self, index: int, role: str) -> Conn:
        ws = await self._greeted()
        if role == "idle":
            return Conn(ws)
        to = f"{self.kind}:fan"
        if index == 0:
            await self._world(ws, "fan")
        conn = Conn(ws, self.add_frame(to))
        if role == "spectator":
            conn.last = (await self._call(ws, {"op": "subscribe", "to": to}))["rev"]
            await ws.recv()  # the snapshot at that revision
        return conn

    async def add(self, conn: Conn) -> int:
        await conn.ws.send_frame(conn.add_frame)
        reply = await conn.ws.recv()
        if not reply.startswith(_OK):
            raise RuntimeError(f"the add was refused: {reply!r}")
        return int(_REVISION.search(reply).group(1))

    async def delivery(self, conn: Conn) -> int | None:
        push = await conn.ws.recv()
        head = _PUSH.match(push)
        if head is None:
            raise RuntimeError(f"not a push: {push[:200]!r}")
        if head.group(2) == b"resync":
            raise Dropped(json.loads(push)["data"])
        return int(head.group(1)) if head.group(2) == b"events" else None


class Colyseus(Side):
    """A Colyseus server (bench/peers_node/server.js): binary msgpack/schema frames."""

    def __init__(self, name: str, host: str, port: int) -> None:
        self.name = name
        self.host = host
        self.port = port
        self.add_frame = frame(colyseus.message("add", {"amount": 1, "note": ""}), BINARY)
        self.added = colyseus.message_prefix("added")
        self._shared: dict[str, str] = {}  # room name -> the shared room's id

    async def _join(self, method: str, room: str) -> tuple[WsClient, dict[str, Any]]:
        seat = await colyseus.matchmake(self.host, self.port, method, room)
        ws = await WsClient.connect(colyseus.room_url(self.host, self.port, seat))
        await colyseus.confirm_join(ws)
        return ws, seat

    async def open_own(self, index: int) -> Conn:
        ws, _ = await self._join("create", "counter")
        conn = Conn(ws, self.add_frame)
        await self.add(conn)
        return conn

    async def open_shared(self, index: int, role: str) -> Conn:
        room = "lounge" if role == "idle" else "counter_watched"
        if index == 0:
            ws, seat = await self._join("create", room)
            self._shared[room] = seat["room"]["roomId"]
        else:
            ws, _ = await self._join("joinById", self._shared[room])
        conn = Conn(ws, self.add_frame)
        if role != "idle":
            state = colyseus.read_counter(await ws.recv())  # ROOM_STATE follows the join
            if state is None:
                raise RuntimeError("expected the room's state after the join")
            conn.last = int(state["revision"])
        return conn

    async def add(self, conn: Conn) -> int:
        await conn.ws.send_frame(conn.add_frame)
        while True:
            reply = await conn.ws.recv()
            if reply[0] != colyseus.ROOM_DATA:
                continue  # a writer in a watched room also gets its patches
            if not reply.startswith(self.added):
                raise RuntimeError(f"the add was refused: {colyseus.read_message(reply)}")
            return msgpack.unpackb(reply[len(self.added):])["revision"]

    async def delivery(self, conn: Conn) -> int | None:
        fields = colyseus.read_counter(await conn.ws.recv())
        return None if fields is None or "revision" not in fields else int(fields["revision"])


class Echo(Side):
    """A bare echo server: an add is one text frame of `sample` sent back."""

    def __init__(self, name: str, url: str, sample: bytes) -> None:
        self.name = name
        self.url = url
        self.sample = sample
        self.add_frame = frame(sample, TEXT)

    async def open_own(self, index: int) -> Conn:
        conn = Conn(await WsClient.connect(self.url), self.add_frame)
        await self.add(conn)
        return conn

    async def open_shared(self, index: int, role: str) -> Conn:
        raise NotImplementedError("an echo server has nothing to share")

    async def add(self, conn: Conn) -> int:
        await conn.ws.send_frame(conn.add_frame)
        await conn.ws.recv()
        return 0

    async def delivery(self, conn: Conn) -> int | None:
        raise NotImplementedError("an echo server pushes nothing")


# ---- what the client spends on one add, apart from the network ------------------------

class _Canned(trio.abc.Stream):
    """A stream that swallows what is sent and always receives the same server frame."""

    def __init__(self, payload: bytes, opcode: int) -> None:
        self.frame = bytes([0x80 | opcode, len(payload)]) + payload  # short frames only

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Nothing goes anywhere."""

    async def wait_send_all_might_not_block(self) -> None:
        """Never blocks."""

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        """The canned reply frame."""
        return self.frame

    async def aclose(self) -> None:
        """Nothing to close."""


def client_cost(side: Side, add_frame: bytes, reply: bytes, opcode: int,
                adds: int = 5000) -> float:
    """Microseconds of this process's CPU per `side.add` with the network left out: the
    add frame `add_frame` goes nowhere and the server's reply is always `reply`."""
    conn = Conn(WsClient(_Canned(reply, opcode), bytearray()), add_frame)

    async def run() -> float:
        t0 = time.process_time()
        for _ in range(adds):
            await side.add(conn)
        return time.process_time() - t0

    return round(trio.run(run) / adds * 1e6, 2)
