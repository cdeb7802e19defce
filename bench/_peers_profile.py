"""Where our server's time and memory go on `bench peers`'s hot path (docs/performance.md).

    python -m bench._peers_profile cpu [--connections 100] [--seconds 20] [--out DIR]
    python -m bench._peers_profile memory [--connections 2000] [--out DIR]
    python -m bench._peers_profile stacks [--connections 100] [--seconds 20]
    python -m bench._peers_profile codecs

`cpu` starts our server as `bench peers` does (bench/_peers_servers.py), drives its
counter world with the same load generator (one add in flight per connection, each
connection its own world), and samples the server and its store's writer process with
py-spy (`pip install py-spy`) for `--seconds`. It prints one JSON object: the server's
CPU per add (from /proc) split into the stages of the path (frame, parse, validate,
mailbox, decide, evolve, encode, append, reply, publish, scheduler) by the samples'
stacks, and the top functions by own time; the raw stacks stay in DIR for a flame graph.

`memory` opens `--connections` idle connections (greeted, then silent) after a few warm
ones and reads the server's RSS growth; then it has the server start tracemalloc, opens
as many again, and prints beside the RSS per connection the Python allocations per
connection by package and by source line, and the objects per connection by type (the
server's own snapshots, taken on SIGUSR1: bench/_peers_servers.py).

`stacks` and `codecs` measure two candidate cuts (bench/_peers_candidates.py).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import trio

from bench import _peers_load as load
from bench import _peers_servers as servers
from bench._peers_sides import Ours
from bench.peers import KIND

# Stages of the path, matched from a sample's innermost frame outwards: the first frame
# that names one decides (json under parse_frame is parse; trio's machinery under the
# mailbox is mailbox). Each rule: (stage, path fragment, function names or None for any).
# trio's own frames decide only for socket I/O; a stack with nothing but trio is the
# scheduler (its run loop, task switches, epoll).
STAGES: tuple[tuple[str, str, frozenset[str] | None], ...] = (
    ("socket I/O", "trio/_socket.py", None),
    ("socket I/O", "trio/_highlevel_socket.py", None),
    ("parse", "protocol/envelope.py", frozenset({"parse_frame", "request_id_of"})),
    ("encode", "protocol/envelope.py", None),
    ("encode", "protocol/jsontext.py", None),
    ("validate", "protocol/convert.py", frozenset({"structure"})),
    ("encode", "protocol/convert.py", frozenset({"unstructure"})),
    ("validate", "server/session.py", frozenset({"_call_of", "_parse"})),
    # The counter world's package: folding is evolve, the rest of it decides.
    ("evolve", f"actors/{KIND}/", frozenset({"apply", "evolve"})),
    ("decide", f"actors/{KIND}/", None),
    ("evolve", "actors/runtime/host.py", frozenset({"fold"})),
    ("evolve", "actors/runtime/base.py", frozenset({"commit", "_stage"})),
    ("publish", "actors/runtime/topic.py", None),
    ("append", "server/storage/", None),
    ("reply", "server/replies.py", None),
    ("reply", "actors/runtime/subscriber.py", None),
    ("reply", "server/outbox.py", frozenset({"writer"})),
    ("mailbox", "actors/runtime/mailbox.py", None),
    ("mailbox", "actors/runtime/ref.py", None),
    ("mailbox", "actors/runtime/waiter.py", None),
    ("mailbox", "server/session.py", frozenset({"_dispatch"})),
    ("actor loop", "actors/runtime/", None),
    ("frame", "wsproto/", None),
    ("frame", "websockets/", None),
    ("frame", "server/transport.py", None),
    ("frame", "server/wsframes.py", None),
    ("frame", "server/wsprotocol.py", None),
    ("frame", "server/front.py", None),
    ("frame", "hypercorn/", None),
    ("frame", "h11/", None),
    ("frame", "starlette/", None),
    ("frame", "server/reactor.py", None),
    ("frame", "server/session.py", frozenset({"serve_one"})),
    ("frame", "server/hello.py", frozenset({"_receive_text"})),
    ("metrics", "prometheus_client/", None),
    ("metrics", "server/metrics.py", None),
)


def _log(message: str) -> None:
    print(f"[profile] {message}", file=sys.stderr, flush=True)


def _frames(stack: str) -> list[tuple[str, str]]:
    """(function, file) of each frame of a py-spy raw stack, outermost first."""
    out = []
    for frame in stack.split(";"):
        name, _, where = frame.partition(" (")
        out.append((name, where.rstrip(")").rpartition(":")[0]))
    return out


def stage_of(frames: list[tuple[str, str]]) -> str:
    """The stage of the path a sample's stack belongs to."""
    for name, where in reversed(frames):
        for stage, fragment, names in STAGES:
            if fragment in where and (names is None or name in names):
                return stage
    return "scheduler" if any("trio/" in where for _, where in frames) else "other"


