"""`python -m bench field_page`: how smooth the field page is on a G = 1000 canvas.

The real server runs in a subprocess (`petridish serve --open`, a temporary data
directory), and a growing field is started on a 1000-cell canvas with the daily field's
chunk layout, larger (`--chunks` x `--chunks` chunks of `--chunk` cells; the daily field
starts at 3 x 40 and grows to cover more). A load thread joins `--agents` agents on one
connection and plays them honestly from the field's secret (read from the store, as
bench/field_live.py does): `--warm` writes back to back first, so the page has many
revealed and solved tiles to draw, then, while a phase asks for play, `--rate` writes a
second (reveals, and commits of `--batch` cells), all from one writer, so none is stale.

Headless Debian Chromium (software rendering, as in the tests) opens
`/field/?id=field:...` with an init script (below, `PROBE`) that changes nothing on
the page: it keeps its own requestAnimationFrame loop to time frames, times every
websocket message handler (a pushed `events` message is folded, and before the rAF
redraw it was also drawn, inside it), times the page's own rAF callbacks (where a
batched redraw runs), collects long tasks (> 50 ms) and notes when the canvas first
shows a revision (`first_draw`: the frame after it). Phases, `--seconds` each (the two
baselines half as long): `blank_play` (a blank page while agents write: what the machine
allows any page), `canvas_floor_play` (a bare 800 x 800 canvas repainted every frame:
the software compositor's floor for a page that repaints), then on the field page
`idle` (nothing happens), `pan_zoom_idle` (the script drags the view and turns the
wheel), `play` (agents write at `--rate`) and `pan_zoom` (both). Figures per phase: rAF
interval p50/p95/p99/max and the share of intervals over 16.7 ms and 33 ms, the push
handler and page rAF callback times, the page's script time per push, long tasks.
Software rendering on a shared 2-core machine makes frame figures noisy: the load
average before and after is reported with them; compare phases of one run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from typing import Any

import numpy as np
import trio

from bench import ws as ws_bench
from bench._budgets import serve_code
from bench.field_live import _truth
from protocol.client import Client, RequestError

GAME = "bench-page"
VSYNC_MS = 1000 / 60
TOPIC = f"field:{GAME}"
BROWSER_ARGS = ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
                "--disable-background-networking", "--disable-component-update",
                "--no-first-run", "--disable-sync"]

# Injected before the page's scripts. It only observes: a rAF loop of its own (frame
# times), wrappers that time the page's websocket message handlers and rAF callbacks,
# a long-task observer, and the moment the canvas first shows a revision.
PROBE = """
(() => {
  const raf = window.requestAnimationFrame.bind(window);
  const now = () => performance.now();
  const b = window.__pageBench = {
    frames: [], pushes: [], callbacks: [], longtasks: [],
    snapshotAt: null, snapshotMs: null, firstDraw: null,
    reset() { this.frames = []; this.pushes = []; this.callbacks = []; this.longtasks = []; },
  };
  const loop = (t) => { b.frames.push(t); raf(loop); };
  raf(loop);
  window.requestAnimationFrame = (fn) => raf((t) => {
    const t0 = now();
    try { fn(t); } finally { b.callbacks.push(now() - t0); }
  });
  const d = Object.getOwnPropertyDescriptor(WebSocket.prototype, "onmessage");
  Object.defineProperty(WebSocket.prototype, "onmessage", {
    configurable: true, enumerable: true,
    get() { return d.get.call(this); },
    set(fn) {
      d.set.call(this, typeof fn !== "function" ? fn : function (m) {
        const t0 = now();
        try { return fn.call(this, m); } finally {
          const ms = now() - t0;
          const head = typeof m.data === "string" ? m.data.slice(0, 120) : "";
          if (head.includes('"kind":"events"')) b.pushes.push(ms);
          else if (head.includes('"kind":"snapshot"') && b.snapshotAt === null) {
            b.snapshotAt = t0; b.snapshotMs = ms;
          }
        }
      });
    },
  });
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) b.longtasks.push([e.startTime, e.duration]);
  }).observe({ type: "longtask", buffered: true });
  document.addEventListener("DOMContentLoaded", () => {
    const c = document.querySelector("#board");
    new MutationObserver(() => {
      // the first revision shown: the frame after it (the page's draw runs first) is drawn
      if (b.firstDraw === null && c.dataset.revision !== "0") {
        b.firstDraw = -1;
        raf(() => { b.firstDraw = now(); });
      }
    }).observe(c, { attributes: true, attributeFilter: ["data-revision"] });
  });
})();
"""

# A bare 800 x 800 canvas whose every pixel changes every frame.
REPAINT = """
(() => {
  const c = document.createElement("canvas");
  c.width = c.height = 800;
  document.body.append(c);
  const ctx = c.getContext("2d");
  const paint = (t) => {
    ctx.fillStyle = `hsl(${(t / 10) % 360}, 50%, 60%)`;
    ctx.fillRect(0, 0, 800, 800);
    requestAnimationFrame(paint);
  };
  requestAnimationFrame(paint);
})();
"""


def _log(message: str) -> None:
    print(f"[bench field_page] {message}", file=sys.stderr, flush=True)


# ---- the load: one connection playing every agent from the secret ------------------------------

class Control:
    """What the browser thread and the load thread share."""

    def __init__(self) -> None:
        self.ready = threading.Event()  # the field is generated and warmed
        self.play = threading.Event()  # write at the steady rate while set
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.writes = 0
        self.totals: dict[str, Any] = {}  # the field's totals once warmed


class Player:
    """One agent's plan: the tiles it has seen, its frontier, the cells it still owes."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.tiles: dict[int, dict[str, Any]] = {}
        self.frontier: list[int] = []
        self.pending: list[int] = []  # cells of its revealed tiles, to commit


