"""The load generator of `bench peers`: one Python process driving every server alike
(each server a `Side`, bench/_peers_sides.py), in turns that alternate between them.

`Meter` records the client's own CPU per round trip beside the server's, so a reader
sees whether the client was the bound. The client freezes the connections it holds out
of its garbage collector (`hold`).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from bench._peers_sides import Conn, Dropped, Side
from bench._wsclient import Closed

OPEN_PARALLEL = 64  # connections opening at once (the listen backlog is finite)


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


def hold() -> None:
    """Freeze everything alive (the connections just opened) out of the garbage
    collector's passes: with thousands of connections open, the client's full passes
    otherwise cost it about as much as the round trips themselves."""
    gc.freeze()


async def close_all(conns: list[Conn]) -> None:
    """Close every connection at once; what they held may be collected again."""
    async with trio.open_nursery() as closers:
        for conn in conns:
            closers.start_soon(conn.ws.aclose)
    gc.unfreeze()


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
               on_reply: Callable[[int, float], None] | None = None,
               rate: float | None = None) -> None:
    """Every connection adds back to back (one in flight each) for `seconds`; with `rate`,
    paced: together they add `rate` a second, each at its own evenly spread slots (one it
    missed, its add before still in flight, is made up at once: a paced side makes the
    adds it is paced at while it can, not fewer)."""
    start, deadline = trio.Event(), [0.0]
    clock = time.perf_counter
    latencies = meter.latencies
    done = len(latencies)
    gap = len(conns) / rate if rate else 0.0  # between one connection's slots

    async def worker(conn: Conn, offset: float) -> None:
        await start.wait()
        slot = deadline[0] - seconds + offset
        while clock() < deadline[0]:
            if gap:
                wait, slot = slot - clock(), slot + gap
                if wait > 0:
                    await trio.sleep(wait)
            t0 = clock()
            rev = await side.add(conn)
            latencies.append(clock() - t0)
            if on_reply is not None:
                on_reply(rev, t0)

    async with trio.open_nursery() as workers:
        for i, conn in enumerate(conns):
            workers.start_soon(worker, conn, gap * i / len(conns))
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
                      seconds: float, turns: int, log: Callable[[str], None],
                      paced: dict[str, str] | None = None) -> None:
    """Open `connections` to every side, then alternate `turns` turns of round trips. A
    side named in `paced` is paced at the rate the side it maps to made in its last turn
    (each server's CPU per round trip at one rate), the others add back to back."""
    opened = {}
    for side in sides:
        t0 = time.perf_counter()
        opened[side.name] = await open_many(connections, side.open_own)
        log(f"  {side.name}: {connections} connections open in "
            f"{time.perf_counter() - t0:.1f} s")
    hold()
    for _ in range(turns):
        for side in sides:
            await turn(side, opened[side.name], seconds / turns, meters[side.name],
                       rate=_pace(paced, meters, side.name))
    await close_all([conn for conns in opened.values() for conn in conns])


def _pace(paced: dict[str, str] | None, meters: dict[str, Meter], name: str) -> float | None:
    """The rate side `name` is paced at: its leader's in the last turn, or None (free)."""
    leader = (paced or {}).get(name)
    if leader is None:
        return None
    if meters[leader].rates[-1] <= 0:  # (0 would read as "not paced")
        raise RuntimeError(f"{leader} made no round trip in its turn: {name} has no pace")
    return meters[leader].rates[-1]


def percentile(values: list[float], q: float) -> float:
    """The q-quantile of `values` (sorted here), nearest rank."""
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q))]


