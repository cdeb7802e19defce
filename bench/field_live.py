"""`python -m bench field_live`: one field under 50 committing agents and 500 spectators.

The real server runs in a subprocess (`petridish serve --open`, SQLite with
synchronous=FULL in a temporary directory on the repository's disk) and starts a scatter
field. This load process then opens `--agents` agent connections and `--spectators`
spectator connections (raw websockets). Spectators subscribe to the field; agents join,
reveal and commit small batches of correct cells back to back for `--seconds`, each write
with the `expected_revision` they last saw. After `stale_revision` they resend at the
revision the refusal names after a jittered pause, and after STALE_RETRIES such refusals
observe again, like examples/field_agent.py; but their pause (`_pause`) keeps doubling
with every refusal since their last landed write, across observes, up to MAX_PAUSE,
where the example agent's starts again after each observe. With 50 agents racing for one
field-wide revision the example's short pauses make a storm of refusals and observes
that saturates the server (measured: 17-22 commits/s, commit p99 140-160 ms, 130-150
observes/s); a capped exponential backoff is what a client under contention should do,
and the figures below say how much it retries (stale shares, settle times, observes). The
load generator reads the field's secret (the solution)
from the server's store, so agents never guess: this measures the server, not a solver.

Figures: commits per second (acknowledged, non-stale), p50/p99 commit latency (send of
the accepted attempt to its reply), p50/p99 settle time (first send of a batch to its
acceptance: every stale retry and pause included), the share of `stale_revision`
replies among commit replies (and among reveal replies), and spectator lag
p50/p99 (time from a commit's acknowledgement to the first push at or past its revision
arriving at a spectator, over every spectator and commit), and visible p50/p99 (from the
send of the accepted commit to that push: its latency and its lag together, what a
watcher sees of an agent's move; a server that acknowledges sooner shows a longer lag
for the same push). `--rate` paces the agents to a total commit rate, so two servers can
be compared at the same load. For comparison, the bare echo
round trips per second of `bench ws` (bench/ws.py's echo server, 100 connections) are
measured in the same run. The agents play from this process, the spectators from a
child process of their own (so neither queues behind the other); at high rates the
figures still include the load processes' own queueing on this shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
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
from bench._wsclient import TEXT, WsClient
from examples.field_agent import BACKOFF, STALE_RETRIES
from protocol.client import Pace

_REV = re.compile(rb'"rev":\s*(\d+)')
HELLO = json.dumps({"op": "hello", "protocol": 1, "client": "bench-field/1.0"})
BATCH = 4  # cells per commit
MAX_PAUSE = 0.64  # seconds: the longest pause after stale_revision


def _pause(refusals: int, rng: random.Random) -> float:
    """Seconds to wait after the `refusals`-th stale_revision since the last landed write:
    jittered, doubling from the example agent's first pause up to MAX_PAUSE."""
    return rng.uniform(0.0, min(BACKOFF * 2**refusals, MAX_PAUSE))


def _log(message: str) -> None:
    print(f"[bench field_live] {message}", file=sys.stderr, flush=True)


class Figures:
    """What every connection records."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.settled: list[float] = []  # first attempt to acceptance, retries included
        self.stale = 0
        self.reveals = self.stale_reveals = 0
        self.observes = 0  # during the timed window
        self.acks: dict[int, float] = {}  # revision -> when its commit was acknowledged
        self.sent: dict[int, float] = {}  # revision -> when its accepted commit was sent
        self.arrivals: list[list[tuple[int, float]]] = []  # per spectator: (rev, time)


def _connect(url: str) -> Any:
    return connect(url, compression=None, ping_interval=None, open_timeout=60, proxy=None,
                   max_size=None)


async def _hello(ws: Any) -> Pace | None:
    """Say hello; the pace the server asks of this connection (its frames per second)."""
    await ws.send(HELLO)
    return Pace.of_hello(json.loads(await ws.recv()).get("result") or {})


async def _call(ws: Any, rid: int, op: str, to: str, args: dict,
                pace: Pace | None = None) -> dict:
    """One request and its reply; with `pace`, sent when the connection's bucket allows
    (an agent with fast replies would otherwise outrun it and be refused `rate_limited`,
    as a real client is: protocol/client.py paces the same way)."""
    if pace is not None:
        await pace.spend()
    await ws.send(json.dumps({"id": rid, "op": op, "to": to, "args": args}))
    while True:
        reply = json.loads(await ws.recv())
        if reply.get("id") == rid:
            return reply


async def _spectator(url: str, to: str, arrivals: list[tuple[int, float]],
                     limiter: trio.CapacityLimiter, ready: trio.Semaphore) -> None:
    """One spectator on the lean client (bench/_wsclient.py): the `websockets` client's
    own cost per frame (~150 us) would make 500 of them the slowest part of a push's way
    to its watchers, and the lag a figure of this process rather than the server's."""
    async with limiter:  # the listen backlog is finite: open a few at a time
        ws = await WsClient.connect(url)
    try:
        await ws.send(HELLO.encode(), TEXT)
        await ws.recv()
        await ws.send(json.dumps({"id": 1, "op": "subscribe", "to": to}).encode(), TEXT)
        clock = time.perf_counter
        while True:
            frame = await ws.recv()
            now = clock()
            if b'"kind":"snapshot"' in frame[:200]:
                ready.release()  # counted in once its snapshot arrived
            elif frame.startswith(b'{"topic"'):
                m = _REV.search(frame, 0, 200)
                if m:
                    arrivals.append((int(m.group(1)), now))
    finally:
        with trio.CancelScope(shield=True):
            await ws.stream.aclose()


