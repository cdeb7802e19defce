"""`python -m bench ecosystem_live`: 100 runs live at 10 generations a second, 200 spectators.

The real server runs in a subprocess (`petridish serve --open`, SQLite in a temporary
directory on the repository's disk). This process creates `--runs` runs of the pond (three
species, `--size` x `--size` grid), then a child process opens `--spectators` spectator
connections (raw websockets) spread evenly over the runs and subscribes each; once all
have their first snapshot every run is played at `--speed` generations a second, to
generation 180.

Figures:

- `generations_per_s`: generations made per second over all runs, from the `t` stamp of
  each generation event (server side; the first and last generation made while every run
  played), against `target_generations_per_s` (runs x speed); `delivered_per_s`: generation
  events received per second, summed over the spectators.
- `tick_jitter_ms`: how late each generation was made against its run's schedule:
  generation k due at t0 + k / speed, t0 the latest start that no generation of the run
  beat (its earliest generation is on time); a timer that drifts or a server that falls
  behind shows here.
- `spectator_lag_ms`: arrival at a spectator minus the event's `t` (one machine, one wall
  clock; `t` has millisecond resolution).
- `memory_per_run_kib`: the server's resident set growth per run (from its size once
  settled after the start's warm-up), once all were created (generation 0) and at the end
  (every run live at generation 180, frames and coarse history held).
- `restart_load_ms`: the server is then killed and started again on the same data; the
  first `ecosystem.view` of a finished run loads it by re-simulating its 180 generations
  (the restart path): median and max over `--reloads` runs, one at a time.
- `step_overhead`: in this process, best CPU time of 180 generations of the same world as
  one batch `simulate`, through the step API (`engine.step`, one fork per generation, as a
  live run steps), and through the run world's fold (`rules.advance` + `evolve`: frames,
  graphs and coarse history, what the actor does per tick), at `--size` and at 64 x 64;
  ratios against the batch; and `refold_ms_64`, a 64 x 64 run's 180 stored generations
  folded back (a restart's load without the store).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np
import trio
from websockets.trio.client import connect

from bench import ws as ws_bench
from bench._budgets import serve_code

HELLO = json.dumps({"op": "hello", "protocol": 1, "client": "bench-ecosystem/1.0"})
POND = {"world": "A quiet pond where algae bloom and snails graze",
        "threat": "A hungry pike stalks the snails", "reward": "Keep all three alive"}
GENERATIONS = 180


def _log(message: str) -> None:
    print(f"[bench ecosystem_live] {message}", file=sys.stderr, flush=True)


def _connect(url: str) -> Any:
    return connect(url, compression=None, ping_interval=None, open_timeout=60, proxy=None,
                   max_size=None)


async def _call(ws: Any, rid: int, op: str, to: str, args: dict[str, Any]) -> dict[str, Any]:
    await ws.send(json.dumps({"id": rid, "op": op, "to": to, "args": args}))
    while True:
        reply = json.loads(await ws.recv())
        if reply.get("id") == rid:
            if not reply["ok"]:
                raise RuntimeError(f"{op} {to}: {reply['error']}")
            return reply["result"]


async def _call_all(ws: Any, op: str, calls: list[tuple[str, dict[str, Any]]]) -> None:
    """Send every call at once (the server runs up to 32 of a connection's requests at a
    time), then wait for every reply: the runs start together, not one append apart."""
    for rid, (to, args) in enumerate(calls, 1):
        await ws.send(json.dumps({"id": rid, "op": op, "to": to, "args": args}))
    waiting = set(range(1, len(calls) + 1))
    while waiting:
        reply = json.loads(await ws.recv())
        if reply.get("id") in waiting:
            if not reply["ok"]:
                raise RuntimeError(f"{op}: {reply['error']}")
            waiting.discard(reply["id"])


# ---- spectators (a child process) --------------------------------------------------------

async def _spectator(url: str, to: str, out: list[tuple[int, int, float]],
                     limiter: trio.CapacityLimiter, ready: trio.Semaphore) -> None:
    """Subscribe to `to`; record (generation, t, arrival ms) of each generation event until
    the run's end event."""
    await limiter.acquire()  # the listen backlog is finite: open a few at a time
    held = True
    try:
        async with _connect(url) as ws:
            limiter.release()
            held = False
            await _watch(ws, to, out, ready)
    finally:
        if held:
            limiter.release()


