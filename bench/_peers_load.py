"""The load generator of `bench peers`: one Python process driving every server alike.

Each server is a `Side`: how a connection opens (its greeting, and the world or room it
adds to) and what one add is. Every side runs on the same client stack (trio and the
`websockets` client, compression and keepalive pings off), and an add costs the client
the same kind of work on every side: one C encoder call (`json.dumps` for our protocol,
`msgpack.packb` for Colyseus's), one frame out, one frame in, one C decoder call on the
reply. `Meter` records the client's own CPU per round trip beside the server's, so a
reader sees whether the client was the bound (and the per-side client cost it paid).
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import msgpack
import trio
from websockets.exceptions import ConnectionClosed
from websockets.trio.client import connect

from bench import _colyseus as colyseus

OPEN_PARALLEL = 64  # connections opening at once (the listen backlog is finite)


@attrs.define
class Conn:
    """One client connection: its socket, the world it adds to (ours) and the last
    revision it saw (a spectator)."""

    ws: Any
    to: str = ""
    last: int = 0


async def _ws(url: str, nursery: trio.Nursery) -> Any:
    # Keepalive pings off (the client's; servers still ping): frames the figures do not count.
    return await connect(url, compression=None, ping_interval=None, open_timeout=60,
                         proxy=None, max_size=2**20).connect(nursery)


class Dropped(Exception):
    """The server dropped a spectator that fell behind (our `resync` push)."""


class Side(ABC):
    """A server under load."""

    name: str

    @abstractmethod
    async def open_own(self, index: int, nursery: trio.Nursery) -> Conn:
        """A connection with its own world (room), after one untimed add."""

    @abstractmethod
    async def open_shared(self, index: int, nursery: trio.Nursery, role: str) -> Conn:
        """A connection to the one shared world (room): `role` is "writer", "spectator"
        (its `last` is the revision it starts from) or "idle" (greeted, then silent).
        Index 0 opens first and creates what the others join."""

    @abstractmethod
    async def add(self, conn: Conn, n: int) -> int:
        """One add (request `n` of the connection); the revision it made."""

    @abstractmethod
    async def delivery(self, conn: Conn) -> int | None:
        """A spectator's next frame: the revision it brings, None for another frame."""


class Ours(Side):
    """Our server: JSON text frames, the hello, worlds made with `lobby.create`."""

    def __init__(self, url: str, kind: str) -> None:
        self.name = "ours"
        self.url = url
        self.kind = kind
        self.add_op = f"{kind}.add"

    async def _call(self, ws: Any, frame: dict[str, Any], ok: tuple[str, ...] = ()) -> Any:
        """Send one request and read its reply (no push is due meanwhile); its result, or
        None for a refusal whose code is in `ok`."""
        await ws.send(json.dumps({"id": 1, **frame}))
        reply = json.loads(await ws.recv())
        if reply.get("ok"):
            return reply.get("result")
        if reply["error"]["code"] in ok:
            return None
        raise RuntimeError(f"{frame.get('op')} refused: {reply}")

    async def _greeted(self, nursery: trio.Nursery) -> Any:
        ws = await _ws(self.url, nursery)
        await self._call(ws, {"op": "hello", "protocol": 1, "client": "bench-peers/1.0"})
        return ws

    async def _world(self, ws: Any, name: str) -> str:
        # A world made at a lower level of connections is reused.
        await self._call(ws, {"op": "lobby.create", "args": {"kind": self.kind, "name": name}},
                         ok=("already_exists",))
        return f"{self.kind}:{name}"

    async def open_own(self, index: int, nursery: trio.Nursery) -> Conn:
        ws = await self._greeted(nursery)
        conn = Conn(ws, await self._world(ws, f"c{index}"))
        await self.add(conn, 0)
        return conn

    async def open_shared(self, index: int, nursery: trio.Nursery, role: str) -> Conn:
        ws = await self._greeted(nursery)
        if role == "idle":
            return Conn(ws)
        conn = Conn(ws, f"{self.kind}:fan")
        if index == 0:
            await self._world(ws, "fan")
        if role == "spectator":
            conn.last = (await self._call(ws, {"op": "subscribe", "to": conn.to}))["rev"]
            await ws.recv()  # the snapshot at that revision
        return conn

    async def add(self, conn: Conn, n: int) -> int:
        await conn.ws.send(json.dumps({"id": n, "op": self.add_op, "to": conn.to,
                                       "args": {"amount": 1, "note": ""}},
                                      separators=(",", ":")))
        reply = json.loads(await conn.ws.recv())
        if not reply["ok"]:
            raise RuntimeError(f"the add was refused: {reply}")
        return reply["result"]["revision"]

    async def delivery(self, conn: Conn) -> int | None:
        push = json.loads(await conn.ws.recv())
        if push.get("kind") == "resync":
            raise Dropped(push["data"])
        return push["rev"] if push.get("kind") == "events" else None


