"""`python -m bench cluster`: several server processes sharing one PostgreSQL, against the
single-process SQLite server, on the same load.

    python -m bench cluster [--processes 1|3] [--worlds 300] [--clients 200] [--seconds 30]

A private PostgreSQL cluster is started in a temporary directory (server/storage/pg_local.py,
fsync and synchronous_commit on). Then, in turn:

  (a) `sqlite`: one `petridish serve` with its embedded SQLite store;
  (b) `postgres_<N>`: N `petridish serve --store postgresql://... --node nI` processes.

Each gets the same load: `--worlds` counters created through random processes, then
`--clients` websocket clients, each connected to a random process, doing `counter.add`
round trips back to back (each write carries a request id, as the reference clients
send) on random worlds for `--seconds`. Figures: acknowledged writes per second, p50/p99
latency, the share of writes forwarded to another process, the store's commits per
second and appends per commit, notifications received per second (summed over the
processes), and, for N > 1, the re-home time after a `kill -9` of the busiest process
(from the kill until each of its worlds answers a read through a surviving process).
The figures come from the load generator and the processes' /metrics.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import trio

from bench._budgets import budget_args
from server.storage import pg_local

REPO = Path(__file__).resolve().parent.parent
_LISTENING = re.compile(r"listening on http://([\d.]+):(\d+)")
HELLO = json.dumps({"op": "hello", "protocol": 1, "client": "bench-cluster/1.0"})


def _log(message: str) -> None:
    print(f"[bench cluster] {message}", file=sys.stderr, flush=True)


class _Server:
    """One `petridish serve` subprocess (its output goes to a log file)."""

    def __init__(self, data: Path, *args: str) -> None:
        data.mkdir(parents=True, exist_ok=True)
        self.log_path = data / "server.log"
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "serve", "--port", "0", "--data", str(data),
             "--open", *budget_args(), *args], cwd=REPO, env=env, text=True, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.port = 0

    def wait_listening(self) -> None:
        """Read the output until the server listens (the rest goes to the log file)."""
        assert self.proc.stdout is not None
        seen = []
        for line in self.proc.stdout:
            seen.append(line)
            if m := _LISTENING.search(line):
                self.port = int(m.group(2))
                break
        else:
            raise RuntimeError("the server did not start:\n" + "".join(seen))
        log = self.log_path.open("w")
        out = self.proc.stdout

        def drain() -> None:
            for line in out:
                log.write(line)
            log.close()

        import threading

        threading.Thread(target=drain, daemon=True).start()

    @property
    def url(self) -> str:
        """The websocket endpoint."""
        return f"ws://127.0.0.1:{self.port}/ws"

    def metrics(self) -> dict[str, float]:
        """Its /metrics samples."""
        text = httpx.get(f"http://127.0.0.1:{self.port}/metrics", timeout=30).text
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                samples[name] = float(value)
        return samples

    def kill(self) -> None:
        """SIGKILL."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def _start(servers: list[_Server]) -> None:
    for s in servers:
        s.wait_listening()


# ---- the load ---------------------------------------------------------------------------

async def _connect(url: str, nursery: trio.Nursery) -> Any:
    from websockets.trio.client import connect

    ws = await connect(url, compression=None, ping_interval=None, open_timeout=60,
                       proxy=None).connect(nursery)
    await ws.send(HELLO)
    reply = json.loads(await ws.recv())
    if not reply.get("ok"):
        raise RuntimeError(f"hello refused: {reply}")
    return ws


async def _create(urls: list[str], worlds: list[str]) -> None:
    async with trio.open_nursery() as nursery:
        sockets = [await _connect(url, nursery) for url in urls]
        rng = random.Random(1)
        for n, world in enumerate(worlds):
            ws = rng.choice(sockets)
            await ws.send(json.dumps({"id": n, "op": "counter.create", "to": world}))
            reply = json.loads(await ws.recv())
            if not reply.get("ok"):
                raise RuntimeError(f"create refused: {reply}")
        for ws in sockets:
            await ws.aclose()
        nursery.cancel_scope.cancel()


async def _client(index: int, url: str, worlds: list[str], start: trio.Event,
                  deadline: list[float], latencies: list[float], nursery: trio.Nursery) -> None:
    ws = await _connect(url, nursery)
    rng = random.Random(index)
    await start.wait()
    clock = time.perf_counter
    n = 0
    while clock() < deadline[0]:
        n += 1
        frame = json.dumps({"id": n, "op": "counter.add", "to": rng.choice(worlds),
                            "args": {"amount": 1}, "request_id": f"c{index}-{n}"})
        t0 = clock()
        await ws.send(frame)
        reply = await ws.recv()
        latencies.append(clock() - t0)
        if '"ok":false' in reply:
            raise RuntimeError(f"a write was refused: {reply}")
    await ws.aclose()


async def _load(urls: list[str], worlds: list[str], clients: int,
                seconds: float) -> tuple[list[float], float]:
    latencies: list[float] = []
    start, deadline = trio.Event(), [0.0]
    rng = random.Random(2)
    async with trio.open_nursery() as nursery:
        async with trio.open_nursery() as workers:
            for i in range(clients):
                workers.start_soon(_client, i, rng.choice(urls), worlds, start, deadline,
                                   latencies, nursery)
            await trio.sleep(2.0)  # every client connected and waiting
            t0 = time.perf_counter()
            deadline[0] = t0 + seconds
            start.set()
        elapsed = time.perf_counter() - t0
        nursery.cancel_scope.cancel()
    return latencies, elapsed