async def _watch(ws: Any, to: str, out: list[tuple[int, int, float]],
                 ready: trio.Semaphore) -> None:
    """Hello, subscribe, and record the generation events until the end event."""
    await ws.send(HELLO)
    await ws.recv()
    await ws.send(json.dumps({"id": 1, "op": "subscribe", "to": to}))
    counted = False
    while True:
        frame = await ws.recv()
        now = time.time() * 1000.0
        if '"kind":"snapshot"' in frame[:200]:
            if not counted:
                counted = True
                ready.release()
            continue
        if not frame.startswith('{"topic"'):
            continue
        push = json.loads(frame)
        if push["kind"] != "events":
            raise RuntimeError(f"{to}: a spectator got {push['kind']} {push['data']}")
        done = False
        for event in push["data"]:
            if event["type"] == "generation":
                out.append((event["frame"]["generation"], event["t"], now))
            done = done or event["type"] == "end"
        if done:
            return


async def _spectate(url: str, runs: list[str], count: int) -> list[list[tuple[int, int, float]]]:
    arrivals: list[list[tuple[int, int, float]]] = [[] for _ in range(count)]
    async with trio.open_nursery() as nursery:
        ready = trio.Semaphore(0)
        limiter = trio.CapacityLimiter(64)
        for k, mine in enumerate(arrivals):
            nursery.start_soon(_spectator, url, runs[k % len(runs)], mine, limiter, ready)
        for _ in range(count):
            await ready.acquire()
        print("ready", flush=True)
    return arrivals


def spectate_main(url: str, runs: str, count: int) -> None:
    """Entry point of the spectator process: arrivals as JSON on stdout once every run
    watched has ended."""
    ws_bench._raise_fd_limit(count + 256)
    arrivals = trio.run(_spectate, url, runs.split(","), count)
    sys.stdout.write(json.dumps(arrivals))


class Spectators:
    """The spectators, in a process of their own so that reading their pushes does not
    queue behind this process's requests."""

    def __init__(self, url: str, runs: list[str], count: int) -> None:
        code = ("import sys; from bench.ecosystem_live import spectate_main; "
                "spectate_main(sys.argv[1], sys.argv[2], int(sys.argv[3]))")
        self.proc = subprocess.Popen([sys.executable, "-c", code, url, ",".join(runs),
                                      str(count)], cwd=ws_bench.REPO, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, text=True)

    async def subscribed(self) -> None:
        assert self.proc.stdout is not None
        line = await trio.to_thread.run_sync(self.proc.stdout.readline)
        if line.strip() != "ready":
            raise RuntimeError(f"the spectator process failed: {line!r}")

    async def arrivals(self, timeout: float) -> list[list[tuple[int, int, float]]]:
        assert self.proc.stdout is not None
        with trio.fail_after(timeout):
            out = await trio.to_thread.run_sync(self.proc.stdout.read, abandon_on_cancel=True)
        return [[tuple(a) for a in mine] for mine in json.loads(out)]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


# ---- the live run -------------------------------------------------------------------------

def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    a = np.asarray(values)
    return {"p50": round(float(np.percentile(a, 50)), 1),
            "p99": round(float(np.percentile(a, 99)), 1), "max": round(float(a.max()), 1)}


def _start_server(data: str) -> ws_bench.Server:
    code = serve_code("--open")
    return ws_bench.Server(code, data)


