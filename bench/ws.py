"""`python -m bench ws`: the cost of the protocol over a bare websocket, and of idle connections.

Two servers, each in its own subprocess on the same Starlette + Hypercorn-trio stack:

  (a) echo: a bare `/ws` route that sends every text frame back;
  (b) protocol: the real server (`server.app.serve`: sessions, registry, actors, SQLite
      store with synchronous=FULL) plus a bench-only world kind, `benchpad`, whose one
      op `benchpad.bump` appends one durable event and answers with the new revision.
      Each connection bumps its own world (`benchpad:c<i>`), so concurrent appends
      meet in the store's group commit; `protocol_one_world` has every connection
      bump the same world, which serializes them in one mailbox. The per-connection
      rate limit is lifted for the run (it would cap one connection at 200 frames/s).

Both servers tune the garbage collector the way `petridish serve` does
(`server.commands.tune_gc`).

A load process (this one) opens C connections (1, 100, 1000) to each server, then every
connection of one server does request -> reply round trips back to back, for `--seconds`
per server split into `--turns` turns that alternate between (a) and (b) (so both meet
the same machine: its speed drifts over tens of seconds here). The figures are round
trips per second (and per turn), p50/p99 latency, and the ratio b/a. Then it opens 2,000 idle
connections (after hello) to the protocol server and reports its RSS growth per
connection. Progress goes to stderr; the result is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import attrs
import trio

from actors.runtime import Call, WorldActor
from actors.runtime.host import Effect
from actors.world import Codec, Move, World
from protocol.registry import OpSpec, Registry
from server import worlds
from server.commands import tune_gc

REPO = Path(__file__).resolve().parent.parent
_LISTENING = re.compile(r"listening on http://([\d.]+):(\d+)")
BENCH_KIND = "benchpad"


def _log(message: str) -> None:
    print(f"[bench ws] {message}", file=sys.stderr, flush=True)


# ---- the bench-only world kind -----------------------------------------------------------------

@attrs.frozen
class BumpArgs:
    """No arguments."""


@attrs.frozen
class BumpResult:
    """The world's revision after the bump."""

    revision: int


@attrs.frozen
class StoreFigures:
    """The event store's counters: appends requested and transactions committed."""

    appends: int
    commits: int


class _BenchPadActor(WorldActor):
    """Answers `benchpad.store` with the store's counters (the store is no table's)."""

    async def _store(self, _call: Call) -> StoreFigures:
        stats = self.context.store.statistics()
        return StoreFigures(stats.appends, stats.commits)

    effects: ClassVar[Mapping[str, Effect]] = {f"{BENCH_KIND}.store": _store}


def bench_ops() -> tuple[OpSpec, ...]:
    """`benchpad.bump` and `benchpad.store`."""
    return (OpSpec(f"{BENCH_KIND}.bump", BumpArgs, BumpResult, "agent",
                   "Append one event; answer with the new revision."),
            OpSpec(f"{BENCH_KIND}.store", BumpArgs, StoreFigures, "spectator",
                   "The event store's appends and commits so far."))


# A world whose only state is its revision; every bump is one durable event. Every name
# exists (bench only), and it runs on the same generic host as every world.
BENCH_PAD = World(
    kind=BENCH_KIND, initial=lambda _name: 0, evolve=lambda rev, _ev: rev + 1,
    codec=Codec(lambda _ev, _rev: {"type": "bumped"}, lambda _data: "bumped"),
    view=lambda rev: {"revision": rev}, ops=bench_ops(),
    moves={f"{BENCH_KIND}.bump": Move(lambda _s, _a, _c: ["bumped"],
                                      lambda rev, _ev, _a: BumpResult(rev))},
    declared=lambda _name, _t: True, listed=False, actor=_BenchPadActor)


def bench_registry() -> Registry:
    """Every op of the build plus `benchpad.bump` and `benchpad.store`."""
    return Registry([*worlds.registry(), *bench_ops()])


# ---- the servers (each runs in a subprocess started below) ----------------------------------