async def _spectate(url: str, to: str, count: int) -> list[list[tuple[int, float]]]:
    """Subscribe `count` spectators; print `ready`; record arrivals until stdin closes."""
    arrivals: list[list[tuple[int, float]]] = [[] for _ in range(count)]
    async with trio.open_nursery() as nursery:
        ready = trio.Semaphore(0)
        limiter = trio.CapacityLimiter(64)
        for mine in arrivals:
            nursery.start_soon(_spectator, url, to, mine, limiter, ready)
        for _ in range(count):
            await ready.acquire()
        print("ready", flush=True)
        await trio.to_thread.run_sync(sys.stdin.read)  # the parent closes it: stop
        nursery.cancel_scope.cancel()
    return arrivals


def spectate_main(url: str, to: str, count: int) -> None:
    """Entry point of the spectator process: arrivals as JSON on stdout at the end."""
    ws_bench._raise_fd_limit(count + 256)
    arrivals = trio.run(_spectate, url, to, count)
    sys.stdout.write(json.dumps(arrivals))


class Spectators:
    """The spectators, in a process of their own so that reading 500 sockets' pushes does
    not queue behind (or in front of) the agents' requests in this process. Arrival times
    are `time.perf_counter()`, the system's monotonic clock, comparable across processes."""

    def __init__(self, url: str, to: str, count: int) -> None:
        code = "import sys; from bench.field_live import spectate_main; " \
               "spectate_main(sys.argv[1], sys.argv[2], int(sys.argv[3]))"
        self.proc = subprocess.Popen([sys.executable, "-c", code, url, to, str(count)],
                                     cwd=ws_bench.REPO, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    async def subscribed(self) -> None:
        """Wait until every spectator has its snapshot."""
        assert self.proc.stdout is not None
        line = await trio.to_thread.run_sync(self.proc.stdout.readline)
        if line.strip() != "ready":
            raise RuntimeError(f"the spectator process failed: {line!r}")

    async def arrivals(self) -> list[list[tuple[int, float]]]:
        """Stop the spectators; per spectator, (revision, arrival time) of each push."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        out = await trio.to_thread.run_sync(self.proc.stdout.read)
        return [[(r, t) for r, t in mine] for mine in json.loads(out)]

    def close(self) -> None:
        """Make sure the process is gone."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


async def _agent(url: str, to: str, solution: np.ndarray, G: int, fig: Figures,
                 start: trio.Event, deadline: list[float], seed: int, pace: float) -> None:
    async with _connect(url) as ws:
        bucket = await _hello(ws)
        await _play(ws, to, solution, G, fig, start, deadline, random.Random(seed), pace,
                    bucket)


async def _play(ws: Any, to: str, solution: np.ndarray, G: int, fig: Figures,
                start: trio.Event, deadline: list[float], rng: random.Random,
                pace: float, bucket: Pace | None) -> None:
    """Play until the deadline; with `pace` > 0 seconds, start a new commit batch at
    most once per `pace` (its stale retries are not paced). Every request waits for the
    connection's `bucket` (the server's frame rate)."""
    rid = iter(range(1, 1 << 30))

    async def call(op: str, args: dict) -> dict:
        return await _call(ws, next(rid), op, to, args, bucket)

    joined = await call("field.join", {"name": "bench"})
    agent = joined["result"]["agent"]
    rev = joined["result"]["revision"]
    pending: list[int] = []  # cells of our revealed tiles still to commit
    frontier = [joined["result"]["seed_tile"]]
    obs = (await call("field.observe", {"agent": agent}))["result"]
    tiles = {t["id"]: t for t in obs["tiles"]}
    stale = 0  # stale_revision refusals since the last observe or success
    contended = 0  # stale_revision refusals since the last success (sets the pause)
    await start.wait()
    clock = time.perf_counter
    first_try: float | None = None  # when the pending commit batch was first sent
    slot = clock() + rng.uniform(0.0, pace)  # when the next batch may start (with `pace`)
    while clock() < deadline[0]:
        if stale > STALE_RETRIES or (not pending and not any(
                tiles.get(t, {}).get("status") == "hidden" for t in frontier)):
            obs = (await call("field.observe", {"agent": agent}))["result"]
            fig.observes += 1
            tiles = {t["id"]: t for t in obs["tiles"]}
            rev, stale = obs["revision"], 0
            frontier = [t for t in obs["frontier"] if tiles[t]["status"] == "hidden"]
            if not frontier and not pending:
                return  # this agent's corner is done
            continue
        if not pending:
            tile = tiles[next(t for t in frontier if tiles.get(t, {}).get("status") == "hidden")]
            reply = await call("field.reveal", {
                "agent": agent, "tile": tile["id"], "expected_revision": rev})
            fig.reveals += 1
            if not reply["ok"]:
                code = reply["error"]["code"]
                rev = reply["error"]["detail"].get("revision", rev)
                if code == "stale_revision":
                    fig.stale_reveals += 1
                    await trio.sleep(_pause(contended, rng))
                    stale += 1
                    contended += 1
                elif code == "not_hidden":
                    tile["status"] = "revealed"
                continue
            rev, stale, contended = reply["result"]["revision"], 0, 0
            tile["status"] = "revealed"
            known = {c for c, _ in reply["result"]["givens"]}
            pending = [(tile["y0"] + ly + dy) * G + tile["x0"] + lx + dx
                       for lx, ly, w, h in tile["rects"] for dy in range(h) for dx in range(w)]
            pending = [c for c in pending if c not in known]
            continue
        batch, rest = pending[:BATCH], pending[BATCH:]
        if first_try is None and pace:  # a fixed rate: this batch waits for its slot
            await trio.sleep(max(0.0, slot - clock()))
            slot = max(slot + pace, clock())
        if bucket is not None:  # (before the clock starts: the wait is the client's)
            await bucket.spend()
        t0 = clock()
        first_try = t0 if first_try is None else first_try
        reply = await _call(ws, next(rid), "field.commit", to, {
            "agent": agent, "cells": [[c, int(solution[c])] for c in batch],
            "expected_revision": rev, "intent": "bench"})
        t1 = clock()
        if not reply["ok"]:
            if reply["error"]["code"] != "stale_revision":
                raise RuntimeError(f"commit refused: {reply['error']}")
            fig.stale += 1
            rev = reply["error"]["detail"]["revision"]
            await trio.sleep(_pause(contended, rng))
            stale += 1
            contended += 1
            continue
        fig.latencies.append(t1 - t0)
        fig.settled.append(t1 - first_try)
        pending, first_try, stale, contended = rest, None, 0, 0
        result = reply["result"]
        if result["revision"] > rev:
            fig.acks[result["revision"]] = t1
            fig.sent[result["revision"]] = t0
        rev = result["revision"]
        frontier = result["frontier"] or frontier


async def _truth(data: str, game: str) -> tuple[np.ndarray, int]:
    from actors.field.generate import Field
    from server.storage import SqliteEventStore

    async with SqliteEventStore.in_directory(data) as store:
        snap = await store.load_snapshot(f"fieldtruth:{game}")
    field = Field.from_dict(snap.data)
    return field.solution, field.manifest.G


async def _run(url: str, data: str, agents: int, spectators: int, seconds: float,
               size: int, server_pid: int, rate: float) -> dict[str, Any]:
    async with _connect(url) as ctl:
        await _hello(ctl)
        return await _drive(ctl, url, data, agents, spectators, seconds, size, server_pid,
                            rate)


def _cpu_seconds(pids: dict[str, int]) -> dict[str, float]:
    """User plus system CPU seconds each process has used so far."""
    import psutil

    return {name: sum(psutil.Process(pid).cpu_times()[:2]) for name, pid in pids.items()}


async def _drive(ctl: Any, url: str, data: str, agents: int, spectators: int, seconds: float,
                 size: int, server_pid: int, rate: float) -> dict[str, Any]:
    to, game = "field:bench", "bench"
    await _call(ctl, 1, "field.start", to, {"size": size, "seed": 1})
    while not (await _call(ctl, 2, "field.rules", to, {}))["ok"]:
        await trio.sleep(0.2)
    solution, G = await _truth(data, game)
    fig = Figures()
    start, deadline = trio.Event(), [0.0]
    watchers = Spectators(url, to, spectators)
    try:
        await watchers.subscribed()
        _log(f"{spectators} spectators subscribed")
        async with trio.open_nursery() as players:
            for k in range(agents):
                players.start_soon(_agent, url, to, solution, G, fig, start, deadline, k,
                                   agents / rate if rate else 0.0)
            await trio.sleep(2.0)  # joins and first observes, untimed
            pids = {"server": server_pid, "spectators": watchers.proc.pid,
                    "agents": os.getpid()}
            cpu0, load0 = _cpu_seconds(pids), os.getloadavg()[0]
            t0 = time.perf_counter()
            deadline[0] = t0 + seconds
            start.set()
        elapsed = time.perf_counter() - t0
        cpu1, load1 = _cpu_seconds(pids), os.getloadavg()[0]
        await trio.sleep(1.0)  # the last pushes arrive
        final = (await _call(ctl, 3, "field.observe", to, {"rect": [0, 0, 1, 1]}))["result"]
        fig.arrivals = await watchers.arrivals()
    finally:
        watchers.close()
    lat = np.sort(np.array(fig.latencies))
    settled = np.sort(np.array(fig.settled))
    lags, visible = [], []
    ack_revs = np.array(sorted(fig.acks))
    ack_times = np.array([fig.acks[r] for r in ack_revs])
    sent_times = np.array([fig.sent[r] for r in ack_revs])
    for arrivals in fig.arrivals:
        if not arrivals:
            continue
        revs = np.array([r for r, _ in arrivals])
        times = np.array([t for _, t in arrivals])
        first = np.searchsorted(revs, ack_revs)  # the first push at or past each revision
        ok = first < len(revs)
        lags.append(times[first[ok]] - ack_times[ok])
        visible.append(times[first[ok]] - sent_times[ok])
    lag = np.sort(np.concatenate(lags)) if lags else np.zeros(1)
    seen = np.sort(np.concatenate(visible)) if visible else np.zeros(1)
    commits = len(lat)
    pct = lambda a, q: round(float(a[min(len(a) - 1, int(len(a) * q))]) * 1e3, 2)
    return {"agents": agents, "spectators": spectators, "seconds": round(elapsed, 2),
            "target_commits_per_s": rate or None,
            "field_size": size, "commits": commits,
            "commits_per_s": round(commits / elapsed, 1),
            "commit_p50_ms": pct(lat, 0.5), "commit_p99_ms": pct(lat, 0.99),
            "settle_p50_ms": pct(settled, 0.5), "settle_p99_ms": pct(settled, 0.99),
            "stale_share": round(fig.stale / max(1, fig.stale + commits), 3),
            "observes_per_s": round(fig.observes / elapsed, 1),
            "reveal_stale_share": round(fig.stale_reveals / max(1, fig.reveals), 3),
            "spectator_lag_p50_ms": pct(lag, 0.5), "spectator_lag_p99_ms": pct(lag, 0.99),
            "visible_p50_ms": pct(seen, 0.5), "visible_p99_ms": pct(seen, 0.99),
            "final_revision": final["revision"],
            # Cores each process kept busy over the timed window, and the machine's
            # one-minute load average before and after: the context of every figure.
            "cores_used": {k: round((cpu1[k] - cpu0[k]) / elapsed, 2) for k in pids},
            "load_average": [round(load0, 2), round(load1, 2)],
            "goals": {"spectator_lag_p99_ms": 250, "commit_p99_ms": 100}}


def main(argv: list[str]) -> dict[str, Any]:
    """Run the echo baseline and the field load; return the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench field_live")
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--spectators", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--size", type=int, default=160, help="scatter field side")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="commits per second all agents together aim at (0: as fast as "
                        "they can), to compare servers at the same load")
    args = parser.parse_args(argv)
    ws_bench._raise_fd_limit(2 * (args.agents + args.spectators) + 256)
    result: dict[str, Any] = {}
    echo = ws_bench.Server("import bench.ws as b; b.serve_echo()")
    try:
        _log("echo baseline at 100 connections")
        sample = json.dumps({"id": 1, "op": "field.commit", "to": "field:bench", "args": {}})
        load = ws_bench.Load(echo.url, None, lambda i, n: sample)
        result["echo_100"] = trio.run(ws_bench.measure, load, 100, min(args.seconds, 4.0))
    finally:
        echo.close()
    with tempfile.TemporaryDirectory(prefix="bench-field-", dir=ws_bench.REPO) as data:
        server = ws_bench.Server(serve_code("--open"), data)
        try:
            _log(f"field: {args.agents} agents, {args.spectators} spectators")
            result["field"] = trio.run(_run, server.url, data, args.agents, args.spectators,
                                       args.seconds, args.size, server.proc.pid, args.rate)
        finally:
            server.close()
    return result