class Writer:
    """The only writer of the field: it knows the revision from its own replies, so it
    observes an agent only when that agent's known frontier runs out."""

    def __init__(self, c: Client, solution: np.ndarray) -> None:
        self.c = c
        self.solution = solution
        self.rev = 0
        self.G = 1000

    async def _observe(self, p: Player) -> None:
        obs = await self.c.request("field.observe", TOPIC, {"agent": p.agent})
        self.rev, self.G = obs["revision"], obs["G"]
        p.tiles.update({t["id"]: t for t in obs["tiles"]})
        p.frontier = obs["frontier"]

    async def step(self, p: Player, batch: int) -> bool:
        """One correct write for `p`: commit up to `batch` of its owed cells, else reveal
        a hidden tile of its frontier. True when the field stored an event."""
        try:
            if p.pending:
                cells, p.pending = p.pending[:batch], p.pending[batch:]
                r = await self.c.request("field.commit", TOPIC, {
                    "agent": p.agent, "expected_revision": self.rev,
                    "cells": [[x, int(self.solution[x])] for x in cells]})
                self.rev, p.frontier = r["revision"], r["frontier"] or p.frontier
                return bool(r["accepted"] or r["rejected"])  # else nothing was stored
            hidden = [t for t in p.frontier if p.tiles.get(t, {}).get("status") == "hidden"]
            if not hidden:
                await self._observe(p)
                hidden = [t for t in p.frontier if p.tiles[t]["status"] == "hidden"]
                if not hidden:
                    return False
            t = p.tiles[hidden[0]]
            t["status"] = "revealed"
            r = await self.c.request("field.reveal", TOPIC, {
                "agent": p.agent, "tile": t["id"], "expected_revision": self.rev})
        except RequestError as e:
            if e.code == "stale_revision":
                self.rev = e.detail["revision"]
            elif e.code != "not_hidden":  # another group revealed it first
                raise
            return False
        self.rev = r["revision"]
        known = {c for c, _ in r["givens"]}
        G = self.G
        p.pending = [c for c in ((t["y0"] + ly + dy) * G + t["x0"] + lx + dx
                                 for lx, ly, w, h in t["rects"]
                                 for dy in range(h) for dx in range(w)) if c not in known]
        return True


