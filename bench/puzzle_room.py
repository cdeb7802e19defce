"""`python -m bench puzzle_room`: 200 puzzle rooms under agents moving as fast as they are
answered, 500 spectators, hints, and the room's cost over the bare engine.

The real server runs in a subprocess (`petridish serve --open`, SQLite with synchronous=FULL
in a temporary directory on the repository's disk). Each of `--rooms` agents creates its own
room on an open level (BABA IS YOU and nothing to win) and moves right, left, right, ... back
to back, each move at the revision its last reply named (a reset every 1,990 moves keeps the
level under its move limit); `--spectators` connections, from a child process, subscribe to
the rooms round robin. Figures:

* `load`: moves per second (accepted, over every room), move p50/p99 (send to reply), and
  spectator lag p50/p99 (a move's reply to the first push at or past its revision arriving
  at each of the room's spectators).
* `hints`: the latency of `puzzle.hint` (budget 8000: 16,000 expansions) from the start of
  each starter level, on an otherwise idle server, after one warm-up hint that starts the
  worker process.
* `hints_vs_rooms`: what a hint search does to the other rooms: the same load with and
  without one client asking back-to-back hints (budget 2000: 4,000 expansions, ~2 s here, on
  a level the search cannot finish, so each makes all of them), for the search in a worker
  process (what the room does) and in a worker thread (`PuzzleActor.search_in_process =
  False`, a second server).
* `engine`: turns per second in this process of the bare engine (`turn.advance` with its
  record, as the room plays it), of the room's table (decide, fold, stored JSON, reply as the
  wire encodes it) and of a live room actor (mailbox, batch, in-memory store, answer), and the
  ratios to the bare engine.

Agents and the control client use bench/_wsclient.py's lean client (the `websockets` client
costs more CPU per round trip than the server's move). On this shared 2-core machine every
figure includes the load processes' own share of the CPU (`cores_used`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np
import trio

from actors.puzzle.level import parse_level
from actors.puzzle.pack import pack_of
from actors.puzzle.share import make_link
from bench import ws as ws_bench
from bench._budgets import serve_code
from bench._wsclient import TEXT, WsClient, frame
from tests.puzzle.boards import crowd_level

LEVEL = {"id": "bench", "width": 10, "height": 6,
         "objects": [{"id": "b", "noun": "baba", "x": 1, "y": 3}],
         "text": [{"id": "t1", "word": "baba", "x": 0, "y": 0},
                  {"id": "t2", "word": "is", "x": 1, "y": 0},
                  {"id": "t3", "word": "you", "x": 2, "y": 0}]}
RESET_AT = 1_990  # moves of one level's play before the agent resets (the limit is 2,000)
HELLO = frame(json.dumps({"op": "hello", "protocol": 1, "client": "bench-puzzle/1.0"})
              .encode(), TEXT)
_REV = re.compile(rb'"revision":(\d+)')
_PUSH = re.compile(rb'^\{"topic":"puzzle:r(\d+)","rev":(\d+)')
THREADS = "import actors.puzzle.actor as a; a.PuzzleActor.search_in_process = False; "


def _log(message: str) -> None:
    print(f"[bench puzzle_room] {message}", file=sys.stderr, flush=True)


def _link(level: dict[str, Any] = LEVEL) -> str:
    """The share link of one level."""
    return make_link(pack_of(parse_level(level)))


def _pct(values: list[float] | np.ndarray, q: float) -> float:
    a = np.sort(np.asarray(values, dtype=float))
    return round(float(a[min(len(a) - 1, int(len(a) * q))]) * 1e3, 2) if len(a) else 0.0


class Conn:
    """One lean connection doing request -> reply round trips."""

    def __init__(self, ws: WsClient) -> None:
        self.ws = ws
        self.rid = 0

    @classmethod
    async def open(cls, url: str) -> Conn:
        ws = await WsClient.connect(url)
        await ws.send_frame(HELLO)
        await ws.recv()
        return cls(ws)

    async def call(self, op: str, to: str, args: dict[str, Any]) -> bytes:
        """Send one request; its reply's raw bytes (pushes are skipped)."""
        self.rid += 1
        tag = b'{"id":%d,' % self.rid
        await self.ws.send_frame(frame(json.dumps(
            {"id": self.rid, "op": op, "to": to, "args": args}).encode(), TEXT))
        while True:
            reply = await self.ws.recv()
            if reply.startswith(tag):
                return reply


