"""`petridish serve` in a subprocess, for tests that kill it or drive it from a browser.

The server prints `petridish: listening on http://HOST:PORT` once bound (port 0
allowed) and `petridish: owner token: TOKEN` on a first start; this reads both.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Self

import psutil

REPO = Path(__file__).resolve().parents[2]
_LISTENING = re.compile(r"petridish: listening on http://([\d.]+):(\d+)")
_OWNER = re.compile(r"petridish: owner token: (\S+)")


class ServerProcess:
    """One `petridish serve --port 0 --data DIR` child; use as a context manager."""

    def __init__(self, data_dir: Path, *extra: str, start_timeout: float = 30.0) -> None:
        """`extra` arguments go after `serve`'s; `port` 0 until a start binds one."""
        self.data_dir = data_dir
        self.extra = extra
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0
        self.owner_token: str | None = None
        self.output: list[str] = []  # every line the server printed, for failure messages
        self._lines: queue.Queue[str | None] = queue.Queue()

    @property
    def http_url(self) -> str:
        """Base HTTP URL of the running server."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        """The websocket endpoint."""
        return f"ws://127.0.0.1:{self.port}/ws"

    def start(self, port: int = 0) -> ServerProcess:
        """Start the server on `port` (0: a free one) and wait until it listens (and, on a
        first start, printed the owner token); RuntimeError with its output otherwise."""
        cmd = [sys.executable, "-m", "server.cli", "serve", "--host", "127.0.0.1", "--port",
               str(port), "--data", str(self.data_dir), *self.extra]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self._lines = queue.Queue()  # a restart must not read the old process's lines
        # A process group of its own, as under a terminal or a supervisor (`signal_group`).
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=env, text=True, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        threading.Thread(target=self._pump, args=(self.proc, self._lines), daemon=True).start()
        deadline = time.monotonic() + self.start_timeout
        # A first start prints the owner token (just after the address); later ones do not.
        first_start = not (self.data_dir / "owner.token").exists()
        self.owner_token, self.port = None, 0
        while not self.port or (first_start and self.owner_token is None):
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.kill()
                raise RuntimeError(f"server did not start in {self.start_timeout} s:\n"
                                   + "".join(self.output)) from None
            if line is None:
                raise RuntimeError("server exited before listening:\n" + "".join(self.output))
            if m := _OWNER.search(line):
                self.owner_token = m.group(1)
            if m := _LISTENING.search(line):
                self.port = int(m.group(2))
        return self

    def _pump(self, proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.output.append(line)
            lines.put(line)
        lines.put(None)

    def all_output(self, timeout: float = 10.0) -> str:
        """Everything the server printed, once it has exited and its output is read to the
        end (call after `kill` or `stop`)."""
        deadline = time.monotonic() + timeout
        while self._lines.get(timeout=max(0.0, deadline - time.monotonic())) is not None:
            pass
        return "".join(self.output)

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as in a crash or power cut."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def kill_writer(self, wait: float = 5.0) -> bool:
        """SIGKILL the server's event store writer once it has one (False: none came
        within `wait` seconds, or the server is gone)."""
        deadline = time.monotonic() + wait
        while self.proc is not None and time.monotonic() < deadline:
            try:
                kids = [p for p in psutil.Process(self.proc.pid).children()
                        if "sqlite_writer" in " ".join(p.cmdline())]
            except psutil.Error:
                return False
            if kids:
                kids[0].send_signal(signal.SIGKILL)
                return True
            time.sleep(0.02)
        return False

    def signal_group(self, sig: int) -> None:
        """`sig` to the server and every process it started, as Ctrl-C in its terminal
        (SIGINT) or `systemctl stop` (SIGTERM to the whole control group) sends it."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)

    def stop(self) -> int | None:
        """SIGTERM and wait for a graceful exit (SIGKILL after 15 s); the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        # Tests that check the graceful shutdown call `stop` themselves.
        self.kill()
