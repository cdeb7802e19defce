"""`python -m bench floor`: what any Python server would pay for our durable add, beside
our server and Colyseus's in-memory room, in the same run.

Issue 19 asks for a durable add at >= 0.6x the round trips of Colyseus's in-memory room
and at most 2x its CPU. This measures how far down a Python server can go at all: three
bare loops (bench/_floor_server.py: one `select.epoll` loop, no validation, budget, actor
or metric), `floor_memory` (the count in a dict), `floor_sqlite` (each pass's adds
committed to SQLite in the loop's thread) and `floor_writer` (committed by a writer
process over a pipe, the shape DESIGN gives our store), with `ours` (as `bench peers`
serves it) and `colyseus_memory` (when Node is here, as `bench peers` installs it).

One load generator (bench/_peers_load.py) drives them at each level in alternating turns.
Prints one JSON object: each server's figures and, per level, each one's ratios to
Colyseus's in-memory room, the two unmet goals' measures (round trips per second, the
server's CPU per round trip, all its processes).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio

from bench import _peers_load as load
from bench import _peers_servers as servers
from bench._peers_sides import Colyseus, Ours, Side
from bench.peers import KIND, ratios
from bench.ws import _raise_fd_limit
from server.commands import tune_gc

FLOORS = ("floor_memory", "floor_sqlite", "floor_writer")
KEYS = ("round_trips_per_s", "server_cpu_us_per_round_trip", "p99_ms")


def _log(message: str) -> None:
    print(f"[bench floor] {message}", file=sys.stderr, flush=True)


def parse(argv: list[str]) -> argparse.Namespace:
    """The options."""
    parser = argparse.ArgumentParser(prog="python -m bench floor")
    parser.add_argument("--connections", default="100", help="comma-separated levels (100)")
    parser.add_argument("--seconds", type=float, default=12.0,
                        help="measuring time per server and level (12)")
    parser.add_argument("--turns", type=int, default=4, help="alternating turns (4)")
    parser.add_argument("--no-peer", action="store_true",
                        help="leave Colyseus out (it is left out without Node too)")
    return parser.parse_args(argv)


def main(argv: list[str]) -> dict[str, Any]:
    """Start the servers, measure, stop them; the figures and ratios."""
    args = parse(argv)
    levels = [int(x) for x in args.connections.split(",")]
    no_peer = "--no-peer" if args.no_peer else servers.why_no_node()
    if no_peer is None:
        servers.install(_log)
    _raise_fd_limit(6 * max(levels) + 256)
    with tempfile.TemporaryDirectory(prefix="bench-floor-", dir=servers.REPO) as tmp:
        procs: dict[str, servers.ServerProcess] = {}
        try:
            for name in FLOORS:
                procs[name] = servers.python_server(
                    name, "import sys, bench._floor_server as f; f.serve(*sys.argv[1:])",
                    Path(tmp), name.removeprefix("floor_"), str(Path(tmp) / name))
            procs["ours"] = servers.python_server(
                "ours", "import sys, bench._peers_servers as s; s.serve_ours(sys.argv[1])",
                Path(tmp), str(Path(tmp) / "ours"))
            if no_peer is None:
                procs["colyseus_memory"] = servers.node_server("colyseus_memory", Path(tmp),
                                                               "colyseus", "memory")
            for proc in procs.values():
                proc.ready()
            result = measure(args, levels, procs)
        finally:
            for proc in procs.values():
                proc.close()
    if no_peer is not None:
        result["peer_left_out"] = no_peer
    return result


def measure(args: argparse.Namespace, levels: list[int],
            procs: dict[str, servers.ServerProcess]) -> dict[str, Any]:
    """Round trips at every level, turns alternating between every server."""
    sides: list[Side] = []
    for name, proc in procs.items():
        if name == "colyseus_memory":
            sides.append(Colyseus(name, proc.host, proc.port))
            continue
        side = Ours(f"ws://{proc.host}:{proc.port}/ws", KIND)
        side.name = name
        sides.append(side)
    tune_gc()
    pairs = tuple((name, "colyseus_memory") for name in (*FLOORS, "ours"))
    result: dict[str, Any] = {"round_trips": {}}
    for level in levels:
        _log(f"round trips at {level} connections, {args.turns} turns each")
        meters = {name: load.Meter(proc.cpu_seconds) for name, proc in procs.items()}
        trio.run(load.round_trips, sides, meters, level, args.seconds, args.turns, _log)
        figures: dict[str, Any] = {name: m.figures() for name, m in meters.items()}
        figures["ratios"] = ratios(figures, KEYS, pairs)
        result["round_trips"][str(level)] = figures
    return result