def ok(reply: bytes) -> dict[str, Any]:
    """The result of an ok reply."""
    data = json.loads(reply)
    if not data["ok"]:
        raise RuntimeError(f"refused: {data['error']}")
    return data["result"]


# ---- the load: agents and spectators -----------------------------------------------------

class Load:
    """What the agents record during one timed window."""

    def __init__(self, rooms: int) -> None:
        self.latencies: list[float] = []
        self.acks: list[dict[int, float]] = [{} for _ in range(rooms)]  # rev -> reply time
        self.timing = False


async def _agent(conn: Conn, k: int, load: Load, stop: trio.Event) -> None:
    to = f"puzzle:r{k}"
    rev = int(_REV.search(await conn.call("puzzle.view", to, {})).group(1))
    moves = len(ok(await conn.call("puzzle.view", to, {}))["moves"])
    clock = time.perf_counter
    acks, lat = load.acks[k], load.latencies
    right = True
    while not stop.is_set():
        if moves >= RESET_AT:
            rev = ok(await conn.call("puzzle.reset", to, {}))["room"]["revision"]
            moves = 0
            continue
        t0 = clock()
        reply = await conn.call("puzzle.move", to, {"dir": "right" if right else "left",
                                                    "expected_revision": rev})
        t1 = clock()
        if b'"ok":true' not in reply[:40]:
            raise RuntimeError(f"a move was refused: {reply[:300]!r}")
        rev = int(_REV.search(reply).group(1))
        moves += 1
        right = not right
        if load.timing:
            lat.append(t1 - t0)
            acks[rev] = t1


async def _spectate(url: str, rooms: int, count: int) -> list[tuple[int, list[tuple[int, float]]]]:
    """Subscribe `count` spectators round robin; print `ready`; record arrivals until stdin
    closes. Per spectator: (room, [(rev, time), ...])."""
    out: list[tuple[int, list[tuple[int, float]]]] = [(i % rooms, []) for i in range(count)]
    limiter = trio.CapacityLimiter(64)
    ready = trio.Semaphore(0)

    async def one(room: int, arrivals: list[tuple[int, float]]) -> None:
        async with limiter:
            conn = await Conn.open(url)
        ws = conn.ws
        await ws.send_frame(frame(json.dumps({"id": 1, "op": "subscribe",
                                              "to": f"puzzle:r{room}"}).encode(), TEXT))
        clock = time.perf_counter
        while True:
            data = await ws.recv()
            now = clock()
            if data.startswith(b'{"id":1,'):
                ready.release()
            elif m := _PUSH.match(data):
                arrivals.append((int(m.group(2)), now))

    async with trio.open_nursery() as nursery:
        for room, arrivals in out:
            nursery.start_soon(one, room, arrivals)
        for _ in range(count):
            await ready.acquire()
        print("ready", flush=True)
        await trio.to_thread.run_sync(sys.stdin.read)
        nursery.cancel_scope.cancel()
    return out


def spectate_main(url: str, rooms: int, count: int) -> None:
    """Entry point of the spectator process: arrivals as JSON on stdout at the end."""
    ws_bench._raise_fd_limit(count + 256)
    sys.stdout.write(json.dumps(trio.run(_spectate, url, rooms, count)))