class Colyseus(Side):
    """A Colyseus server (bench/peers_node/server.js): binary msgpack/schema frames."""

    def __init__(self, name: str, host: str, port: int) -> None:
        self.name = name
        self.host = host
        self.port = port
        self.prefix = colyseus.message_prefix("add")
        self._shared: dict[str, str] = {}  # room name -> the shared room's id

    async def _join(self, nursery: trio.Nursery, method: str, room: str) -> tuple[Any, dict]:
        seat = await colyseus.matchmake(self.host, self.port, method, room)
        ws = await _ws(colyseus.room_url(self.host, self.port, seat), nursery)
        await colyseus.confirm_join(ws)
        return ws, seat

    async def open_own(self, index: int, nursery: trio.Nursery) -> Conn:
        ws, _ = await self._join(nursery, "create", "counter")
        conn = Conn(ws)
        await self.add(conn, 0)
        return conn

    async def open_shared(self, index: int, nursery: trio.Nursery, role: str) -> Conn:
        room = "lounge" if role == "idle" else "counter_watched"
        if index == 0:
            ws, seat = await self._join(nursery, "create", room)
            self._shared[room] = seat["room"]["roomId"]
        else:
            ws, _ = await self._join(nursery, "joinById", self._shared[room])
        conn = Conn(ws)
        if role != "idle":
            state = colyseus.read_counter(await ws.recv())  # ROOM_STATE follows the join
            if state is None:
                raise RuntimeError("expected the room's state after the join")
            conn.last = int(state["revision"])
        return conn

    async def add(self, conn: Conn, n: int) -> int:
        await conn.ws.send(self.prefix + msgpack.packb({"amount": 1, "note": ""}))
        while True:  # a writer in a watched room also gets its patches: skip them
            reply = colyseus.read_message(await conn.ws.recv())
            if reply is None:
                continue
            if reply[0] != "added":
                raise RuntimeError(f"the add was refused: {reply}")
            return reply[1]["revision"]

    async def delivery(self, conn: Conn) -> int | None:
        fields = colyseus.read_counter(await conn.ws.recv())
        return None if fields is None or "revision" not in fields else int(fields["revision"])


class Echo(Side):
    """A bare echo server: an add is one frame of `sample` sent back."""

    def __init__(self, name: str, url: str, sample: str) -> None:
        self.name = name
        self.url = url
        self.sample = sample

    async def open_own(self, index: int, nursery: trio.Nursery) -> Conn:
        conn = Conn(await _ws(self.url, nursery))
        await self.add(conn, 0)
        return conn

    async def open_shared(self, index: int, nursery: trio.Nursery, role: str) -> Conn:
        raise NotImplementedError("an echo server has nothing to share")

    async def add(self, conn: Conn, n: int) -> int:
        await conn.ws.send(self.sample)
        await conn.ws.recv()
        return 0

    async def delivery(self, conn: Conn) -> int | None:
        raise NotImplementedError("an echo server pushes nothing")


# ---- opening many connections ------------------------------------------------------------

