"""`python -m bench store`: appends per second and per commit, SQLite vs PostgreSQL.

Each level runs S streams (1 and 100 by default), one task per stream appending one
small event at a time (the next append waits for the last one's answer, as a world's
actor does), for `--seconds` per backend and level, split into `--turns` turns that
alternate between the backends (the machine's speed drifts). Both stores keep their
durability: SQLite WAL with synchronous=FULL (server/storage/sqlite.py), PostgreSQL with
fsync and synchronous_commit on, in a private cluster started for the run
(server/storage/pg_local.py) on the same disk unless `--dsn` names one. Each stream is
claimed first, so PostgreSQL's appends take the fenced path the server will use.

Reported per backend and level: appends/s, appends per commit (group commit), p50/p99
latency of one append (ms); and PostgreSQL's rate over SQLite's. On a shared 2-core
machine the database server, the writer and this process share the cores: indicative.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from actors.store import EventStore
from server.storage import SqliteEventStore, pg_local
from server.storage.postgres import PostgresEventStore

EVENT = {"t": 1764000000000, "op": "bump", "by": "bench", "value": 12345}


def _log(message: str) -> None:
    print(f"[bench store] {message}", file=sys.stderr, flush=True)


def _percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


async def _turn(store: EventStore, streams: list[str], revs: dict[str, int],
                seconds: float) -> tuple[int, int, list[float]]:
    """Append back to back on every stream for `seconds`; (appends, commits, latencies)."""
    before = store.statistics()
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def writer(stream: str) -> None:
        while (start := time.perf_counter()) < deadline:
            revs[stream] = await store.append(stream, revs[stream], [EVENT])
            latencies.append(time.perf_counter() - start)

    async with trio.open_nursery() as nursery:
        for stream in streams:
            nursery.start_soon(writer, stream)
    after = store.statistics()
    return after.appends - before.appends, after.commits - before.commits, latencies


async def _run(args: argparse.Namespace, dsn: str, data: Path) -> dict[str, Any]:
    levels = [int(x) for x in args.streams.split(",")]
    result: dict[str, Any] = {}
    async with SqliteEventStore.in_directory(data) as sqlite, \
            PostgresEventStore(dsn) as postgres:
        stores: dict[str, EventStore] = {"sqlite": sqlite, "postgres": postgres}
        for level in levels:
            streams = [f"bench:{level}-{i}" for i in range(level)]
            revs = {name: {} for name in stores}
            totals = {name: [0, 0, 0.0, []] for name in stores}  # appends, commits, s, lat
            for name, store in stores.items():
                for s in streams:
                    revs[name][s] = (await store.claim(s))[1]
            for turn in range(args.turns):
                for name, store in stores.items():
                    t0 = time.perf_counter()
                    appends, commits, lat = await _turn(store, streams, revs[name],
                                                        args.seconds / args.turns)
                    total = totals[name]
                    total[0] += appends
                    total[1] += commits
                    total[2] += time.perf_counter() - t0
                    total[3].extend(lat)
                    _log(f"{level} streams, turn {turn + 1}, {name}: {appends} appends")
            row: dict[str, Any] = {}
            for name, (appends, commits, seconds, lat) in totals.items():
                lat.sort()
                row[name] = {"appends_per_s": round(appends / seconds),
                             "appends_per_commit": round(appends / max(commits, 1), 1),
                             "p50_ms": round(_percentile(lat, 0.5) * 1000, 2),
                             "p99_ms": round(_percentile(lat, 0.99) * 1000, 2)}
            row["postgres_over_sqlite"] = round(
                row["postgres"]["appends_per_s"] / max(row["sqlite"]["appends_per_s"], 1), 2)
            result[str(level)] = row
        result["postgres_settings"] = postgres.settings
        result["sqlite_settings"] = sqlite.settings
    return result


def main(argv: list[str]) -> dict[str, Any]:
    """Run the benchmark and return its figures."""
    parser = argparse.ArgumentParser(prog="python -m bench store")
    parser.add_argument("--streams", default="1,100",
                        help="comma-separated concurrent stream counts (default 1,100)")
    parser.add_argument("--seconds", type=float, default=6.0,
                        help="measuring time per backend and level (default 6)")
    parser.add_argument("--turns", type=int, default=3,
                        help="alternating turns the seconds are split into (default 3)")
    parser.add_argument("--dsn", help="an existing PostgreSQL (default: a private cluster)")
    args = parser.parse_args(argv)
    server = None
    if args.dsn is None:
        reason = pg_local.unavailable()
        if reason is not None:
            raise SystemExit(reason)
        _log("starting a private PostgreSQL cluster")
        server = pg_local.start()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-store-") as data:
            figures = trio.run(_run, args, args.dsn or server.dsn(), Path(data))
    finally:
        if server is not None:
            pg_local.stop(server)
    return {"cpus": os.cpu_count(), "seconds_per_level": args.seconds, "turns": args.turns,
            "event": EVENT, "levels": figures,
            "note": "indicative: a shared machine; the database server, SQLite's writer "
                    "process and this process share its cores"}
