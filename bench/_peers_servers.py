"""The servers of `bench peers`: installing the peers, starting every server, reading
their CPU and memory from /proc.

The Node packages (bench/peers_node/package.json, versions pinned by its lockfile) are
installed with `npm ci` into a cache outside the repository (`PETRIDISH_PEERS_CACHE`,
default `~/.cache/petridish/peers`), once per lockfile and Node version; the sources stay
in the repository and find the packages through NODE_PATH. better-sqlite3 is compiled
there from source (no prebuilt binary can be fetched here): about two minutes, once.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SOURCES = Path(__file__).resolve().parent / "peers_node"
PACKAGE_FILES = ("package.json", "package-lock.json")
NODE_MAJOR = 20  # Colyseus 0.16 runs on Node 20; 0.17 and later need 22
_LISTENING = re.compile(r"listening on http://([\d.]+):(\d+)")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cache_dir() -> Path:
    """Where the Node packages are installed."""
    default = Path.home() / ".cache" / "petridish" / "peers"
    return Path(os.environ.get("PETRIDISH_PEERS_CACHE", default)).expanduser()


def node_version() -> str | None:
    """`node --version`, or None without Node."""
    if shutil.which("node") is None:
        return None
    return subprocess.run(["node", "--version"], capture_output=True, text=True,
                          check=True).stdout.strip()


def why_no_node() -> str | None:
    """Why the peers cannot run here (no Node, an old one, no npm), or None."""
    version = node_version()
    if version is None:
        return "Node.js is not installed (Debian: apt-get install nodejs npm)"
    if int(version.lstrip("v").split(".")[0]) < NODE_MAJOR:
        return f"Node.js {version} is older than {NODE_MAJOR}, which Colyseus 0.16 needs"
    if shutil.which("npm") is None:
        return "npm is not installed (Debian: apt-get install npm)"
    return None


def _stamp() -> str:
    digest = hashlib.sha256(str(node_version()).encode())
    for name in PACKAGE_FILES:
        digest.update((SOURCES / name).read_bytes())
    return digest.hexdigest()


def installed() -> bool:
    """True when the cache holds the packages of this lockfile for this Node."""
    stamp = cache_dir() / ".installed"
    return stamp.exists() and stamp.read_text() == _stamp()


def install(log: Callable[[str], None]) -> None:
    """Install the pinned packages into the cache unless they are there already."""
    if installed():
        return
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    for name in PACKAGE_FILES:
        shutil.copyfile(SOURCES / name, cache / name)
    env = dict(os.environ)
    if Path("/usr/include/node/node.h").exists():
        env.setdefault("npm_config_nodedir", "/usr")  # headers for the native build
    log(f"installing the peers' Node packages into {cache} (npm ci; a few minutes, once)")
    done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=cache, env=env, check=False,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"npm ci failed in {cache}:\n{done.stdout[-2000:]}"
                           f"{done.stderr[-2000:]}")
    (cache / ".installed").write_text(_stamp())


def node_env() -> dict[str, str]:
    """The environment of a peer server: the cache's packages, production mode."""
    return dict(os.environ, NODE_PATH=str(cache_dir() / "node_modules"),
                NODE_ENV="production")