async def open_many(count: int, opener: Callable[[int], Awaitable[Conn]],
                    first_alone: bool = False) -> list[Conn]:
    """`count` connections by index, at most OPEN_PARALLEL opening at once (index 0 first
    and alone when `first_alone`: it creates what the others join)."""
    opened: dict[int, Conn] = {}
    limiter = trio.CapacityLimiter(OPEN_PARALLEL)

    async def one(i: int) -> None:
        async with limiter:
            opened[i] = await opener(i)

    start = 0
    if first_alone and count:
        await one(0)
        start = 1
    async with trio.open_nursery() as openers:
        for i in range(start, count):
            openers.start_soon(one, i)
    return [opened[i] for i in range(count)]


async def close_all(conns: list[Conn]) -> None:
    """Close every connection at once."""
    async with trio.open_nursery() as closers:
        for conn in conns:
            closers.start_soon(conn.ws.aclose)


# ---- measuring ---------------------------------------------------------------------------

@attrs.define
class Meter:
    """What one side's turns added up to: wall, server and client CPU seconds, latencies."""

    cpu: Callable[[], float]  # the server's CPU seconds so far (all its processes)
    wall: float = 0.0
    server_cpu: float = 0.0
    client_cpu: float = 0.0
    latencies: list[float] = attrs.Factory(list)
    rates: list[float] = attrs.Factory(list)

    def figures(self) -> dict[str, Any]:
        """Rate, latency and CPU figures of the turns so far."""
        lat = sorted(self.latencies)
        count = max(len(lat), 1)
        return {
            "round_trips": len(lat),
            "round_trips_per_s": round(len(lat) / self.wall, 1),
            "p50_ms": round(lat[count // 2] * 1e3, 3) if lat else None,
            "p99_ms": round(lat[min(count - 1, int(count * 0.99))] * 1e3, 3) if lat else None,
            "per_turn_round_trips_per_s": self.rates,
            "server_cpu_us_per_round_trip": round(self.server_cpu / count * 1e6, 1),
            "server_cpu_cores": round(self.server_cpu / self.wall, 3),
            "client_cpu_us_per_round_trip": round(self.client_cpu / count * 1e6, 1),
            "client_cpu_cores": round(self.client_cpu / self.wall, 3),
        }


async def turn(side: Side, conns: list[Conn], seconds: float, meter: Meter,
               sent: list[int], on_reply: Callable[[int, float], None] | None = None) -> None:
    """Every connection adds back to back (one in flight each) for `seconds`."""
    start, deadline = trio.Event(), [0.0]
    clock = time.perf_counter
    latencies = meter.latencies
    done = len(latencies)

    async def worker(i: int, conn: Conn) -> None:
        await start.wait()
        n = sent[i]
        while clock() < deadline[0]:
            t0 = clock()
            rev = await side.add(conn, n)
            latencies.append(clock() - t0)
            if on_reply is not None:
                on_reply(rev, t0)
            n += 1
        sent[i] = n

    async with trio.open_nursery() as workers:
        for i, conn in enumerate(conns):
            workers.start_soon(worker, i, conn)
        await trio.sleep(0.1)  # every worker waits at the start line
        cpu0, client0, t0 = meter.cpu(), time.process_time(), clock()
        deadline[0] = t0 + seconds
        start.set()
    took = clock() - t0  # until the last reply in flight at the deadline
    meter.wall += took
    meter.server_cpu += meter.cpu() - cpu0
    meter.client_cpu += time.process_time() - client0
    meter.rates.append(round((len(latencies) - done) / took, 1))


async def round_trips(sides: list[Side], meters: dict[str, Meter], connections: int,
                      seconds: float, turns: int, log: Callable[[str], None]) -> None:
    """Open `connections` to every side, then alternate `turns` turns of round trips."""
    async with trio.open_nursery() as nursery:
        opened = {}
        for side in sides:
            t0 = time.perf_counter()
            opened[side.name] = await open_many(
                connections, lambda i, s=side: s.open_own(i, nursery))
            log(f"  {side.name}: {connections} connections open in "
                f"{time.perf_counter() - t0:.1f} s")
        sent = {side.name: [1] * connections for side in sides}  # request 0 was the warm-up
        for _ in range(turns):
            for side in sides:
                await turn(side, opened[side.name], seconds / turns, meters[side.name],
                           sent[side.name])
        for conns in opened.values():
            await close_all(conns)
        nursery.cancel_scope.cancel()


def percentile(values: list[float], q: float) -> float:
    """The q-quantile of `values` (sorted here), nearest rank."""
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q))]


