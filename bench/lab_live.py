"""`python -m bench lab_live`: the live lab in one run, against a real server subprocess
(`petridish serve`, SQLite in a temporary directory).

1. The headless gate (`server/lab_gate.py`, the code of `petridish lab gate`) proves a
   backlog of `--organisms` grammar shaders through the arena page in headless Chromium
   (software WebGL2). Figures: organisms per minute over the gate's whole wall clock
   (browser launch and page load included), and p50/p99 seconds per organism as the gate
   times it (the page's compile, link, 300 ms of completed frames, and the verdict posted
   through /api/ok). The goal is at most 1 s each on this machine's software renderer.
2. `--judges` public judges connect (raw websockets, spectators) and every one of them
   judges back to back for `--seconds`: `lab.public_pair` under its own client key, then
   `lab.vote` on the pair. Figures: acknowledged votes per second through the lab's one
   actor, and the deal latency (a `lab.public_pair` request to its reply) p50/p99 over
   every deal in the window. The judges run in this process, so at full load the
   figures include its own queueing on this shared 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import trio

from bench import ws as ws_bench
from bench._budgets import serve_code
from protocol.client import Client

LAB = "lab:bench"


def _log(message: str) -> None:
    print(f"[bench lab_live] {message}", file=sys.stderr, flush=True)


def _ms(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)) * 1000, 1) if values else float("nan")


async def _populate(url: str, token: str, organisms: int) -> None:
    """`lab:bench` without a birth loop, and `organisms` distinct unproven grammar shaders."""
    async with Client.connect(url, token, client="bench-lab/1") as c:
        await c.request("lab.create", LAB, {"backlog": 0, "seed": 2026})
        ids: set[str] = set()
        while len(ids) < organisms:
            offered = await c.request("lab.birth", LAB, {"track": "shader"})
            status = offered
            while status["status"] == "validating":
                await trio.sleep(0.02)
                status = await c.request("lab.status", LAB, {"id": offered["id"]})
            if status["status"] == "alive":
                ids.add(offered["id"])
        _log(f"{len(ids)} unproven shaders in {LAB}")


def _gate(http_url: str, token: str, cap: float) -> dict[str, Any]:
    from server.lab_gate import run_gate

    started = time.monotonic()
    run = asyncio.run(run_gate(http_url, token, "bench", cap=cap, track="shader",
                               progress=lambda line: _log(line)))
    wall = time.monotonic() - started
    seconds = [j.seconds for j in run.judged if j.verdict == "ok"]
    return {
        "gate_judged": len(run.judged),
        "gate_proven": run.count("ok"),
        "gate_dead": run.count("invalid"),
        "gate_capped": run.count("capped"),
        "gate_crashed": run.count("crashed"),
        "gate_launches": run.launches,
        "gate_wall_s": round(wall, 2),
        "gate_organisms_per_min": round(60 * len(run.judged) / wall, 1),
        "gate_p50_s": round(float(np.percentile(seconds, 50)), 3) if seconds else None,
        "gate_p99_s": round(float(np.percentile(seconds, 99)), 3) if seconds else None,
        "gate_goal_s": 1.0,
    }


async def _judges(url: str, judges: int, seconds: float) -> dict[str, Any]:
    """Open `judges` spectator connections, then judge from all of them for `seconds`."""
    from websockets.trio.client import connect

    hello = json.dumps({"op": "hello", "protocol": 1, "client": "bench-judge/1"})
    deals: list[float] = []
    votes = [0]
    refused: dict[str, int] = {}
    start, stop = trio.Event(), [0.0]

    async def judge(ws: Any, k: int) -> None:
        key = f"bench{k}"
        rid = 0
        await start.wait()
        while trio.current_time() < stop[0]:
            rid += 1
            sent = trio.current_time()
            await ws.send(json.dumps({"id": rid, "op": "lab.public_pair", "to": LAB,
                                      "args": {"client_key": key}}))
            pair = json.loads(await ws.recv())
            deals.append(trio.current_time() - sent)
            if not pair["ok"]:
                code = pair["error"]["code"]
                refused[code] = refused.get(code, 0) + 1
                continue
            p = pair["result"]
            rid += 1
            await ws.send(json.dumps({"id": rid, "op": "lab.vote", "to": LAB, "args": {
                "pair": p["pair"], "winner": p[("left", "right")[rid % 2]]["id"],
                "client_key": key}}))
            reply = json.loads(await ws.recv())
            if reply["ok"]:
                votes[0] += 1
            else:
                code = reply["error"]["code"]
                refused[code] = refused.get(code, 0) + 1

    async with trio.open_nursery() as nursery:
        limiter = trio.CapacityLimiter(64)
        sockets: list[Any] = []

        async def open_one(k: int) -> None:
            async with limiter:
                ws = await connect(url, compression=None, ping_interval=None,
                                   open_timeout=60, proxy=None).connect(nursery)
                await ws.send(hello)
                assert json.loads(await ws.recv())["ok"]
                sockets.append((k, ws))

        async with trio.open_nursery() as openers:
            for k in range(judges):
                openers.start_soon(open_one, k)
        _log(f"{len(sockets)} judges connected")
        async with trio.open_nursery() as judging:
            for k, ws in sockets:
                judging.start_soon(judge, ws, k)
            began = trio.current_time()
            stop[0] = began + seconds
            start.set()
        elapsed = trio.current_time() - began
        for _, ws in sockets:
            await ws.aclose()
        nursery.cancel_scope.cancel()
    return {
        "judges_connected": judges,
        "votes": votes[0],
        "votes_per_s": round(votes[0] / elapsed, 1),
        "deals": len(deals),
        "deal_p50_ms": _ms(deals, 50),
        "deal_p99_ms": _ms(deals, 99),
        "refused": refused,
    }


def main(argv: list[str]) -> dict[str, Any]:
    """Run the benchmark and return its figures."""
    parser = argparse.ArgumentParser(prog="python -m bench lab_live")
    parser.add_argument("--organisms", type=int, default=40, help="shaders for the gate")
    parser.add_argument("--cap", type=float, default=5.0, help="the gate's cap per organism")
    parser.add_argument("--judges", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=15.0, help="the judging window")
    args = parser.parse_args(argv)
    ws_bench._raise_fd_limit(args.judges + 256)
    data = Path(tempfile.mkdtemp(prefix="bench-lab-", dir=Path(__file__).resolve().parent))
    server = ws_bench.Server(serve_code(), str(data))
    figures: dict[str, Any] = {"organisms": args.organisms, "cap_s": args.cap}
    try:
        token = (data / "owner.token").read_text().strip()
        http_url = f"http://127.0.0.1:{server.port}"
        trio.run(_populate, server.url, token, args.organisms)
        figures.update(_gate(http_url, token, args.cap))
        _log(f"gate: {figures['gate_organisms_per_min']} organisms/min, p50 "
             f"{figures['gate_p50_s']} s, p99 {figures['gate_p99_s']} s")
        figures.update(trio.run(_judges, server.url, args.judges, args.seconds))
        _log(f"judging: {figures['votes_per_s']} votes/s, deal p99 {figures['deal_p99_ms']} ms")
    finally:
        server.close()
        shutil.rmtree(data, ignore_errors=True)
    return figures