def _package(filename: str) -> str:
    """The package (or our top-level directory) a source file belongs to."""
    if "site-packages/" in filename:
        return filename.split("site-packages/")[1].split("/")[0]
    head = filename.split("/")[0]
    if head in ("server", "actors", "protocol", "bench", "trio", "hypercorn", "wsproto",
                "h11", "starlette", "outcome", "attrs", "cattrs", "prometheus_client"):
        return head
    if "/work/" in filename:
        return next((top for top in ("server", "actors", "protocol", "bench")
                     if f"/{top}/" in filename), filename)
    return "python" if filename.endswith(".py") else filename


def summarize(raw: Path, cpu_us: dict[str, float]) -> dict[str, Any]:
    """Stages, packages and top functions of py-spy's raw output; the stages scaled to
    `cpu_us["server"]`, the /proc CPU per add of the server's main process."""
    stages: Counter[str] = Counter()
    packages: Counter[str] = Counter()
    own: dict[str, Counter[str]] = {"server": Counter(), "writer": Counter()}
    totals: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = _frames(stack)
        heads = [name for name, _ in frames if name.startswith("process ")]
        frames = frames[len(heads):]
        process = "writer" if any("sqlite_writer" in head for head in heads) else "server"
        n = int(count)
        totals[process] += n
        if not frames:
            continue
        name, where = frames[-1]
        own[process][f"{name} ({where})"] += n
        if process == "server":
            stages[stage_of(frames)] += n
            packages[_package(where)] += n
    server = totals["server"] or 1
    out: dict[str, Any] = {
        "samples": dict(totals),
        "server_us_per_add_by_stage": {
            stage: round(n / server * cpu_us["server"], 1) for stage, n in stages.most_common()},
        "server_share_by_stage": {stage: round(n / server, 3) for stage, n in stages.most_common()},
        "server_own_time_by_package": {
            name: round(n / server, 3) for name, n in packages.most_common(15)},
    }
    for process, counter in own.items():
        total = totals[process] or 1
        out[f"{process}_top_own_time"] = {
            where: round(n / total, 3) for where, n in counter.most_common(25)}
    return out


def _server(tmp: Path, *extra: str) -> servers.ServerProcess:
    proc = servers.python_server(
        "ours", "import sys, bench._peers_servers as s; s.serve_ours(*sys.argv[1:])", tmp,
        str(tmp / "ours"), *extra)
    proc.ready()
    return proc