async def fan_out(sides: list[Side], meters: dict[str, Meter], writers: int, spectators: int,
                  seconds: float, turns: int, log: Callable[[str], None]) -> dict[str, Any]:
    """`writers` add to one shared world (room) while `spectators` watch it, turns
    alternating between the sides. A delivery is a frame that brings a spectator a newer
    revision; its lag is the time from the send of the oldest add it brings (the first
    revision after the spectator's last) to its arrival."""
    out = {}
    async with trio.open_nursery() as nursery:
        state = {}
        for side in sides:
            t0 = time.perf_counter()
            watchers = await open_many(
                spectators, lambda i, s=side: s.open_shared(i, nursery, "spectator"),
                first_alone=True)
            # Writers join after the creator: index + 1 never creates.
            pens = await open_many(
                writers, lambda i, s=side: s.open_shared(i + 1, nursery, "writer"))
            sent_at: dict[int, float] = {}
            arrivals: list[tuple[float, int]] = []  # (arrival time, oldest revision brought)
            dropped: list[Any] = []
            for conn in watchers:
                nursery.start_soon(_watch, side, conn, arrivals, dropped)
            state[side.name] = (watchers, pens, sent_at, arrivals, dropped)
            log(f"  {side.name}: {spectators} spectators and {writers} writers open in "
                f"{time.perf_counter() - t0:.1f} s")
        sent = {side.name: [0] * writers for side in sides}
        for _ in range(turns):
            for side in sides:
                _, pens, sent_at, _, _ = state[side.name]
                await turn(side, pens, seconds / turns, meters[side.name], sent[side.name],
                           on_reply=sent_at.__setitem__)
                await trio.sleep(0.2)  # the last patches of this turn land before the next
        for side in sides:
            _, _, sent_at, arrivals, dropped = state[side.name]
            meter = meters[side.name]
            lags = [t - sent_at[r] for t, r in arrivals if r in sent_at]
            figures = meter.figures()
            out[side.name] = {
                "deliveries_per_s": round(len(arrivals) / meter.wall, 1),
                "lag_p50_ms": round(percentile(lags, 0.5) * 1e3, 2) if lags else None,
                "lag_p99_ms": round(percentile(lags, 0.99) * 1e3, 2) if lags else None,
                "adds_per_s": figures["round_trips_per_s"],
                "add_p99_ms": figures["p99_ms"],
                "server_cpu_cores": figures["server_cpu_cores"],
                "client_cpu_cores": figures["client_cpu_cores"],
                "spectators_dropped": len(dropped),
            }
        for watchers, pens, *_ in state.values():
            await close_all(watchers + pens)
        nursery.cancel_scope.cancel()
    return out


async def _watch(side: Side, conn: Conn, arrivals: list[tuple[float, int]],
                 dropped: list[Any]) -> None:
    clock = time.perf_counter
    try:
        while True:
            rev = await side.delivery(conn)
            if rev is not None and rev > conn.last:
                arrivals.append((clock(), conn.last + 1))
                conn.last = rev
    except Dropped as drop:
        dropped.append(drop.args[0])
    except ConnectionClosed:
        pass  # closed at the end of the run


async def idle_memory(side: Side, connections: int, rss: Callable[[], int]) -> dict[str, Any]:
    """RSS growth of the server per connection held open (greeted, then silent)."""
    await trio.sleep(0.5)
    before = rss()
    async with trio.open_nursery() as nursery:
        conns = await open_many(connections, lambda i: side.open_shared(i, nursery, "idle"),
                                first_alone=True)
        await trio.sleep(1.0)  # let the server settle its per-connection buffers
        after = rss()
        await close_all(conns)
        nursery.cancel_scope.cancel()
    return {"rss_before_mib": round(before / 2**20, 1), "rss_after_mib": round(after / 2**20, 1),
            "kib_per_connection": round((after - before) / connections / 1024, 2)}