async def _load(url: str, data: str, args: argparse.Namespace, ctl: Control) -> None:
    async with Client.connect(url, client="bench-field-page/1.0") as c:
        await c.request("field.start", TOPIC, {
            "seed": 1, "canvas": 1000, "chunks": args.chunks, "chunk": args.chunk,
            "grow": {"every_s": 86400.0}})
        while True:
            try:
                rules = await c.request("field.rules", TOPIC)
                break
            except RequestError as e:
                if e.code != "generating":
                    raise
                await trio.sleep(0.2)
        solution, G = await _truth(data, GAME)
        if G != 1000:
            raise RuntimeError(f"the field's canvas is {G}, not 1000")
        players = [Player((await c.request("field.join", TOPIC, {"name": f"bench{k}"}))["agent"])
                   for k in range(args.agents)]
        writer = Writer(c, solution)
        _log(f"field ready ({rules['grow']}); {len(players)} agents; {args.warm} warm writes")
        k = idle = 0
        while ctl.writes < args.warm:
            wrote = await writer.step(players[k % len(players)], 4096)
            ctl.writes += wrote
            idle = 0 if wrote else idle + 1
            if idle > 100 * len(players):
                raise RuntimeError(f"the agents ran out of moves after {ctl.writes} writes")
            k += 1
        ctl.totals = (await c.request("field.observe", TOPIC, {"rect": [0, 0, 1, 1]}))["totals"]
        ctl.ready.set()
        interval = 1.0 / args.rate
        next_at = trio.current_time()
        while not ctl.stop.is_set():
            if not ctl.play.is_set():
                await trio.sleep(0.02)
                next_at = trio.current_time()
                continue
            ctl.writes += await writer.step(players[k % len(players)], args.batch)
            k += 1
            next_at += interval
            await trio.sleep_until(max(next_at, trio.current_time()))


def _load_thread(url: str, data: str, args: argparse.Namespace, ctl: Control) -> None:
    try:
        trio.run(_load, url, data, args, ctl)
    except Exception as e:  # noqa: BLE001 - handed to the browser thread, which raises it
        ctl.error = e
        ctl.ready.set()


# ---- figures -----------------------------------------------------------------------------------

def _ms(values: list[float], qs: tuple[float, ...] = (0.5, 0.95, 0.99)) -> dict[str, float]:
    a = np.asarray(values, dtype=float)
    if not len(a):
        return {"n": 0}
    out = {"n": len(a)}
    out.update({f"p{round(q * 100)}": round(float(np.quantile(a, q)), 2) for q in qs})
    out["max"] = round(float(a.max()), 2)
    return out


def _phase(sample: dict[str, Any], seconds: float, writes: int) -> dict[str, Any]:
    frames = np.diff(np.asarray(sample["frames"], dtype=float))
    long = [d for _, d in sample["longtasks"]]
    # rAF times fall on 60 Hz vsyncs (16.7, 33.3, 50 ms apart, give or take the timer's
    # 0.1 ms coarsening): "over 16.7 ms" is a missed vsync, "over 33 ms" two or more.
    vsyncs = np.maximum(1, np.rint(frames / VSYNC_MS)).astype(int) if len(frames) else frames
    share = (lambda k: round(float((vsyncs > k).mean()), 3)) if len(frames) else (lambda k: None)
    return {
        "seconds": round(seconds, 2), "writes": writes,
        "frame_interval_ms": _ms(frames.tolist()),
        "fps": round(len(frames) / seconds, 1),
        "share_over_16_7_ms": share(1), "share_over_33_ms": share(2),
        "frames_by_vsyncs": {k: int((vsyncs == int(k)).sum()) for k in ("1", "2", "3")}
        | {"4+": int((vsyncs >= 4).sum())},
        "push_handler_ms": _ms(sample["pushes"]),
        "page_raf_callback_ms": _ms(sample["callbacks"]),
        # the page's script time (push handlers and its frame callbacks) per pushed message
        "page_ms_per_push": round((sum(sample["pushes"]) + sum(sample["callbacks"]))
                                  / len(sample["pushes"]), 2) if sample["pushes"] else None,
        "long_tasks": {"count": len(long), "max_ms": round(max(long), 1) if long else 0.0,
                       "total_ms": round(sum(long), 1)},
    }


def _measure(page: Any, ctl: Control, seconds: float, play: bool,
             action: Any = None) -> dict[str, Any]:
    """Reset the probe, run for `seconds` (calling `action` in a loop), read the probe."""
    if play:
        ctl.play.set()
    page.evaluate("window.__pageBench.reset()")
    w0, t0 = ctl.writes, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        if action is None:
            page.wait_for_timeout(100)
        else:
            action()
    elapsed = time.perf_counter() - t0
    sample = page.evaluate("""(() => { const b = window.__pageBench;
        return { frames: b.frames, pushes: b.pushes, callbacks: b.callbacks,
                 longtasks: b.longtasks }; })()""")
    ctl.play.clear()
    return _phase(sample, elapsed, ctl.writes - w0)