async def _live(args: argparse.Namespace, data: str) -> dict[str, Any]:
    server = _start_server(data)
    runs = [f"ecosystem:bench-{k}" for k in range(args.runs)]
    out: dict[str, Any] = {}
    try:
        rss0 = await _settled_rss(server)
        async with _connect(server.url) as owner:
            await owner.send(HELLO)
            await owner.recv()
            await _call_all(owner, "ecosystem.create", [
                (to, {"answers": POND, "seed": k, "size": args.size})
                for k, to in enumerate(runs)])
            rss_created = server.rss()
            _log(f"{args.runs} runs created; {args.spectators} spectators subscribing")
            spectators = Spectators(server.url, runs, args.spectators)
            try:
                await spectators.subscribed()
                _log(f"playing at {args.speed} generations a second")
                cpu0 = sum(server_cpu(server))
                wall0 = time.perf_counter()
                await _call_all(owner, "ecosystem.control", [
                    (to, {"action": "play", "speed": args.speed}) for to in runs])
                arrivals = await spectators.arrivals(GENERATIONS / args.speed * 4 + 60)
                wall = time.perf_counter() - wall0
                cpu = sum(server_cpu(server)) - cpu0
            finally:
                spectators.close()
            rss_end = server.rss()
        out.update(_figures(arrivals, args, runs))
        out["server_cpu_share"] = round(cpu / wall, 2)
        out["memory_per_run_kib"] = {
            "created": round((rss_created - rss0) / args.runs / 1024, 1),
            "at_180": round((rss_end - rss0) / args.runs / 1024, 1)}
    finally:
        server.close()
    out["restart_load_ms"] = await _restart(data, runs[:args.reloads])
    return out


async def _settled_rss(server: ws_bench.Server, limit: float = 60.0) -> int:
    """The server's resident size once it stops growing (`serve` warms the worlds that
    ask for it, such as the field's solver, in threads after it listens)."""
    before = server.rss()
    with trio.move_on_after(limit):
        while True:
            await trio.sleep(1.0)
            now = server.rss()
            if abs(now - before) < 256 * 1024:
                return now
            before = now
    return server.rss()


def server_cpu(server: ws_bench.Server) -> tuple[float, float]:
    import psutil

    times = psutil.Process(server.proc.pid).cpu_times()
    return times.user, times.system


def _figures(arrivals: list[list[tuple[int, int, float]]], args: argparse.Namespace,
             runs: list[str]) -> dict[str, Any]:
    """Rates, jitter and lag from what the spectators received."""
    period = 1000.0 / args.speed
    made: dict[int, dict[int, int]] = {}  # run index -> generation -> t
    lags: list[float] = []
    delivered = 0
    first_arrival, last_arrival = float("inf"), 0.0
    for k, mine in enumerate(arrivals):
        stamps = made.setdefault(k % len(runs), {})
        for generation, t, now in mine:
            stamps[generation] = t
            lags.append(now - t)
            delivered += 1
            first_arrival, last_arrival = min(first_arrival, now), max(last_arrival, now)
    late: list[float] = []
    starts, ends = [], []
    for stamps in made.values():
        gens = sorted(g for g in stamps if g > 0)  # generation 0 was made at create
        if not gens:
            continue
        # The run's schedule: generation g due at t0 + g / speed, t0 the latest start that
        # no generation beat (the earliest one is on time, none is early).
        t0 = min(stamps[g] - g * period for g in gens)
        late += [stamps[g] - (t0 + g * period) for g in gens]
        starts.append(stamps[gens[0]])
        ends.append(stamps[gens[-1]])
    total = sum(len([g for g in s if g > 0]) for s in made.values())
    span = (max(ends) - min(starts)) / 1000.0 if starts else 0.0
    return {"runs": args.runs, "spectators": args.spectators, "speed": args.speed,
            "size": args.size, "target_generations_per_s": args.runs * args.speed,
            "generations_made": total,
            "generations_per_s": round(total / span, 1) if span else 0.0,
            "delivered_per_s": round(delivered / ((last_arrival - first_arrival) / 1000.0), 1)
            if last_arrival > first_arrival else 0.0,
            "tick_jitter_ms": _percentiles(late), "spectator_lag_ms": _percentiles(lags)}