def _process_cpu(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of one process (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def cpu(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Round trips for `seconds` unwatched (the CPU per add, from /proc), then as long
    again under py-spy (where it goes: the sampler pauses the server for each sample, so
    those seconds' CPU is not counted)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        raise SystemExit("py-spy is not installed: pip install py-spy")
    raw = out / "ours-cpu.txt"
    raw.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-profile-", dir=servers.REPO) as tmp:
        proc = _server(Path(tmp), str(out))
        try:
            side = Ours(f"ws://{proc.host}:{proc.port}/ws", KIND)

            async def main() -> dict[str, Any]:
                conns = await load.open_many(args.connections, side.open_own)
                load.hold()
                await load.turn(side, conns, 1.0, load.Meter(proc.cpu_seconds))  # warm
                before = {pid: _process_cpu(pid) for pid in proc.pids}
                meter = load.Meter(proc.cpu_seconds)
                await load.turn(side, conns, args.seconds, meter)
                used = {pid: [now - then for now, then in zip(_process_cpu(pid), before[pid])]
                        for pid in proc.pids}
                sampler = subprocess.Popen(  # noqa: ASYNC220 - starting it takes ms
                    [spy, "record", "--pid", str(proc.proc.pid), "--subprocesses",
                     "--rate", "250", "--duration", str(args.seconds), "--format", "raw",
                     "--function", "--output", str(raw)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                await load.turn(side, conns, args.seconds + 1, load.Meter(proc.cpu_seconds))
                _, said = await trio.to_thread.run_sync(sampler.communicate)
                if not raw.exists():
                    raise RuntimeError(f"py-spy wrote nothing: {said[-2000:]}")
                counts = await _counted_turn(side, conns, proc, out, args.seconds / 4)
                await load.close_all(conns)
                adds = len(meter.latencies)
                main_pid = proc.proc.pid
                writer = [sum(v[k] for p, v in used.items() if p != main_pid) for k in (0, 1)]

                def per_add(seconds: float) -> float:
                    return round(seconds / adds * 1e6, 1)

                return {"figures": meter.figures(), "cpu_us_per_add": {
                    "server": per_add(sum(used[main_pid])), "writer": per_add(sum(writer)),
                    "server_system": per_add(used[main_pid][1]),
                    "writer_system": per_add(writer[1])}, **counts}

            result = trio.run(main)
        finally:
            proc.close()
    result.update(summarize(raw, result["cpu_us_per_add"]))
    result["raw_stacks"] = str(raw)
    return {"connections": args.connections, "seconds": args.seconds, **result}


async def _counted_turn(side: Ours, conns: list[Any], proc: servers.ServerProcess, out: Path,
                        seconds: float) -> dict[str, Any]:
    """A turn under strace -c (when installed) with trio's task steps counted: system
    calls and task steps per add (both slow the server down; the counts are exact)."""
    trace = out / "ours-strace.txt"
    trace.unlink(missing_ok=True)
    steps = out / "steps-0.json"
    steps.unlink(missing_ok=True)
    tracer = None
    if shutil.which("strace"):
        tracer = subprocess.Popen(  # noqa: ASYNC220 - starting it takes ms
            ["strace", "-c", "-f", "-o", str(trace),
             *(arg for pid in proc.pids for arg in ("-p", str(pid)))],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        await trio.sleep(1.0)  # attached
    os.kill(proc.proc.pid, signal.SIGUSR2)
    meter = load.Meter(proc.cpu_seconds)
    await load.turn(side, conns, seconds, meter)
    os.kill(proc.proc.pid, signal.SIGUSR2)
    while not steps.exists():
        await trio.sleep(0.1)
    counted = json.loads(steps.read_text())
    adds = len(meter.latencies)
    out_counts: dict[str, Any] = {
        "task_steps_per_add": round(counted["task_steps"] / adds, 2),
        "tasks_spawned_per_add": round(counted["tasks_spawned"] / adds, 3)}
    if tracer is not None:
        tracer.send_signal(signal.SIGINT)
        await trio.to_thread.run_sync(tracer.wait)
        out_counts["syscalls_per_add"] = _syscalls(trace, adds)
    return out_counts


def _syscalls(trace: Path, adds: int) -> dict[str, float]:
    """Calls per add of each system call in an `strace -c` table (the counting turn's,
    plus the second before and after it: a slight overcount)."""
    calls = {}
    for line in trace.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0].replace(".", "").isdigit() and fields[-1].isidentifier():
            calls[fields[-1]] = int(fields[3])
    return {name: round(n / adds, 2) for name, n in
            sorted(calls.items(), key=lambda item: -item[1])[:12]}


def memory(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Idle connections: their RSS without tracing, then their Python allocations."""
    with tempfile.TemporaryDirectory(prefix="bench-profile-", dir=servers.REPO) as tmp:
        proc = _server(Path(tmp), str(out))
        try:
            side = Ours(f"ws://{proc.host}:{proc.port}/ws", KIND)
            taken = [0]

            async def snapshot() -> Path:
                path = out / f"snapshot-{taken[0]}.pickle"
                taken[0] += 1
                path.unlink(missing_ok=True)
                os.kill(proc.proc.pid, signal.SIGUSR1)
                while not path.exists():
                    await trio.sleep(0.1)
                await trio.sleep(0.2)
                return path

            async def batch(start: int) -> list[Any]:
                conns = await load.open_many(
                    args.connections, lambda i: side.open_shared(start + i, "idle"))
                load.hold()
                await trio.sleep(1.0)
                return conns

            async def main() -> tuple[int, Path, Path]:
                warm = await load.open_many(load.WARM, lambda i: side.open_shared(i, "idle"))
                await trio.sleep(1.0)
                rss0 = proc.rss()
                untraced = await batch(load.WARM)  # RSS only: tracing is not on yet
                rss = proc.rss() - rss0
                first = await snapshot()  # starts tracing
                traced = await batch(load.WARM + args.connections)
                second = await snapshot()
                await load.close_all(warm + untraced + traced)
                return rss, first, second

            rss, first, second = trio.run(main)
        finally:
            proc.close()
    return {"connections": args.connections, **compare(first, second, args.connections, rss)}


def compare(before: Path, after: Path, connections: int, rss_delta: int) -> dict[str, Any]:
    """Bytes and objects per connection between two of the server's snapshots, beside the
    RSS growth per connection of a batch opened without tracing."""
    import tracemalloc

    a, b = (pickle.loads(p.read_bytes()) for p in (before, after))
    snap_a, snap_b = (tracemalloc.Snapshot.load(str(p.with_suffix(".tracemalloc")))
                      for p in (before, after))
    by_line = snap_b.compare_to(snap_a, "lineno")
    traced = sum(stat.size_diff for stat in by_line)
    packages: Counter[str] = Counter()
    for stat in snap_b.compare_to(snap_a, "filename"):
        packages[_package(stat.traceback[0].filename)] += stat.size_diff
    types = Counter(b["types"])
    types.subtract(a["types"])
    return {
        "rss_kib_per_connection": round(rss_delta / connections / 1024, 2),
        "traced_kib_per_connection": round(traced / connections / 1024, 2),
        "untraced_kib_per_connection": round((rss_delta - traced) / connections / 1024, 2),
        "bytes_per_connection_by_package": {
            name: round(size / connections) for name, size in packages.most_common(12)},
        "bytes_per_connection_by_line": {
            f"{stat.traceback[0].filename.split('site-packages/')[-1]}:"
            f"{stat.traceback[0].lineno}": round(stat.size_diff / connections)
            for stat in by_line[:25]},
        "objects_per_connection_by_type": {
            name: round(n / connections, 2) for name, n in types.most_common(25) if n > 0},
    }


def main(argv: list[str]) -> None:
    """Run the chosen profile and print its JSON."""
    parser = argparse.ArgumentParser(prog="python -m bench._peers_profile")
    parser.add_argument("what", choices=("cpu", "memory", "stacks", "codecs"))
    parser.add_argument("--connections", type=int)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "peers-profile")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.connections is None:
        args.connections = 2000 if args.what == "memory" else 100
    t0 = time.perf_counter()
    from bench import _peers_candidates as candidates

    run = {"cpu": cpu, "memory": memory, "stacks": candidates.stacks,
           "codecs": candidates.codecs}[args.what]
    result = run(args, args.out.resolve())
    _log(f"done in {time.perf_counter() - t0:.0f} s")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