def _pan_zoom(page: Any) -> Any:
    """A scripted drag round a square, then wheel in and out, about the canvas centre."""
    box = page.locator("#board-frame, #board").first.bounding_box()  # the frame takes input
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    r = box["width"] / 6

    def act() -> None:
        page.mouse.move(cx, cy)
        page.mouse.down()
        for dx, dy in ((r, 0), (r, r), (0, r), (0, 0)):
            page.mouse.move(cx + dx, cy + dy, steps=8)
        page.mouse.up()
        for dy in (-120, -120, -120, 120, 120, 120):
            page.mouse.wheel(0, dy)
    return act


def _browse(http_url: str, args: argparse.Namespace, ctl: Control) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    out: dict[str, Any] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                     headless=True, args=BROWSER_ARGS)
        out["chromium"] = browser.version
        try:
            # The same load without the field page: what the machine allows any page, and
            # a bare 800 x 800 canvas repainted every frame (the software compositor's floor).
            blank = browser.new_page(viewport={"width": 1280, "height": 1000})
            blank.goto("about:blank")
            blank.evaluate(PROBE)
            _log("phase blank_play")
            out["blank_play"] = _measure(blank, ctl, args.seconds / 2, True)
            blank.evaluate(REPAINT)
            _log("phase canvas_floor_play")
            out["canvas_floor_play"] = _measure(blank, ctl, args.seconds / 2, True)
            blank.close()
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.add_init_script(PROBE)
            page.goto(f"{http_url}/field/?id={TOPIC}")
            page.wait_for_function("window.__pageBench.firstDraw > 0", timeout=120_000)
            first = page.evaluate("""(() => { const b = window.__pageBench;
                const nav = performance.getEntriesByType("navigation")[0];
                return { from_navigation_ms: b.firstDraw,
                         from_snapshot_ms: b.firstDraw - b.snapshotAt,
                         snapshot_handler_ms: b.snapshotMs,
                         page_raf_callback_max_ms: Math.max(0, ...b.callbacks),
                         dom_content_loaded_ms: nav ? nav.domContentLoadedEventEnd : null,
                         revision: Number(document.querySelector("#board").dataset.revision) };
                })()""")
            out["first_draw"] = {k: (round(v, 1) if isinstance(v, float) else v)
                                 for k, v in first.items()}
            _log(f"first draw {out['first_draw']}")
            page.wait_for_timeout(1000)  # the first health/leaderboard read settles
            gestures = _pan_zoom(page)
            for name, play, action in (("idle", False, None), ("pan_zoom_idle", False, gestures),
                                       ("play", True, None), ("pan_zoom", True, gestures)):
                _log(f"phase {name}")
                out[name] = _measure(page, ctl, args.seconds, play, action)
            out["page_errors"] = errors
        finally:
            browser.close()
    return out


def main(argv: list[str]) -> dict[str, Any]:
    """Start the server and the field, warm it, measure the page; return the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench field_page")
    parser.add_argument("--chunks", type=int, default=5, help="chunks per side at the start")
    parser.add_argument("--chunk", type=int, default=60, help="chunk side in cells")
    parser.add_argument("--agents", type=int, default=12)
    parser.add_argument("--warm", type=int, default=600, help="writes before the page opens")
    parser.add_argument("--rate", type=float, default=20.0, help="writes per second in play")
    parser.add_argument("--batch", type=int, default=8, help="cells per commit in play")
    parser.add_argument("--seconds", type=float, default=8.0, help="length of each phase")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"canvas": 1000, "chunks": args.chunks, "chunk": args.chunk,
                              "agents": args.agents, "warm_writes": args.warm,
                              "rate_per_s": args.rate, "batch": args.batch,
                              "cpus": os.cpu_count(), "load_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="bench-page-", dir=ws_bench.REPO) as data:
        server = ws_bench.Server(serve_code("--open"), data)
        ctl = Control()
        loader = threading.Thread(target=_load_thread, name="field-page load",
                                  args=(server.url, data, args, ctl), daemon=True)
        try:
            t0 = time.perf_counter()
            loader.start()
            ctl.ready.wait()
            if ctl.error is not None:
                raise ctl.error
            result["setup_s"] = round(time.perf_counter() - t0, 1)
            result["field_at_open"] = ctl.totals
            result.update(_browse(f"http://127.0.0.1:{server.port}", args, ctl))
        finally:
            ctl.stop.set()
            loader.join(30)
            server.close()
    if ctl.error is not None:
        raise ctl.error
    result["load_after"] = os.getloadavg()[0]
    return result