def serve_echo() -> None:
    """Serve the bare echo app on 127.0.0.1 (a free port) until killed."""
    import hypercorn.trio
    from hypercorn.config import Config
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute
    from starlette.websockets import WebSocket, WebSocketDisconnect

    async def echo(ws: WebSocket) -> None:
        await ws.accept()
        try:
            while True:
                await ws.send_text(await ws.receive_text())
        except WebSocketDisconnect:
            pass

    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    app = Starlette(routes=[WebSocketRoute("/ws", echo)])

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(hypercorn.trio.serve, app, config)
            tune_gc()  # as `petridish serve` does: the two servers differ only in the stack
            print(f"echo: listening on {binds[0]}", flush=True)

    trio.run(main)


class Server:
    """A server subprocess; `port` is read from its `listening on` line."""

    def __init__(self, code: str, *args: str) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen([sys.executable, "-c", code, *args], cwd=REPO, env=env,
                                     text=True, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        assert self.proc.stdout is not None
        seen = []
        for line in self.proc.stdout:
            seen.append(line)
            if m := _LISTENING.search(line):
                self.port = int(m.group(2))
                break
        else:
            raise RuntimeError("server did not start:\n" + "".join(seen))
        self.lines = seen

    @property
    def url(self) -> str:
        """The websocket endpoint."""
        return f"ws://127.0.0.1:{self.port}/ws"

    def rss(self) -> int:
        """Resident set size of the server process in bytes."""
        import psutil

        return psutil.Process(self.proc.pid).memory_info().rss

    def close(self) -> None:
        """Stop the server (SIGKILL: nothing to flush for a benchmark)."""
        self.proc.kill()
        self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


# ---- the load ----------------------------------------------------------------------------------

class Load:
    """How a connection greets the server and what one round trip sends."""

    def __init__(self, url: str, hello: str | None, frame: Callable[[int, int], str]) -> None:
        self.url = url
        self.hello = hello
        self.frame = frame  # (connection index, request number) -> text frame


async def _open(load: Load, index: int, nursery: trio.Nursery, opened: list[Any],
                limiter: trio.CapacityLimiter, warm: bool) -> None:
    from websockets.trio.client import connect

    async with limiter:
        # Keepalive pings off: they would add frames the figures do not count.
        ws = await connect(load.url, compression=None, ping_interval=None, open_timeout=60,
                           proxy=None).connect(nursery)
        if load.hello is not None:
            await ws.send(load.hello)
            reply = json.loads(await ws.recv())
            if not reply.get("ok"):
                raise RuntimeError(f"hello refused: {reply}")
        if warm:
            # One untimed round trip first, so starting a world is not in the figures.
            await ws.send(load.frame(index, 0))
            reply = json.loads(await ws.recv())
            if reply.get("ok") is False:
                raise RuntimeError(f"the op was refused: {reply}")
    opened.append((index, ws))


async def _open_all(load: Load, count: int, nursery: trio.Nursery, *, warm: bool) -> list[Any]:
    """Open `count` greeted connections (`warm`: after one round trip each), by index."""
    opened: list[Any] = []
    limiter = trio.CapacityLimiter(64)  # the listen backlog is finite
    async with trio.open_nursery() as openers:
        for i in range(count):
            openers.start_soon(_open, load, i, nursery, opened, limiter, warm)
    return sorted(opened, key=lambda pair: pair[0])


async def _round_trips(load: Load, index: int, ws: Any, start: trio.Event, deadline: list[float],
                       latencies: list[float], sent: list[int]) -> None:
    await start.wait()
    n = sent[index]
    clock = time.perf_counter
    while clock() < deadline[0]:
        text = load.frame(index, n)
        t0 = clock()
        await ws.send(text)
        reply = await ws.recv()
        latencies.append(clock() - t0)
        n += 1
        if n == sent[index] + 1 and '"ok":false' in reply:
            raise RuntimeError(f"the op was refused: {reply}")
    sent[index] = n


async def _turn(load: Load, opened: list[tuple[int, Any]], seconds: float,
                 latencies: list[float], sent: list[int]) -> float:
    """Every connection does round trips back to back for `seconds`; the time it took."""
    start, deadline = trio.Event(), [0.0]
    async with trio.open_nursery() as workers:
        for index, ws in opened:
            workers.start_soon(_round_trips, load, index, ws, start, deadline, latencies, sent)
        await trio.sleep(0.1)  # every worker waits at the start line
        t0 = time.perf_counter()
        deadline[0] = t0 + seconds
        start.set()
    return time.perf_counter() - t0  # until the last reply in flight at the deadline


async def measure_alternating(loads: dict[str, Load], connections: int, seconds: float,
                              turns: int = 1,
                              window: Callable[[], AbstractAsyncContextManager[Any]] | None
                              = None) -> dict[str, dict[str, Any]]:
    """Open `connections` to each load's server, then run round trips for `seconds` per
    load, in `turns` turns that alternate between the loads; figures per load.

    Alternating short turns gives every load the same machine: on a shared or throttled
    machine the speed drifts over tens of seconds, which skews a ratio of two figures
    measured one after the other. `window`, if given, is entered just before the first
    turn and left just after the last (to read server counters over exactly that span).
    """
    async with trio.open_nursery() as nursery:
        opened = {}
        for name, load in loads.items():
            t_open = time.perf_counter()
            opened[name] = await _open_all(load, connections, nursery, warm=True)
            _log(f"  {name}: {connections} connections open in "
                 f"{time.perf_counter() - t_open:.1f} s")
        latencies: dict[str, list[float]] = {name: [] for name in loads}
        elapsed = dict.fromkeys(loads, 0.0)
        rates: dict[str, list[float]] = {name: [] for name in loads}
        sent = {name: [1] * connections for name in loads}  # request 0 was the warm-up
        async with (window or _no_window)():
            for _ in range(turns):
                for name, load in loads.items():
                    done = len(latencies[name])
                    took = await _turn(load, opened[name], seconds / turns, latencies[name],
                                        sent[name])
                    elapsed[name] += took
                    rates[name].append(round((len(latencies[name]) - done) / took, 1))
        async with trio.open_nursery() as closers:
            for pairs in opened.values():
                for _, ws in pairs:
                    closers.start_soon(ws.aclose)
        nursery.cancel_scope.cancel()
    out = {}
    for name, lat in latencies.items():
        lat.sort()
        count = len(lat)
        out[name] = {
            "round_trips": count,
            "round_trips_per_s": round(count / elapsed[name], 1),
            "p50_ms": round(lat[count // 2] * 1e3, 3),
            "p99_ms": round(lat[min(count - 1, int(count * 0.99))] * 1e3, 3),
        }
        if turns > 1:
            out[name]["per_turn_round_trips_per_s"] = rates[name]
    return out


async def measure(load: Load, connections: int, seconds: float,
                  window: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
                  ) -> dict[str, Any]:
    """Open `connections`, run round trips for `seconds`, return rate and latency figures."""
    return (await measure_alternating({"load": load}, connections, seconds, 1, window))["load"]


@asynccontextmanager
async def _no_window() -> AsyncIterator[None]:
    yield


async def idle_memory(server: Server, load: Load, connections: int) -> dict[str, float]:
    """RSS growth of the server per connection held open (greeted, then silent)."""
    await trio.sleep(0.5)
    before = server.rss()
    async with trio.open_nursery() as nursery:
        opened = await _open_all(load, connections, nursery, warm=False)
        await trio.sleep(1.0)  # let the server settle its per-connection buffers
        after = server.rss()
        async with trio.open_nursery() as closers:
            for _, ws in opened:
                closers.start_soon(ws.aclose)
        nursery.cancel_scope.cancel()
    return {"connections": connections, "rss_before_mib": round(before / 2**20, 1),
            "rss_after_mib": round(after / 2**20, 1),
            "kib_per_connection": round((after - before) / connections / 1024, 2)}


def _raise_fd_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard == resource.RLIM_INFINITY else min(hard, max(soft, needed))
    if want > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))  # children inherit it
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < needed:
        _log(f"warning: RLIMIT_NOFILE is {soft}; {needed} descriptors may not fit")


def main(argv: list[str]) -> dict[str, Any]:
    """Run the whole benchmark and return its figures."""
    parser = argparse.ArgumentParser(prog="python -m bench ws")
    parser.add_argument("--connections", default="1,100,1000",
                        help="comma-separated connection counts (default 1,100,1000)")
    parser.add_argument("--seconds", type=float, default=8.0,
                        help="measuring time per server and level (default 8)")
    parser.add_argument("--turns", type=int, default=4,
                        help="alternating turns the seconds are split into (default 4)")
    parser.add_argument("--idle", type=int, default=2000, help="idle connections for memory")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.connections.split(",")]
    _raise_fd_limit(4 * max([*levels, args.idle]) + 256)

    result: dict[str, Any] = {"seconds_per_level": args.seconds, "turns": args.turns,
                              "cpus": os.cpu_count(), "echo": {}, "protocol": {}}
    hello = json.dumps({"op": "hello", "protocol": 1, "client": "bench/1.0"})
    with tempfile.TemporaryDirectory(prefix="bench-ws-", dir=REPO) as data:
        # The data directory sits on the repository's disk: fsync costs what it really costs.
        echo = Server("import bench.ws as b; b.serve_echo()")
        server = Server("import sys, bench.ws as b; b.serve_protocol(sys.argv[1])", data)
        try:
            sample = _bump_frame(0, 0)  # the echo carries frames of the same size
            loads = {"echo": Load(echo.url, None, lambda i, n: sample),
                     "protocol": Load(server.url, hello, _bump_frame)}
            for c in levels:
                _log(f"echo and protocol at {c} connections, {args.turns} turns each")
                figures = trio.run(_measure_grouping, server.url, loads, c, args.seconds,
                                   args.turns)
                for name in loads:
                    result[name][str(c)] = figures[name]
            shared = max(c for c in levels if c <= 100)
            _log(f"protocol, one shared world, at {shared} connections")
            one = {"protocol": Load(server.url, hello, lambda i, n: _bump_frame(-1, n))}
            result["protocol_one_world"] = {str(shared): trio.run(
                _measure_grouping, server.url, one, shared, args.seconds, 1)["protocol"]}
            _log(f"idle memory at {args.idle} connections")
            result["idle_memory"] = trio.run(idle_memory, server, loads["protocol"], args.idle)
        finally:
            echo.close()
            server.close()
    result["ratio_protocol_over_echo"] = {
        str(c): round(result["protocol"][str(c)]["round_trips_per_s"]
                      / result["echo"][str(c)]["round_trips_per_s"], 3) for c in levels}
    return result


