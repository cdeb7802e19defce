"""`petridish lab gate`: headless Chromium proves a lab's unproven backlog through the
owner's arena page (`/lab/arena.html?gate`), the seed's compile gate.

The gate starts Chromium itself (headless, software WebGL2: the DESIGN's flags) and drives
it over the DevTools protocol with Playwright, so it holds the browser's process and can
kill it. For each organism of the backlog (`labArena.backlog`, the owner's `lab.backlog`)
the page compiles and links it and draws it for 300 ms, or mounts a panel, and posts the
verdict itself through the same owner routes the arena uses (`/api/ok`, `/api/invalid`
with the first line of the info log). A wall-clock cap bounds each organism: when it
fires (a shader too heavy for this renderer, a hung GPU process) or the browser crashes,
the gate kills the browser, says so, leaves the organism unproven (a hang is not a
compile failure: only a failed compile or link kills), starts a fresh browser and moves
on. Each organism gets one progress line; the run ends with a summary.

Playwright is an optional dependency (`pip install 'petridish[gate]'`); without it the
command says so and exits 2. Chromium is Debian's `chromium` (or `--chromium PATH`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

# Headless Chromium with software WebGL2 (DESIGN.md); never --disable-software-rasterizer.
CHROMIUM_ARGS = ("--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
                 "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync")
DEFAULT_CAP = 5.0  # seconds one organism may take, compile to verdict
LAUNCH_TIMEOUT = 30.0  # seconds for Chromium to listen and the arena to be ready
MAX_BACKLOG_FETCH = 500  # organisms of the backlog read at once (lab.backlog's bound)
_DEVTOOLS = re.compile(r"DevTools listening on (ws://\S+)")
MISSING_PLAYWRIGHT = ("petridish lab gate needs Playwright, an optional dependency: "
                      "pip install 'petridish[gate]' (Chromium itself is Debian's chromium, "
                      "or --chromium PATH)")


class GateError(RuntimeError):
    """The gate cannot run (no Playwright, no Chromium, the arena refused the token)."""


@attrs.frozen
class Judged:
    """One organism through the gate: `verdict` is ok (proven), invalid (dead, `log` its
    stored error), capped (the cap fired: left unproven) or crashed (the browser died:
    left unproven); `seconds` of wall clock."""

    id: str
    track: str
    verdict: str
    seconds: float
    log: str | None = None
    error: str | None = None


@attrs.define
class GateRun:
    """A run's organisms and browser launches."""

    judged: list[Judged] = attrs.field(factory=list)
    launches: int = 0
    backlog: int = 0  # the backlog's size when the run began

    def count(self, verdict: str) -> int:
        """Organisms that got `verdict`."""
        return sum(j.verdict == verdict for j in self.judged)

    def summary(self) -> str:
        """The run's last line."""
        return (f"gate: {len(self.judged)} judged: {self.count('ok')} proven, "
                f"{self.count('invalid')} dead, {self.count('capped')} capped, "
                f"{self.count('crashed')} crashed; {self.launches} browser launch"
                f"{'' if self.launches == 1 else 'es'}")


def chromium_path(explicit: str | None = None) -> str:
    """The Chromium to run (GateError when there is none)."""
    path = explicit or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        raise GateError("no chromium found: install Debian's chromium or pass --chromium PATH")
    return path