def _delta(before: list[dict[str, float]], after: list[dict[str, float]], name: str) -> float:
    return sum(a.get(name, 0.0) - b.get(name, 0.0) for b, a in zip(before, after, strict=True))


def _run(servers: list[_Server], worlds: list[str], clients: int,
         seconds: float) -> dict[str, Any]:
    urls = [s.url for s in servers]
    trio.run(_create, urls, worlds)
    before = [s.metrics() for s in servers]
    latencies, elapsed = trio.run(_load, urls, worlds, clients, seconds)
    after = [s.metrics() for s in servers]
    latencies.sort()
    count = len(latencies)
    commits = _delta(before, after, "petridish_store_commits_total")
    appends = _delta(before, after, "petridish_store_appends_total")
    forwarded = _delta(before, after, 'petridish_forwards_total{direction="out"}')
    notes = (_delta(before, after, 'petridish_notifications_total{origin="own"}')
             + _delta(before, after, 'petridish_notifications_total{origin="other"}'))
    return {
        "acked_writes": count,
        "acked_writes_per_s": round(count / elapsed, 1),
        "p50_ms": round(latencies[count // 2] * 1e3, 2),
        "p99_ms": round(latencies[min(count - 1, int(count * 0.99))] * 1e3, 2),
        "forwarded_share": round(forwarded / count, 3) if count else 0.0,
        "store_commits_per_s": round(commits / elapsed, 1),
        "appends_per_commit": round(appends / commits, 2) if commits else 0.0,
        "notifications_per_s": round(notes / elapsed, 1),
        "fenced_appends": _delta(before, after, "petridish_fenced_appends_total"),
        # a healthy run loses no lease: any here means renewals fell behind the load
        "leases_lost": (_delta(before, after, 'petridish_leases_lost_total{reason="lost"}')
                        + _delta(before, after,
                                 'petridish_leases_lost_total{reason="self_fenced"}')),
    }


async def _rehome(urls: list[str], worlds: list[str], killed: float) -> list[float]:
    times: list[float] = []

    async def probe(k: int, world: str, ws: Any) -> None:
        await ws.send(json.dumps({"id": k, "op": "counter.get", "to": world}))
        reply = json.loads(await ws.recv())
        if not reply.get("ok"):
            raise RuntimeError(f"{world} did not answer: {reply}")
        times.append(time.perf_counter() - killed)

    async with trio.open_nursery() as nursery:
        sockets = [await _connect(urls[k % len(urls)], nursery) for k in range(len(worlds))]
        async with trio.open_nursery() as probes:
            for k, world in enumerate(worlds):
                probes.start_soon(probe, k, world, sockets[k])
        nursery.cancel_scope.cancel()
    return sorted(times)


def _kill_busiest(servers: list[_Server], dsn: str) -> dict[str, Any]:
    """kill -9 the process holding the most leases; time until its worlds answer again."""
    import psycopg

    held = [s.metrics().get("petridish_leases_held", 0.0) for s in servers]
    victim = max(range(len(servers)), key=lambda i: held[i])
    with psycopg.connect(dsn, autocommit=True) as conn:
        worlds = [w for (w,) in conn.execute(
            "SELECT world FROM leases WHERE node = %s AND world LIKE 'counter:%%'",
            (f"n{victim}",))]
    servers[victim].kill()
    killed = time.perf_counter()
    survivors = [s.url for i, s in enumerate(servers) if i != victim]
    times = trio.run(_rehome, survivors, worlds, killed)
    return {"killed": f"n{victim}", "worlds": len(worlds),
            "first_s": round(times[0], 2), "median_s": round(statistics.median(times), 2),
            "last_s": round(times[-1], 2)}


def main(argv: list[str]) -> dict[str, Any]:
    """Run the whole benchmark and return its figures."""
    parser = argparse.ArgumentParser(prog="python -m bench cluster")
    parser.add_argument("--processes", type=int, default=3, help="server processes (1 or 3)")
    parser.add_argument("--worlds", type=int, default=300)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args(argv)
    reason = pg_local.unavailable()
    if reason is not None:
        raise SystemExit(f"bench cluster needs PostgreSQL: {reason}")
    worlds = [f"counter:b{k}" for k in range(args.worlds)]
    result: dict[str, Any] = {"cpus": os.cpu_count(), "processes": args.processes,
                              "worlds": args.worlds, "clients": args.clients,
                              "seconds": args.seconds}
    with tempfile.TemporaryDirectory(prefix="bench-cluster-", dir=REPO) as tmp:
        base = Path(tmp)
        _log("single process, SQLite")
        sqlite = [_Server(base / "sqlite")]
        try:
            _start(sqlite)
            result["sqlite_1"] = _run(sqlite, worlds, args.clients, args.seconds)
        finally:
            sqlite[0].kill()
        _log(f"{args.processes} processes, PostgreSQL")
        pg = pg_local.start()
        try:
            dsn = pg.dsn()
            cluster = [_Server(base / f"n{i}", "--store", dsn, "--node", f"n{i}")
                       for i in range(args.processes)]
            try:
                _start(cluster)
                name = f"postgres_{args.processes}"
                result[name] = _run(cluster, worlds, args.clients, args.seconds)
                if args.processes > 1:
                    _log("kill -9 of the busiest process")
                    result[name]["rehome_after_kill"] = _kill_busiest(cluster, dsn)
            except BaseException:
                for i, s in enumerate(cluster):
                    s.kill()
                    _log(f"n{i}'s log ends:\n" + s.log_path.read_text()[-4000:])
                raise
            finally:
                for s in cluster:
                    s.kill()
        finally:
            pg_local.stop(pg)
    return result