def _bump_frame(index: int, n: int) -> str:
    """Request `n` of connection `index` (index -1: the shared world)."""
    world = "shared" if index < 0 else f"c{index}"
    return json.dumps({"id": n + 1, "op": f"{BENCH_KIND}.bump", "to": f"{BENCH_KIND}:{world}",
                       "args": {}}, separators=(",", ":"))


async def _measure_grouping(url: str, loads: dict[str, Load], connections: int,
                            seconds: float, turns: int) -> dict[str, dict[str, Any]]:
    """`measure_alternating`, plus how many appends the store grouped into each commit
    meanwhile (only the protocol load appends)."""
    from protocol.client import Client

    async with Client.connect(url, client="bench-stats/1.0") as c:
        counts: list[dict[str, int]] = []

        @asynccontextmanager
        async def window() -> AsyncIterator[None]:
            counts.append(await c.request(f"{BENCH_KIND}.store", to=f"{BENCH_KIND}:stats"))
            yield
            counts.append(await c.request(f"{BENCH_KIND}.store", to=f"{BENCH_KIND}:stats"))

        figures = await measure_alternating(loads, connections, seconds, turns, window)
    before, after = counts
    figures["protocol"]["appends_per_commit"] = round(
        (after["appends"] - before["appends"]) / max(after["commits"] - before["commits"], 1), 2)
    return figures


def serve_protocol(data_dir: str) -> None:
    """Serve the real app plus the `benchpad` kind, anonymous callers as agents, until killed."""
    from actors.runtime import ActorKind
    from bench._budgets import lifted_budgets
    from server.app import Running, serve
    from server.config import ServerConfig

    config = ServerConfig(host="127.0.0.1", port=0, data_dir=data_dir, open_mode=True,
                          rate=1e9, burst=10**9, budgets=lifted_budgets())
    kinds = [*worlds.kinds(), ActorKind.of(BENCH_PAD)]

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            running: Running = await nursery.start(
                partial(serve, config, kinds=kinds, registry=bench_registry()))
            tune_gc()
            print(f"bench: listening on {running.url}", flush=True)

    trio.run(main)