class _Browser:
    """One Chromium process we started, and Playwright's connection to it."""

    def __init__(self, executable: str) -> None:
        self.executable = executable
        self.proc: subprocess.Popen[str] | None = None
        self.profile = tempfile.mkdtemp(prefix="petridish-gate-")
        self.browser: Any = None

    def _spawn(self) -> None:
        cmd = [self.executable, "--headless=new", "--remote-debugging-port=0",
               f"--user-data-dir={self.profile}", *CHROMIUM_ARGS, "about:blank"]
        # Its own session: the gate kills the whole group (renderer and GPU process too).
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True,
                                     start_new_session=True)

    async def start(self, playwright: Any) -> Any:
        """Start Chromium and connect to it; Playwright's Browser."""
        self._spawn()
        url = await asyncio.wait_for(asyncio.to_thread(self._devtools_url), LAUNCH_TIMEOUT)
        self.browser = await playwright.chromium.connect_over_cdp(url)
        return self.browser

    def _devtools_url(self) -> str:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            if m := _DEVTOOLS.search(line):
                _drain(self.proc.stderr)  # so Chromium never blocks on a full pipe
                return m.group(1)
        raise GateError(f"chromium exited before listening (exit {self.proc.wait()})")

    async def kill(self) -> None:
        """Kill the browser's whole process group (a hung GPU process included)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            await asyncio.to_thread(self.proc.wait)
        if self.browser is not None:
            with contextlib.suppress(Exception):  # the process is gone, and the link with it
                await asyncio.wait_for(self.browser.close(), 5)
        shutil.rmtree(self.profile, ignore_errors=True)


def _drain(stream: Any) -> None:
    """Read `stream` to its end in a daemon thread (Chromium's stderr)."""
    threading.Thread(target=stream.read, daemon=True).start()


async def _open_arena(browser: Any, url: str) -> Any:
    page = await browser.new_page()
    await page.goto(url)
    await asyncio.wait_for(page.evaluate("() => window.labArena.ready"), LAUNCH_TIMEOUT)
    phase = await page.evaluate("() => window.labArena.phase")
    if phase != "idle":
        text = await page.text_content("#status")
        raise GateError(f"the arena did not open in gate mode: {text}")
    return page


async def run_gate(base_url: str, token: str, lab: str = "main", *, cap: float = DEFAULT_CAP,
                   track: str = "all", limit: int = 0, chromium: str | None = None,
                   progress: Callable[[str], None] = print) -> GateRun:
    """Prove the backlog of `lab:LAB` at `base_url` (see the module docstring). `limit` 0
    judges the backlog as it stands when the run begins; N > 0 keeps taking newcomers (the
    birth loop refills the backlog as organisms are proven) until N are judged."""
    try:
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import async_playwright
    except ImportError:
        raise GateError(MISSING_PLAYWRIGHT) from None
    executable = chromium_path(chromium)
    arena = f"{base_url.rstrip('/')}/lab/arena.html?id=lab:{lab}&gate#token={token}"
    run = GateRun()
    tried: set[str] = set()
    first: set[str] | None = None  # the backlog when the run began
    async with async_playwright() as playwright:
        browser: _Browser | None = None
        page: Any = None

        async def fresh_page() -> Any:
            nonlocal browser, page
            if browser is None:
                browser = _Browser(executable)
                page = await _open_arena(await browser.start(playwright), arena)
                run.launches += 1
            return page

        try:
            while limit <= 0 or len(run.judged) < limit:
                backlog = await (await fresh_page()).evaluate(
                    "([t, n]) => window.labArena.backlog(t, n)", [track, MAX_BACKLOG_FETCH])
                if first is None:
                    first = {o["id"] for o in backlog["organisms"]}
                    run.backlog = backlog["total"]
                todo = [o for o in backlog["organisms"]
                        if o["id"] not in tried and (limit > 0 or o["id"] in first)]
                if not todo:
                    break
                for o in todo[: (limit - len(run.judged)) if limit > 0 else None]:
                    tried.add(o["id"])
                    judging = await fresh_page()  # a relaunch is not the organism's time
                    started = time.monotonic()
                    try:
                        got = await asyncio.wait_for(
                            judging.evaluate("o => window.labArena.judge(o)", o), cap)
                    except (TimeoutError, PlaywrightError) as exc:
                        capped = isinstance(exc, TimeoutError)
                        judged = Judged(o["id"], o["track"], "capped" if capped else "crashed",
                                        time.monotonic() - started,
                                        error=None if capped else str(exc)[:200])
                        await browser.kill()
                        browser = None
                    else:
                        judged = Judged(o["id"], o["track"], got["verdict"],
                                        time.monotonic() - started, got.get("log"),
                                        got.get("error"))
                    run.judged.append(judged)
                    waiting = backlog["total"] - sum(x["id"] in tried
                                                     for x in backlog["organisms"])
                    progress(_line(run, judged, waiting, cap))
                if limit <= 0:
                    break  # the backlog it began with is done
        finally:
            if browser is not None:
                await browser.kill()
    return run


def _line(run: GateRun, j: Judged, waiting: int, cap: float) -> str:
    what = {"ok": "proven", "invalid": f"dead: {j.log}",
            "capped": f"capped at {cap:g} s: left unproven, browser relaunched",
            "crashed": f"browser crashed ({j.error}): left unproven, browser relaunched",
            "cancelled": "cancelled", "lost": "context lost: left unproven"}
    return (f"gate [{len(run.judged)}] {j.id} ({j.track}) {what.get(j.verdict, j.verdict)} "
            f"in {j.seconds:.2f} s; {waiting} waiting")


def main(args: Any) -> int:
    """`petridish lab gate` (actors/lab/cli.py parses the options)."""
    token = args.token_file.read_text("utf-8").strip() if args.token_file else \
        os.environ.get("PETRIDISH_OWNER_TOKEN")
    if not token:
        path = Path(args.data) / "owner.token"
        if not path.is_file():
            print(f"no owner token: {path} is missing (pass --data, --token-file or "
                  "PETRIDISH_OWNER_TOKEN)", file=sys.stderr)
            return 2
        token = path.read_text("utf-8").strip()
    try:
        run = asyncio.run(run_gate(args.url, token, args.world, cap=args.cap, track=args.track,
                                   limit=args.limit, chromium=args.chromium,
                                   progress=lambda line: print(line, flush=True)))
    except GateError as exc:
        print(f"petridish lab gate: {exc}", file=sys.stderr)
        return 2
    print(run.summary(), flush=True)
    return 0