async def _restart(data: str, runs: list[str]) -> dict[str, float]:
    """Start the server again on `data`; time the first view of each finished run."""
    server = _start_server(data)
    try:
        times = []
        async with _connect(server.url) as c:
            await c.send(HELLO)
            await c.recv()
            for k, to in enumerate(runs):
                start = time.perf_counter()
                view = await _call(c, k + 1, "ecosystem.view", to, {})
                times.append((time.perf_counter() - start) * 1000.0)
                assert view["view"]["generation"] == GENERATIONS, view["view"]["generation"]
    finally:
        server.close()
    return {"runs": len(runs), "p50": round(statistics.median(times), 1),
            "max": round(max(times), 1)}


# ---- the step API against the batch --------------------------------------------------------

def _step_overhead(size: int, repeats: int) -> dict[str, Any]:
    from actors.ecosystem import engine, rules
    from actors.ecosystem.interpret import DeterministicInterpreter
    from actors.ecosystem.run import simulate

    setup = DeterministicInterpreter().interpret(POND)
    config, graph = setup.config, setup.graph

    def batch() -> None:
        simulate(config, 3, GENERATIONS, graph=graph, size=size)

    def stepped() -> None:
        state = engine.start(config, graph, 3, size)
        for _ in range(GENERATIONS):
            state, _frame = engine.step(state, ())

    def world() -> None:
        run = rules.WORLD.initial("ecosystem:bench")
        events = rules.setup_events(POND, setup, "bench", 3, size)
        assert not isinstance(events, rules.Refusal)
        while True:
            for event in events:
                run = rules.WORLD.evolve(run, event)
            if run.ended is not None:
                return
            events = rules.advance(run)

    best = {"batch": float("inf"), "step": float("inf"), "world": float("inf")}
    for _ in range(repeats):  # interleaved, so a busy moment hurts all three alike
        for name, work in (("batch", batch), ("step", stepped), ("world", world)):
            start = time.process_time()
            work()
            best[name] = min(best[name], time.process_time() - start)
    return {"size": size, "best_cpu_s": {k: round(v, 4) for k, v in best.items()},
            "step_vs_batch": round(best["step"] / best["batch"], 3),
            "world_vs_batch": round(best["world"] / best["batch"], 3)}


def _refold_ms(size: int) -> float:
    """A run's 180 stored generations folded back, as a restart's load does."""
    from actors.ecosystem import rules
    from actors.ecosystem.interpret import DeterministicInterpreter

    setup = DeterministicInterpreter().interpret(POND)
    run = rules.WORLD.initial("ecosystem:bench")
    stored = []
    events = rules.setup_events(POND, setup, "bench", 3, size)
    assert not isinstance(events, rules.Refusal)
    while events:
        for event in events:
            run = rules.WORLD.evolve(run, event)
            stored.append(rules.WORLD.codec.encode(event, run))
        events = rules.advance(run)
    start = time.perf_counter()
    again = rules.WORLD.initial("ecosystem:bench")
    for data in stored:
        again = rules.WORLD.evolve(again, rules.WORLD.codec.decode(data))
    assert again.generation == GENERATIONS
    return round((time.perf_counter() - start) * 1000.0, 1)


def main(argv: list[str]) -> dict[str, Any]:
    """Run the benchmark; returns the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench ecosystem_live")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--spectators", type=int, default=200)
    parser.add_argument("--speed", type=int, default=10, help="generations a second, 1..30")
    parser.add_argument("--size", type=int, default=16, help="grid side of the live runs")
    parser.add_argument("--reloads", type=int, default=10, help="runs loaded after the restart")
    parser.add_argument("--repeats", type=int, default=7, help="of the step-overhead timings")
    args = parser.parse_args(argv)
    ws_bench._raise_fd_limit(args.spectators + 512)
    with tempfile.TemporaryDirectory(dir=ws_bench.REPO, prefix=".bench-ecosystem-") as data:
        out = trio.run(_live, args, data)
    _log("step API against the batch simulation")
    out["step_overhead"] = [_step_overhead(size, args.repeats)
                            for size in sorted({args.size, 64})]
    out["refold_ms_64"] = _refold_ms(64)
    out["machine"] = {"cpus": os.cpu_count(), "load_1m": round(os.getloadavg()[0], 2)}
    return out
