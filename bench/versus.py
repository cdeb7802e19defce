"""`python -m bench versus OLD_TREE`: our server from another checkout beside this one.

The same round trips and fan-out as `bench peers` (bench/_peers_load.py), with only our
server on both sides: one started from `OLD_TREE` (a checkout of an older commit, e.g.
`git worktree add /tmp/old <commit>`), one from this repository, each serving as
`bench peers`' does (`serve_ours`, so the old tree must have bench/_peers_servers.py),
driven by one load generator in turns that alternate between them: this machine's speed
drifts by a third between minutes, and only alternating turns compare two commits.

Prints one JSON object: for each level of connections the figures of `old` and `new`
and their ratios new/old, and the same for the fan-out (writers adding to one world
while spectators watch it), unless `--no-fan`.
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
from bench._peers_sides import Ours
from bench.peers import FAN_KEYS, KIND, RT_KEYS, ratios
from bench.ws import _raise_fd_limit
from server.commands import tune_gc

SERVE = "import sys, bench._peers_servers as s; s.serve_ours(sys.argv[1])"


def _log(message: str) -> None:
    print(f"[bench versus] {message}", file=sys.stderr, flush=True)


def parse(argv: list[str]) -> argparse.Namespace:
    """The options."""
    parser = argparse.ArgumentParser(prog="python -m bench versus")
    parser.add_argument("old", type=Path, help="the other checkout (its repository root)")
    parser.add_argument("--connections", default="100", help="comma-separated levels (100)")
    parser.add_argument("--seconds", type=float, default=18.0,
                        help="measuring time per server and level (18)")
    parser.add_argument("--turns", type=int, default=6, help="alternating turns (6)")
    parser.add_argument("--writers", type=int, default=50, help="fan-out writers (50)")
    parser.add_argument("--spectators", type=int, default=500, help="fan-out spectators (500)")
    parser.add_argument("--fan-seconds", type=float, default=12.0,
                        help="fan-out time per server (12)")
    parser.add_argument("--no-fan", action="store_true", help="round trips only")
    return parser.parse_args(argv)


def main(argv: list[str]) -> dict[str, Any]:
    """Measure both trees; the figures and ratios."""
    args = parse(argv)
    old = args.old.resolve()
    if not (old / "bench" / "_peers_servers.py").is_file():
        return {"skipped": f"{old} has no bench/_peers_servers.py to serve from"}
    levels = [int(x) for x in args.connections.split(",")]
    _raise_fd_limit(3 * max(*levels, args.writers + args.spectators) + 256)
    with tempfile.TemporaryDirectory(prefix="bench-versus-", dir=servers.REPO) as tmp:
        procs = {name: servers.python_server(name, SERVE, Path(tmp), str(Path(tmp) / name),
                                             tree=tree)
                 for name, tree in (("old", old), ("new", servers.REPO))}
        try:
            for proc in procs.values():
                proc.ready()
            return measure(args, levels, procs, old)
        finally:
            for proc in procs.values():
                proc.close()


def measure(args: argparse.Namespace, levels: list[int],
            procs: dict[str, servers.ServerProcess], old: Path) -> dict[str, Any]:
    """Round trips at every level, then the fan-out, turns alternating."""
    sides = []
    for name, proc in procs.items():
        side = Ours(f"ws://{proc.host}:{proc.port}/ws", KIND)
        side.name = name
        sides.append(side)
    tune_gc()
    result: dict[str, Any] = {"old": str(old), "new": str(servers.REPO), "round_trips": {}}
    for level in levels:
        _log(f"round trips at {level} connections, {args.turns} turns each")
        meters = {name: load.Meter(proc.cpu_seconds) for name, proc in procs.items()}
        trio.run(load.round_trips, sides, meters, level, args.seconds, args.turns, _log)
        figures: dict[str, Any] = {name: m.figures() for name, m in meters.items()}
        figures["ratios"] = ratios(figures, RT_KEYS, (("new", "old"),))
        result["round_trips"][str(level)] = figures
    if not args.no_fan:
        _log(f"fan-out: {args.writers} writers, {args.spectators} spectators")
        meters = {name: load.Meter(proc.cpu_seconds) for name, proc in procs.items()}
        fan = trio.run(load.fan_out, sides, meters, args.writers, args.spectators,
                       args.fan_seconds, args.turns, _log)
        fan["ratios"] = ratios(fan, FAN_KEYS, (("new", "old"),))
        result["fan_out"] = fan
    return result