async def fan_out(sides: list[Side], meters: dict[str, Meter], writers: int, spectators: int,
                  seconds: float, turns: int, log: Callable[[str], None],
                  paced: dict[str, str] | None = None) -> dict[str, Any]:
    """`writers` add to one shared world (room) while `spectators` watch it, turns
    alternating between the sides. A delivery is a frame that brings a spectator a newer
    revision; its lag is the time from the send of the oldest add it brings (the first
    revision after the spectator's last) to its arrival. A side named in `paced` adds at
    the rate the side it maps to made in the turn before (both fan out the same adds)."""
    crowds: dict[str, _Crowd] = {}
    async with trio.open_nursery() as watching:
        for side in sides:
            t0 = time.perf_counter()
            crowd = crowds[side.name] = _Crowd(
                await open_many(spectators, lambda i, s=side: s.open_shared(i, "spectator"),
                                first_alone=True),
                # Writers join after the creator: index + 1 never creates.
                await open_many(writers, lambda i, s=side: s.open_shared(i + 1, "writer")))
            for conn in crowd.watchers:
                watching.start_soon(_watch, side, conn, crowd)
            log(f"  {side.name}: {spectators} spectators and {writers} writers open in "
                f"{time.perf_counter() - t0:.1f} s")
        hold()
        for _ in range(turns):
            for side in sides:
                crowd = crowds[side.name]
                await turn(side, crowd.writers, seconds / turns, meters[side.name],
                           on_reply=crowd.sent_at.__setitem__,
                           rate=_pace(paced, meters, side.name))
                await trio.sleep(0.2)  # the last patches of this turn land before the next
        watching.cancel_scope.cancel()
    await close_all([c for crowd in crowds.values() for c in crowd.watchers + crowd.writers])
    return {name: crowd.figures(meters[name]) for name, crowd in crowds.items()}


@attrs.define
class _Crowd:
    """One side's fan-out: its connections, when each revision's add was sent, and the
    deliveries (arrival time, oldest revision brought)."""

    watchers: list[Conn]
    writers: list[Conn]
    sent_at: dict[int, float] = attrs.Factory(dict)
    arrivals: list[tuple[float, int]] = attrs.Factory(list)
    dropped: list[Any] = attrs.Factory(list)

    def figures(self, meter: Meter) -> dict[str, Any]:
        """Delivery rate and lag, beside the writers' figures."""
        lags = [t - self.sent_at[r] for t, r in self.arrivals if r in self.sent_at]
        writing = meter.figures()
        return {
            "deliveries_per_s": round(len(self.arrivals) / meter.wall, 1),
            "lag_p50_ms": round(percentile(lags, 0.5) * 1e3, 2) if lags else None,
            "lag_p99_ms": round(percentile(lags, 0.99) * 1e3, 2) if lags else None,
            "adds_per_s": writing["round_trips_per_s"],
            "add_p99_ms": writing["p99_ms"],
            "server_cpu_cores": writing["server_cpu_cores"],
            "client_cpu_cores": writing["client_cpu_cores"],
            "spectators_dropped": len(self.dropped),
        }


async def _watch(side: Side, conn: Conn, crowd: _Crowd) -> None:
    clock = time.perf_counter
    try:
        while True:
            rev = await side.delivery(conn)
            if rev is not None and rev > conn.last:
                crowd.arrivals.append((clock(), conn.last + 1))
                conn.last = rev
    except Dropped as drop:
        crowd.dropped.append(drop.args[0])
    except Closed:
        crowd.dropped.append("closed by the server")


WARM = 10  # connections opened before the memory is first read (one-time costs)


async def idle_memory(side: Side, connections: int, rss: Callable[[], int],
                      collect: Callable[[], None]) -> dict[str, Any]:
    """RSS growth of the server per connection held open (greeted, then silent), past
    `WARM` connections already open (what the first one costs once is not per connection:
    a room or world to join, lazily built parts of the server). Each reading follows a
    full collection where the server takes one (`collect`) and a pause to settle."""

    async def settled_rss() -> int:
        collect()
        await trio.sleep(1.0)
        return rss()

    warm = await open_many(WARM, lambda i: side.open_shared(i, "idle"), first_alone=True)
    before = await settled_rss()
    conns = await open_many(connections, lambda i: side.open_shared(WARM + i, "idle"))
    hold()
    after = await settled_rss()
    await close_all(warm + conns)
    return {"rss_before_mib": round(before / 2**20, 1), "rss_after_mib": round(after / 2**20, 1),
            "kib_per_connection": round((after - before) / connections / 1024, 2)}