class ServerProcess:
    """A server subprocess, started at once; `ready()` waits for its `listening on` line
    (the port), then drains its later output (stderr goes to `log_path` for a
    post-mortem)."""

    def __init__(self, name: str, argv: list[str], log_dir: Path,
                 env: dict[str, str] | None = None, gc_signal: int | None = None,
                 cwd: Path = REPO) -> None:
        self.name = name
        self.gc_signal = gc_signal
        self.log_path = log_dir / f"{name}.log"
        with self.log_path.open("w") as errors:
            self.proc = subprocess.Popen(argv, cwd=cwd, env=env, text=True,
                                         stdout=subprocess.PIPE, stderr=errors,
                                         stdin=subprocess.DEVNULL)
        self.lines: list[str] = []
        self.pids = [self.proc.pid]

    def ready(self) -> None:
        """Wait until the server listens; then `host`, `port` and `pids` are known."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if m := _LISTENING.search(line):
                self.host, self.port = m.group(1), int(m.group(2))
                break
        else:
            self.proc.wait(10)
            raise RuntimeError(f"{self.name} did not start:\n" + "\n".join(self.lines)
                               + self.log_path.read_text()[-3000:])
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        # The processes whose CPU counts: the server and what it started (our event
        # store's writer process); all are up once the server listens.
        import psutil

        children = psutil.Process(self.proc.pid).children(recursive=True)
        self.pids = [self.proc.pid, *(child.pid for child in children)]

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server's processes so far (/proc/PID/stat)."""
        total = 0
        for pid in self.pids:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rpartition(")")[2].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / _CLOCK_TICKS

    def collect_garbage(self) -> None:
        """Ask the server for a full garbage collection, if it takes a signal for one (the
        Node servers: a V8 heap holds its garbage until a major collection, so its RSS
        rises and falls with it; ours frees by reference counting)."""
        if self.gc_signal is not None:
            os.kill(self.proc.pid, self.gc_signal)

    def rss(self) -> int:
        """Resident set size of the server's main process in bytes (/proc/PID/status)."""
        with open(f"/proc/{self.proc.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError(f"no VmRSS for {self.name}")

    def close(self) -> None:
        """Stop the server (SIGKILL: nothing to flush for a benchmark)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def python_server(name: str, code: str, log_dir: Path, *args: str,
                  tree: Path = REPO) -> ServerProcess:
    """A server of ours: `code` run by this interpreter with `args`, from the source
    tree `tree` (this repository, or another checkout: bench/versus.py; `-c` puts the
    working directory first on the import path)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return ServerProcess(name, [sys.executable, "-c", code, *args], log_dir, env, cwd=tree)


def node_server(name: str, log_dir: Path, *args: str) -> ServerProcess:
    """A peer server: bench/peers_node/server.js with `args`."""
    return ServerProcess(name, ["node", "--expose-gc", str(SOURCES / "server.js"), *args],
                         log_dir, node_env(), gc_signal=signal.SIGHUP)


def serve_ours(data_dir: str, snapshots: str | None = None) -> None:
    """Serve our server as `petridish serve --open` does (the same `serve`, the same
    garbage-collector tuning) with one difference: the per-connection token bucket is
    lifted, as in `bench ws` (at 200 frames/s it would cap one connection's rate).

    With `snapshots` (a directory; bench/_peers_profile.py), each SIGUSR1 writes snapshot
    N there: `snapshot-N.tracemalloc` (allocations traced since the first SIGUSR1, which
    starts tracing) and then `snapshot-N.pickle` (`{"types": objects by type name}`); and
    SIGUSR2 starts counting trio's task steps, the next one stops and writes
    `steps-N.json` (`{"task_steps", "tasks_spawned"}`).
    """
    import trio

    from bench._budgets import lifted_budgets
    from server.app import Running, serve
    from server.commands import tune_gc
    from server.config import ServerConfig

    config = ServerConfig(host="127.0.0.1", port=0, data_dir=data_dir, open_mode=True,
                          rate=1e9, burst=10**9, budgets=lifted_budgets())

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            running: Running = await nursery.start(serve, config)
            tune_gc()
            if snapshots is not None:
                nursery.start_soon(_snapshot_on_signal, Path(snapshots))
                nursery.start_soon(_count_steps_on_signal, Path(snapshots))
            print(f"petridish: listening on {running.url}", flush=True)

    trio.run(main)


async def _snapshot_on_signal(folder: Path) -> None:
    import gc
    import pickle
    import tracemalloc
    from collections import Counter

    import trio

    with trio.open_signal_receiver(signal.SIGUSR1) as signals:
        n = 0
        async for _ in signals:
            if not tracemalloc.is_tracing():
                tracemalloc.start()
            gc.collect()
            tracemalloc.take_snapshot().dump(str(folder / f"snapshot-{n}.tracemalloc"))
            types = Counter(type(o).__name__ for o in gc.get_objects())
            (folder / f"snapshot-{n}.pickle").write_bytes(pickle.dumps({"types": types}))
            n += 1


async def _count_steps_on_signal(folder: Path) -> None:
    import json

    import trio

    class Steps(trio.abc.Instrument):
        def __init__(self) -> None:
            self.task_steps = self.tasks_spawned = 0

        def before_task_step(self, task: trio.lowlevel.Task) -> None:
            self.task_steps += 1

        def task_spawned(self, task: trio.lowlevel.Task) -> None:
            self.tasks_spawned += 1

    with trio.open_signal_receiver(signal.SIGUSR2) as signals:
        n = 0
        async for _ in signals:
            steps = Steps()
            trio.lowlevel.add_instrument(steps)
            await signals.__anext__()
            trio.lowlevel.remove_instrument(steps)
            (folder / f"steps-{n}.json").write_text(json.dumps(vars(steps)))
            n += 1


def package_versions() -> dict[str, Any]:
    """The pinned versions of the peers' packages (from the lockfile)."""
    import json

    lock = json.loads((SOURCES / "package-lock.json").read_text())
    return {name.removeprefix("node_modules/"): entry["version"]
            for name, entry in lock["packages"].items()
            if name.removeprefix("node_modules/") in lock["packages"][""]["dependencies"]}