class Spectators:
    """The spectators in a process of their own (perf_counter is the system's monotonic
    clock, comparable across processes)."""

    def __init__(self, url: str, rooms: int, count: int) -> None:
        code = ("import sys; from bench.puzzle_room import spectate_main; "
                "spectate_main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))")
        self.proc = subprocess.Popen([sys.executable, "-c", code, url, str(rooms), str(count)],
                                     cwd=ws_bench.REPO, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    async def subscribed(self) -> None:
        assert self.proc.stdout is not None
        line = await trio.to_thread.run_sync(self.proc.stdout.readline)
        if line.strip() != "ready":
            raise RuntimeError(f"the spectator process failed: {line!r}")

    async def arrivals(self) -> list[tuple[int, list[tuple[int, float]]]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        out = await trio.to_thread.run_sync(self.proc.stdout.read)
        return [(room, [(r, t) for r, t in mine]) for room, mine in json.loads(out)]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def _lags(load: Load, arrivals: list[tuple[int, list[tuple[int, float]]]]) -> list[float]:
    lags = []
    for room, mine in arrivals:
        acks = load.acks[room]
        if not acks or not mine:
            continue
        revs = np.array(sorted(acks))
        times = np.array([acks[r] for r in revs])
        got = np.array([r for r, _ in mine])
        at = np.array([t for _, t in mine])
        first = np.searchsorted(got, revs)  # the first push at or past each revision
        seen = first < len(got)
        lags.extend((at[first[seen]] - times[seen]).tolist())
    return lags


def _cpu(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far of each process, and of the server's children (the store's writer,
    the search worker) together."""
    import psutil

    out = {name: sum(psutil.Process(pid).cpu_times()[:2]) for name, pid in pids.items()}
    children = psutil.Process(pids["server"]).children(recursive=True)
    out["server_children"] = sum(sum(c.cpu_times()[:2]) for c in children)
    return out


async def _window(conns: list[Conn], seconds: float, pids: dict[str, int],
                  during: Any = None) -> tuple[Load, float, dict[str, float]]:
    """Run every agent for `seconds` (plus a second of warm-up); `during(stop)` runs beside
    them in the timed part. The load, the elapsed time and the cores each process used."""
    load = Load(len(conns))
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        for k, conn in enumerate(conns):
            nursery.start_soon(_agent, conn, k, load, stop)
        await trio.sleep(1.0)
        cpu0 = _cpu(pids)
        t0 = time.perf_counter()
        load.timing = True
        if during is not None:
            nursery.start_soon(during, stop)
        await trio.sleep(seconds)
        load.timing = False
        elapsed = time.perf_counter() - t0
        cores = {k: round((v - cpu0.get(k, 0.0)) / elapsed, 2) for k, v in _cpu(pids).items()}
        stop.set()
    return load, elapsed, cores


def _figures(load: Load, elapsed: float, cores: dict[str, float]) -> dict[str, Any]:
    return {"moves": len(load.latencies),
            "moves_per_s": round(len(load.latencies) / elapsed, 1),
            "move_p50_ms": _pct(load.latencies, 0.5), "move_p99_ms": _pct(load.latencies, 0.99),
            "cores_used": cores}


async def _hinter(conn: Conn, to: str, latencies: list[float], stop: trio.Event) -> None:
    """Back-to-back hints on a level the search cannot finish within 2 s (`crowd_level`)."""
    while not stop.is_set():
        t0 = time.perf_counter()
        ok(await conn.call("puzzle.hint", to, {"budget_ms": 2000}))
        latencies.append(time.perf_counter() - t0)


async def _starter_hints(url: str) -> dict[str, Any]:
    from actors.puzzle.catalog import bundled

    conn = await Conn.open(url)
    ok(await conn.call("puzzle.create", "puzzle:warm", {"pack": "starter"}))
    ok(await conn.call("puzzle.hint", "puzzle:warm", {"budget_ms": 8000}))  # starts the worker
    latencies, statuses = [], {}
    for lv in bundled("starter").levels:
        to = f"puzzle:h-{lv.id}"
        ok(await conn.call("puzzle.create", to, {"pack": "starter", "level": lv.id}))
        t0 = time.perf_counter()
        hint = ok(await conn.call("puzzle.hint", to, {"budget_ms": 8000}))
        latencies.append(time.perf_counter() - t0)
        statuses[hint["status"]] = statuses.get(hint["status"], 0) + 1
    return {"levels": len(latencies), "statuses": statuses,
            "hint_p50_ms": _pct(latencies, 0.5), "hint_p99_ms": _pct(latencies, 0.99),
            "hint_max_ms": _pct(latencies, 1.0)}


async def _rooms(url: str, rooms: int) -> list[Conn]:
    """One connection per room, each room created on the open level."""
    link = _link()
    limiter = trio.CapacityLimiter(32)
    conns: list[Conn] = [None] * rooms  # type: ignore[list-item]

    async def setup(k: int) -> None:
        async with limiter:
            conns[k] = await Conn.open(url)
            ok(await conns[k].call("puzzle.create", f"puzzle:r{k}", {"link": link}))

    async with trio.open_nursery() as nursery:
        for k in range(rooms):
            nursery.start_soon(setup, k)
    _log(f"{rooms} rooms created")
    return conns


async def _serve_load(url: str, args: argparse.Namespace, server_pid: int) -> dict[str, Any]:
    """The load with spectators, then the starter pack's hints, on one server."""
    conns = await _rooms(url, args.rooms)
    watchers = Spectators(url, args.rooms, args.spectators)
    try:
        await watchers.subscribed()
        pids = {"server": server_pid, "load": os.getpid(), "spectators": watchers.proc.pid}
        _log(f"{args.spectators} spectators subscribed")
        load, elapsed, cores = await _window(conns, args.seconds, pids)
        lags = _lags(load, await watchers.arrivals())
    finally:
        watchers.close()
    out: dict[str, Any] = {"load": {
        **_figures(load, elapsed, cores), "rooms": args.rooms, "spectators": args.spectators,
        "seconds": round(elapsed, 2), "pushes_matched": len(lags),
        "spectator_lag_p50_ms": _pct(lags, 0.5), "spectator_lag_p99_ms": _pct(lags, 0.99)}}
    _log(f"load: {out['load']['moves_per_s']} moves/s")
    out["hints"] = await _starter_hints(url)
    _log(f"hints: {out['hints']}")
    return out


async def _compare(servers: dict[str, tuple[str, int]], args: argparse.Namespace
                   ) -> dict[str, Any]:
    """The same load on each server with and without back-to-back hints, in alternating
    windows round after round (the machine's speed drifts; each condition meets it alike)."""
    conns, hinters = {}, {}
    for mode, (url, _) in servers.items():
        conns[mode] = await _rooms(url, args.rooms)
        hinters[mode] = await Conn.open(url)
        ok(await hinters[mode].call("puzzle.create", "puzzle:hinter",
                                    {"link": _link(crowd_level())}))
    seen: dict[str, dict[str, list[Any]]] = {
        mode: {"without_hints": [], "with_hints": []} for mode in servers}
    hints = {mode: 0 for mode in servers}
    for round_ in range(args.rounds):
        for mode, (_, pid) in servers.items():
            pids = {"server": pid, "load": os.getpid()}
            seen[mode]["without_hints"].append(await _window(conns[mode], args.gil_seconds,
                                                             pids))
            done: list[float] = []
            seen[mode]["with_hints"].append(await _window(
                conns[mode], args.gil_seconds, pids,
                lambda stop, m=mode, d=done: _hinter(hinters[m], "puzzle:hinter", d, stop)))
            hints[mode] += len(done)
            _log(f"round {round_ + 1} {mode}: " + ", ".join(
                f"{k} {v[-1][0].latencies and round(len(v[-1][0].latencies) / v[-1][1])} "
                "moves/s" for k, v in seen[mode].items()))
    out: dict[str, Any] = {}
    for mode, conditions in seen.items():
        out[mode] = {"hints": hints[mode]}
        for name, windows in conditions.items():
            latencies = [x for load, _, _ in windows for x in load.latencies]
            elapsed = sum(e for _, e, _ in windows)
            out[mode][name] = {
                "moves_per_s": round(len(latencies) / elapsed, 1),
                "move_p50_ms": _pct(latencies, 0.5), "move_p99_ms": _pct(latencies, 0.99),
                "rounds_moves_per_s": [round(len(load.latencies) / e, 1)
                                       for load, e, _ in windows],
                "server_cores": [cores["server"] for _, _, cores in windows]}
    return out


def _with_servers(prefixes: dict[str, str], run: Any) -> Any:
    """Start a server per prefix (each on its own data), `trio.run(run(servers))`, stop them."""
    with tempfile.TemporaryDirectory(prefix="bench-puzzle-", dir=ws_bench.REPO) as data:
        servers = {}
        try:
            for mode, prefix in prefixes.items():
                os.mkdir(f"{data}/{mode}")
                servers[mode] = ws_bench.Server(serve_code("--open", prefix=prefix), f"{data}/{mode}")
            return trio.run(run, {m: (s.url, s.proc.pid) for m, s in servers.items()})
        finally:
            for server in servers.values():
                server.close()


# ---- the room's cost over the bare engine, in this process ---------------------------------

def engine_figures(turns: int) -> dict[str, Any]:
    """Turns per second: bare engine, the room's table, a live room actor (in-process)."""
    from actors.puzzle import WORLD
    from actors.puzzle.board import Context
    from actors.puzzle.turn import advance, settle_initial
    from actors.world import Caller, Ctx
    from protocol.convert import unstructure
    from protocol.ops import puzzle as ops

    level = parse_level(LEVEL)
    ctx = Context(level)
    board = settle_initial(ctx, level.objects)
    dirs = ("right", "left")
    t0 = time.perf_counter()
    for i in range(turns):
        board = advance(ctx, board, dirs[i % 2]).board
    bare = turns / (time.perf_counter() - t0)

    caller = Caller("bench", "agent")
    state = WORLD.initial("bench")
    for event in WORLD.moves["puzzle.create"].decide(state, ops.CreateArgs(link=_link()),
                                                     Ctx(caller, 0, 0)):
        state = WORLD.evolve(state, event)
    move = WORLD.moves["puzzle.move"]
    t0 = time.perf_counter()
    for i in range(turns):
        args = ops.MoveArgs(dirs[i % 2], state.rev)
        events = move.decide(state, args, Ctx(caller, 0, state.rev))
        for event in events:
            state = WORLD.evolve(state, event)
            json.dumps(WORLD.codec.encode(event, state))
        json.dumps(unstructure(move.result(state, events, args)))
    table = turns / (time.perf_counter() - t0)
    actor = trio.run(_actor_rate, turns)
    return {"turns": turns, "engine_turns_per_s": round(bare), "table_turns_per_s":
            round(table), "actor_turns_per_s": round(actor),
            "table_over_engine": round(table / bare, 3),
            "actor_over_engine": round(actor / bare, 3)}


async def _actor_rate(turns: int) -> float:
    from actors.puzzle import WORLD
    from actors.runtime import ActorKind, Call, open_directory
    from actors.store import MemoryEventStore
    from protocol.convert import unstructure
    from protocol.ops import puzzle as ops

    async with open_directory(MemoryEventStore(), [ActorKind.of(WORLD)]) as directory:
        await directory.ask("puzzle:bench", Call("puzzle.create", ops.CreateArgs(link=_link()),
                                                 "agent", "bench"))
        rev, dirs = 1, ("right", "left")
        t0 = time.perf_counter()
        for i in range(turns):
            reply = await directory.ask("puzzle:bench", Call(
                "puzzle.move", ops.MoveArgs(dirs[i % 2], rev), "agent", "bench"))
            json.dumps(unstructure(reply))
            rev = reply.room.revision
        return turns / (time.perf_counter() - t0)


def main(argv: list[str]) -> dict[str, Any]:
    """Run every part; return the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench puzzle_room")
    parser.add_argument("--rooms", type=int, default=200)
    parser.add_argument("--spectators", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=10.0, help="the load's timed window")
    parser.add_argument("--gil-seconds", type=float, default=4.0,
                        help="each window of hints_vs_rooms")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of hints_vs_rooms (each: every server without, then "
                             "with hints)")
    parser.add_argument("--turns", type=int, default=1500,
                        help=f"turns of the engine figures (at most {RESET_AT}: one play)")
    args = parser.parse_args(argv)
    if not 0 < args.turns <= RESET_AT:
        parser.error(f"--turns must be 1 to {RESET_AT}")
    ws_bench._raise_fd_limit(4 * (args.rooms + args.spectators) + 256)
    result: dict[str, Any] = {"engine": engine_figures(args.turns)}
    _log(f"engine: {result['engine']}")
    result.update(_with_servers({"process": ""}, lambda servers: _serve_load(
        servers["process"][0], args, servers["process"][1])))
    result["hints_vs_rooms"] = _with_servers(
        {"search_in_process": "", "search_in_thread": THREADS},
        lambda servers: _compare(servers, args))
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return result
