"""`python -m bench peers`: our durable counter beside a real peer, Colyseus 0.16 (Node).

Five servers, each in its own process, on this machine:

  ours             our server (`serve_ours`: `petridish serve --open` with the token bucket
                   lifted) on a temporary data directory, with its counter world: each
                   add is one durable event (SQLite, WAL, synchronous=FULL, group commit);
  colyseus_memory  Colyseus 0.16 (`@colyseus/core` + `@colyseus/ws-transport`) with a
                   counter room that keeps the count in memory;
  colyseus_sqlite  the same room writing each add to SQLite before replying
                   (better-sqlite3, the same tables and pragmas, one commit per add);
  echo_python      our stack's ceiling: a bare Starlette + Hypercorn websocket echo;
  echo_node        Node's: a bare `ws` echo.

One load generator (this process: trio and a lean websocket client, speaking each
server's own wire protocol, bench/_peers_load.py) drives them all in alternating turns,
so every server meets the same machine. It measures round trips (one add in flight per
connection) at 1, 100 and 1,000 connections with the server's CPU per round trip (from
/proc, all of its processes) and the client's; at 100, the same with Colyseus's in-memory
room paced at the rate ours made (`equal_rate`: a server busy to the full reads many
frames per wakeup and costs less per round trip, so each server's CPU is also compared
at one rate); the idle memory per connection at 2,000;
and fan-out (50 writers adding to one world or room, 500 spectators watching it):
deliveries per second and the lag from an add's send to the spectator, each server at
its own best, then with Colyseus's in-memory room's writers paced at the adds ours made
(`fan_out_equal_rate`: the same adds to fan out, so the lags compare at one load; each
server delivers them its own way, Colyseus in patches at its 20 Hz). Every figure of
ours comes with its ratio to each Colyseus room; `goals` checks issue 19's. Progress
goes to stderr; the result is one JSON object. Without Node the result says why it
skipped.

The Node packages are installed into a cache outside the repository on the first run
(bench/_peers_servers.py). The data directories sit on the repository's disk, as in
`bench ws`: an fsync costs what it really costs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio

from bench import _colyseus as colyseus
from bench import _peers_load as load
from bench import _peers_servers as servers
from bench._peers_sides import Colyseus, Echo, Ours, Side, add_request, client_cost
from bench._wsclient import BINARY, TEXT
from bench.ws import _raise_fd_limit
from server.commands import tune_gc

# Our counter world: its ops are `KIND.add {amount, note}` and `KIND.get`, created with
# `lobby.create {kind: KIND, name}`.
KIND = "counter"

PEERS = ("colyseus_memory", "colyseus_sqlite")
ECHOES = ("echo_python", "echo_node")
FULL = {"connections": "1,100,1000", "seconds": 6.0, "turns": 3, "idle": 2000,
        "writers": 50, "spectators": 500, "fan_seconds": 6.0}
QUICK = {"connections": "1,100", "seconds": 1.0, "turns": 2, "idle": 200,
         "writers": 10, "spectators": 100, "fan_seconds": 1.0}


def _log(message: str) -> None:
    print(f"[bench peers] {message}", file=sys.stderr, flush=True)


def _ratio(ours: float | None, peer: float | None) -> float | None:
    return None if not ours or not peer else round(ours / peer, 3)


def ratios(figures: dict[str, dict[str, Any]], keys: tuple[str, ...],
           pairs: tuple[tuple[str, str], ...]) -> dict[str, dict[str, float | None]]:
    """`a/b` -> key -> the ratio of `figures[a][key]` to `figures[b][key]`, per pair."""
    return {f"{a}/{b}": {k: _ratio(figures[a][k], figures[b][k]) for k in keys}
            for a, b in pairs if a in figures and b in figures}


RT_KEYS = ("round_trips_per_s", "p50_ms", "p99_ms", "server_cpu_us_per_round_trip",
           "client_cpu_us_per_round_trip")
RT_PAIRS = (("ours", "colyseus_memory"), ("ours", "colyseus_sqlite"),
            ("echo_python", "echo_node"))
FAN_KEYS = ("deliveries_per_s", "lag_p50_ms", "lag_p99_ms", "adds_per_s", "server_cpu_cores")


def parse(argv: list[str]) -> argparse.Namespace:
    """The options (`--quick` swaps in the short defaults)."""
    parser = argparse.ArgumentParser(prog="python -m bench peers")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: " + ", ".join(f"{k}={v}" for k, v in QUICK.items()))
    parser.add_argument("--connections", help=f"comma-separated levels ({FULL['connections']})")
    parser.add_argument("--seconds", type=float,
                        help=f"measuring time per server and level ({FULL['seconds']})")
    parser.add_argument("--turns", type=int, help=f"alternating turns ({FULL['turns']})")
    parser.add_argument("--idle", type=int, help=f"idle connections for memory ({FULL['idle']})")
    parser.add_argument("--writers", type=int, help=f"fan-out writers ({FULL['writers']})")
    parser.add_argument("--spectators", type=int,
                        help=f"fan-out spectators ({FULL['spectators']})")
    parser.add_argument("--fan-seconds", type=float,
                        help=f"fan-out time per server ({FULL['fan_seconds']})")
    parser.add_argument("--install-only", action="store_true",
                        help="install the Node packages into the cache and stop")
    args = parser.parse_args(argv)
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def main(argv: list[str]) -> dict[str, Any]:
    """Run the whole benchmark and return its figures (or why it skipped)."""
    args = parse(argv)
    reason = servers.why_no_node()
    if reason is not None:
        _log(f"skipped: {reason}")
        return {"skipped": reason}
    servers.install(_log)
    if args.install_only:
        return {"installed": str(servers.cache_dir()), "packages": servers.package_versions()}
    levels = [int(x) for x in args.connections.split(",")]
    # The client holds every server's connections at once (servers inherit the limit).
    _raise_fd_limit(max(5 * max(levels), args.idle, 3 * (args.writers + args.spectators)) + 256)
    with tempfile.TemporaryDirectory(prefix="bench-peers-", dir=servers.REPO) as tmp:
        return run(args, levels, Path(tmp))


def run(args: argparse.Namespace, levels: list[int], tmp: Path) -> dict[str, Any]:
    """Start the servers in `tmp`, measure, stop them; the result."""
    procs: dict[str, servers.ServerProcess] = {}
    try:
        procs["ours"] = servers.python_server(
            "ours", "import sys, bench._peers_servers as s; s.serve_ours(sys.argv[1])", tmp,
            str(tmp / "ours"))
        procs["colyseus_memory"] = servers.node_server("colyseus_memory", tmp, "colyseus",
                                                       "memory")
        procs["colyseus_sqlite"] = servers.node_server("colyseus_sqlite", tmp, "colyseus",
                                                       "sqlite", str(tmp / "colyseus.sqlite3"))
        procs["echo_python"] = servers.python_server(
            "echo_python", "import bench.ws as b; b.serve_echo()", tmp)
        procs["echo_node"] = servers.node_server("echo_node", tmp, "echo")
        for proc in procs.values():  # they start side by side
            proc.ready()
        return measure(args, levels, procs)
    except BaseException:
        for proc in procs.values():
            if proc.log_path.exists() and proc.log_path.stat().st_size:
                _log(f"{proc.name} said: {proc.log_path.read_text()[-2000:]}")
        raise
    finally:
        for proc in procs.values():
            proc.close()


def _sides(procs: dict[str, servers.ServerProcess]) -> dict[str, Side]:
    ours = procs["ours"]
    sides: dict[str, Side] = {"ours": Ours(f"ws://{ours.host}:{ours.port}/ws", KIND)}
    for name in PEERS:
        sides[name] = Colyseus(name, procs[name].host, procs[name].port)
    sample = add_request(KIND, f"{KIND}:c0")  # both echoes carry our add's text frame
    for name in ECHOES:
        path = "/ws" if name == "echo_python" else "/"
        sides[name] = Echo(name, f"ws://{procs[name].host}:{procs[name].port}{path}", sample)
    return sides


def _client_costs(sides: dict[str, Side]) -> dict[str, float]:
    """The client's CPU per add on each kind of side with the network left out: the check
    that the client does the same work whichever server it drives."""
    ours, peer, echo = sides["ours"], sides["colyseus_memory"], sides["echo_node"]
    assert isinstance(ours, Ours) and isinstance(peer, Colyseus) and isinstance(echo, Echo)
    reply = json.dumps({"id": 1, "ok": True, "result": {"total": 1, "adds": 1, "revision": 2}},
                       separators=(",", ":")).encode()
    added = colyseus.message("added", {"total": 1, "adds": 1, "revision": 1})
    return {"ours": client_cost(ours, ours.add_frame(f"{KIND}:c0"), reply, TEXT),
            "colyseus": client_cost(peer, peer.add_frame, added, BINARY),
            "echo": client_cost(echo, echo.add_frame, echo.sample, TEXT)}


def measure(args: argparse.Namespace, levels: list[int],
            procs: dict[str, servers.ServerProcess]) -> dict[str, Any]:
    """Every figure, with the ratios and the goals."""
    sides = _sides(procs)
    tune_gc()  # the client's collector as the servers': young passes rare, full ones rarer
    result: dict[str, Any] = {
        "setup": {
            "cpus": os.cpu_count(), "node": servers.node_version(),
            "packages": servers.package_versions(), "kind": KIND,
            "seconds_per_level": args.seconds, "turns": args.turns,
            "load_generator": "one Python process (trio, bench/_wsclient.py)",
            "colyseus_store": procs["colyseus_sqlite"].lines[0],
            "client_cpu_us_per_add_without_network": _client_costs(sides),
        },
        "round_trips": {},
    }
    # First, while the servers are fresh: no memory freed by earlier phases to reuse.
    _log(f"idle memory at {args.idle} connections")
    idle: dict[str, Any] = {"connections": args.idle}
    for name in ("ours", "colyseus_memory"):
        idle[name] = trio.run(load.idle_memory, sides[name], args.idle, procs[name].rss,
                              procs[name].collect_garbage)
    idle["ratio_ours/colyseus_memory"] = _ratio(idle["ours"]["kib_per_connection"],
                                                idle["colyseus_memory"]["kib_per_connection"])
    result["idle_memory"] = idle

    for c in levels:
        _log(f"round trips at {c} connections, {args.turns} turns per server")
        meters = {name: load.Meter(procs[name].cpu_seconds) for name in sides}
        trio.run(load.round_trips, list(sides.values()), meters, c, args.seconds, args.turns,
                 _log)
        figures = {name: meter.figures() for name, meter in meters.items()}
        figures["ratios"] = ratios(figures, RT_KEYS, RT_PAIRS)
        result["round_trips"][str(c)] = figures

    level = goal_level(levels)
    _log(f"equal rate at {level} connections: colyseus_memory paced at ours' rate")
    meters = {name: load.Meter(procs[name].cpu_seconds) for name in RT_PAIRS[0]}
    trio.run(load.round_trips, [sides["ours"], sides["colyseus_memory"]], meters, level,
             args.seconds, args.turns, _log, {"colyseus_memory": "ours"})
    figures = {name: meter.figures() for name, meter in meters.items()}
    figures["ratios"] = ratios(figures, RT_KEYS, RT_PAIRS[:1])
    result["equal_rate"] = {"connections": level, **figures}

    _log(f"fan-out: {args.writers} writers, {args.spectators} spectators")
    fan_sides = [sides[name] for name in ("ours", *PEERS)]
    meters = {side.name: load.Meter(procs[side.name].cpu_seconds) for side in fan_sides}
    fan = trio.run(load.fan_out, fan_sides, meters, args.writers, args.spectators,
                   args.fan_seconds, args.turns, _log)
    fan["ratios"] = ratios(fan, FAN_KEYS, RT_PAIRS[:2])
    result["fan_out"] = {"writers": args.writers, "spectators": args.spectators, **fan}

    _log("fan-out at equal rate: colyseus_memory's writers paced at ours' adds")
    meters = {name: load.Meter(procs[name].cpu_seconds) for name in RT_PAIRS[0]}
    fan = trio.run(load.fan_out, [sides["ours"], sides["colyseus_memory"]], meters,
                   args.writers, args.spectators, args.fan_seconds, args.turns, _log,
                   {"colyseus_memory": "ours"})
    fan["ratios"] = ratios(fan, FAN_KEYS, RT_PAIRS[:1])
    result["fan_out_equal_rate"] = fan
    result["goals"] = goals(result)
    return result


def goal_level(levels: list[int]) -> int:
    """The level the goals are read at: 100 connections, or the nearest measured."""
    return min(levels, key=lambda c: abs(c - 100))


def goals(result: dict[str, Any]) -> dict[str, Any]:
    """Issue 19's goals against this run (at 100 connections, or the nearest level)."""
    rt = result["round_trips"]
    level = str(goal_level([int(c) for c in rt]))
    mem, sql = rt[level]["ratios"]["ours/colyseus_memory"], \
        rt[level]["ratios"]["ours/colyseus_sqlite"]
    equal = result["equal_rate"]["ratios"]["ours/colyseus_memory"]
    fan = result["fan_out"]["ratios"]["ours/colyseus_memory"]
    equal_fan = result["fan_out_equal_rate"]["ratios"]["ours/colyseus_memory"]

    def goal(value: float | None, target: float, at_least: bool) -> dict[str, Any]:
        met = value is not None and (value >= target if at_least else value <= target)
        return {"ratio": value, "target": f"{'>=' if at_least else '<='} {target}", "met": met}

    return {
        "at_connections": int(level),
        "durable_rate_vs_colyseus_sqlite": goal(sql["round_trips_per_s"], 1.0, True),
        "durable_rate_vs_colyseus_memory": goal(mem["round_trips_per_s"], 0.6, True),
        "cpu_per_round_trip_vs_colyseus_memory": {
            **goal(mem["server_cpu_us_per_round_trip"], 2.0, False),
            "at_equal_rate": equal["server_cpu_us_per_round_trip"],
            "note": "the goal is read with each server at its own best rate; at_equal_rate "
                    "is the same ratio with Colyseus paced at ours' rate (equal_rate)",
        },
        "idle_memory_vs_colyseus_memory": goal(
            result["idle_memory"]["ratio_ours/colyseus_memory"], 1.0, False),
        "fan_out_lag_p99_vs_colyseus_memory": {
            **goal(equal_fan["lag_p99_ms"], 1.0, False),
            "adds_ratio": equal_fan["adds_per_s"],
            "deliveries_ratio": equal_fan["deliveries_per_s"],
            "at_full_rate": fan["lag_p99_ms"],
            "full_rate_adds_ratio": fan["adds_per_s"],
            "full_rate_deliveries_ratio": fan["deliveries_per_s"],
            "note": "the goal is at the same rate: read with Colyseus's writers paced at the "
                    "adds ours made (fan_out_equal_rate), each server delivering them its "
                    "own way (deliveries_ratio); at_full_rate is each at its own best",
        },
    }
