"""The two load scenarios that `python -m bench load` measures and tests/server/test_load.py
checks, against a server in its own process with its default budgets:

- `idle_and_half_open`: a measured client's round trips, quiet, then while `idle` greeted,
  idle websockets and `half_open` handshakes that never finish are held (each reopened
  whenever the server's `handshake_timeout` closes it);
- `hostile_reader`: the measured client's round trips while an anonymous client asks the
  costliest reads it may, as fast as its frame rate allows, in alternating blocks, the
  reader reading, then stopped (SIGSTOP), so that the machine's own drift over seconds
  falls on both figures alike.

Each returns what happened: the round trips' seconds, every reply, the counts. The bench
makes figures of it, the test checks the replies; nothing here judges a time.

The server allows 64 connections per client address, so the connections come from many
loopback addresses (127.0.0.0/8 is all loopback on Linux), each within that budget.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import httpx
import trio

from protocol.client import Client
from server.budgets import Budgets
from tests.field_live._live import start
from tests.server.raw_ws import RawSocket
from tests.server.server_process import REPO, ServerProcess

Log = Callable[[str], None]

PER_ADDRESS = 50  # connections from one address (the budget is 64)
COUNTER = "counter:load"
TOTAL = {"total": 7, "adds": 1, "revision": 2}  # what the counter holds: each get's answer
FIELD = "costly"  # the hostile reader's field (40 x 40)
HANDSHAKE_TIMEOUT = Budgets().handshake_timeout  # seconds the server gives a handshake
VICTIM = "127.3.0.1"  # the measured client's address
SETTLE = 1.0  # seconds between the last connection opened and the measure
IDLE_ASKED = 20  # idle connections asked a read under load, spread over all of them
WARM_UP = 2.0  # seconds the hostile reader reads before the first block (its burst counts)
PAUSE_SETTLE = 0.1  # seconds from pausing the reader to measuring the quiet block
PARTIAL = b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"  # never ends
HOSTILE_READS = [("field.observe", {}), ("field.history", {"revision": 1}),
                 ("field.observe", {"rect": [0, 0, 1000, 1000]})]


def _quiet(_: str) -> None:
    """No progress messages."""


def percentile_ms(samples: list[float], q: float) -> float:
    """The q-th quantile of `samples` (seconds), in ms."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000


def spread(samples: list[float]) -> dict[str, float]:
    """p50, p90 and p99 of `samples` (seconds), in ms."""
    return {f"p{round(q * 100)}_ms": round(percentile_ms(samples, q), 2)
            for q in (0.5, 0.9, 0.99)}


def address(block: int, k: int) -> str:
    """The k-th source address of a block (block 0: idle, 1: half-open handshakes)."""
    n = k // PER_ADDRESS + 2
    return f"127.{block}.{n // 256}.{n % 256}"


async def greeted(port: int, local: str | None = None, token: str | None = None) -> RawSocket:
    """A websocket from `local`, past its hello (anonymous, or the agent of `token`)."""
    sock = await RawSocket.open(port, local=local)
    hello = await sock.hello(token)
    if not hello["ok"]:
        await sock.aclose()
        raise RuntimeError(f"hello refused from {local}: {hello}")
    return sock


async def round_trips(sock: RawSocket, first: int, n: int) -> tuple[list[float], list[dict]]:
    """Seconds and replies of `n` counter.get round trips (ids from `first`), a few ms
    apart."""
    seconds, replies = [], []
    for rid in range(first, first + n):
        t = time.perf_counter()
        await sock.send_json({"id": rid, "op": "counter.get", "to": COUNTER})
        replies.append(await sock.recv_json())
        seconds.append(time.perf_counter() - t)
        await trio.sleep(0.005)
    return seconds, replies


@asynccontextmanager
async def _owner(server: ServerProcess) -> AsyncIterator[Client]:
    """The owner's client, once the counter is made and holds `TOTAL`."""
    async with Client.connect(server.ws_url, server.owner_token) as client:
        await client.request("counter.create", COUNTER)
        await client.request("counter.add", COUNTER, {"amount": TOTAL["total"]})
        yield client


# --- 2,000 idle connections and 500 half-open handshakes ---------------------------------


@attrs.frozen
class IdleRun:
    """What `idle_and_half_open` saw."""

    quiet: list[float]  # seconds of the round trips before the load
    loaded: list[float]  # ... while the connections were held
    replies: list[dict]  # the measured client's, quiet then loaded (ids 0, 1, ...)
    held: int  # idle websockets greeted and held
    idle_replies: list[dict]  # to a read (id 1) on `IDLE_ASKED` of them, under load
    health: dict  # `/healthz` under load: its status and its JSON
    closes: list[int]  # the slot of each half-open connection the server closed


async def idle_and_half_open(server: ServerProcess, idle: int, half_open: int, samples: int,
                             log: Log = _quiet) -> IdleRun:
    """`samples` round trips quiet, then as many with `idle` idle websockets and
    `half_open` never-finished handshakes held; then until every half-open slot has been
    closed by the server at least once, and a read on a few of the idle ones."""
    held: list[RawSocket] = []
    closes: list[int] = []
    async with _owner(server):
        pass
    victim = await greeted(server.port, VICTIM)
    try:
        quiet, replies = await round_trips(victim, 0, samples)
        async with trio.open_nursery() as nursery:
            for k in range(half_open):
                nursery.start_soon(_half_open, server.port, k, half_open, closes)
            log(f"opening {idle} idle websockets, holding {half_open} handshakes")
            # One address at a time each: an address may hold 16 connections before hello.
            with trio.fail_after(120):
                async with trio.open_nursery() as opening:
                    for first in range(0, idle, PER_ADDRESS):
                        opening.start_soon(_open_block, server.port, first,
                                           min(idle, first + PER_ADDRESS), held)
            await trio.sleep(SETTLE)
            with trio.fail_after(2 * HANDSHAKE_TIMEOUT):  # measured while the server
                while not closes:  # closes them (and they are opened again)
                    await trio.sleep(0.05)
            log(f"measuring {samples} round trips")
            loaded, more = await round_trips(victim, samples, samples)
            health = await _health(server)
            with trio.fail_after(2 * HANDSHAKE_TIMEOUT):
                while len(set(closes)) < half_open:
                    await trio.sleep(0.05)
            idle_replies = [await _read(sock) for sock in held[::max(1, idle // IDLE_ASKED)]]
            nursery.cancel_scope.cancel()
    finally:
        for sock in [victim, *held]:
            await sock.aclose()
    return IdleRun(quiet, loaded, replies + more, len(held), idle_replies, health, closes)


async def _open_block(port: int, first: int, end: int, held: list[RawSocket]) -> None:
    for k in range(first, end):
        held.append(await greeted(port, address(0, k)))


async def _half_open(port: int, k: int, slots: int, closes: list[int]) -> None:
    """Hold one handshake that never finishes, and open it again whenever the server
    closes it (every handshake timeout). The slots start spread over one timeout, so
    the server closes (and this opens) a steady stream of them, not all at once."""
    await trio.sleep(k * HANDSHAKE_TIMEOUT / slots)
    while True:
        stream = await trio.open_tcp_stream("127.0.0.1", port, local_address=address(1, k))
        if k % 2:
            await stream.send_all(PARTIAL)  # half the requests never end; half never start
        try:
            while await stream.receive_some(4096):
                pass
        except trio.BrokenResourceError:
            pass
        closes.append(k)
        await stream.aclose()


async def _read(sock: RawSocket) -> dict:
    await sock.send_json({"id": 1, "op": "counter.get", "to": COUNTER})
    return await sock.recv_json()


async def _health(server: ServerProcess) -> dict:
    async with httpx.AsyncClient() as http:
        answer = await http.get(f"{server.http_url}/healthz", timeout=10)
    return {"status": answer.status_code, **answer.json()}


# --- a hostile reader ----------------------------------------------------------------------


@attrs.frozen
class HostileRun:
    """What `hostile_reader` saw."""

    quiet: list[float]  # seconds of the round trips while the reader was stopped
    hostile: list[float]  # ... while it read
    replies: list[dict]  # the measured client's, in the order sent (ids 0, 1, ...)
    reader: dict[str, int]  # the reader's replies: "answered", and refusals by code


async def hostile_reader(server: ServerProcess, samples: int, blocks: int,
                         log: Log = _quiet, *, idle: bool = False) -> HostileRun:
    """`samples` round trips (down to a multiple of `blocks`, at least one a block) with the
    reader reading and as many with it stopped, in `blocks` alternating blocks of each. The
    measured client is an agent (an account of its own: 150 round trips a second cost ~5% of
    a core, an anonymous client's whole budget, and what is measured is the hostile one's
    effect, not the measured one's). `idle`: the reader runs on idle cores only (`Hostile`)."""
    async with _owner(server) as client:
        await start(client, FIELD, size=40, seed=3)
        agent = await client.request("admin.token_create", None, {"name": "victim"})
    victim = await greeted(server.port, VICTIM, agent["token"])
    reader = Hostile(server.port, FIELD, idle=idle)
    quiet: list[float] = []
    hostile: list[float] = []
    replies: list[dict] = []
    try:
        await trio.sleep(WARM_UP)
        log(f"measuring {samples} round trips each, in {blocks} blocks")
        for _ in range(blocks):
            seconds, got = await round_trips(victim, len(replies), samples // blocks)
            hostile += seconds
            replies += got
            reader.pause()
            await trio.sleep(PAUSE_SETTLE)  # what it had in flight is answered
            seconds, got = await round_trips(victim, len(replies), samples // blocks)
            quiet += seconds
            replies += got
            reader.resume()
        tally = await trio.to_thread.run_sync(reader.stop)
    finally:
        reader.kill()
        await victim.aclose()
    return HostileRun(quiet, hostile, replies, tally)


async def _hostile(port: int, game: str, tally: dict[str, int]) -> None:
    """An anonymous spectator sending the costliest reads as fast as its bucket allows,
    up to as many at once as the server answers (a lean client: its own CPU is not what
    is measured, and on this machine it shares the cores with the server)."""
    inflight = trio.Semaphore(32)  # what the server handles at once per connection
    sock = await greeted(port)

    async def answers() -> None:
        while True:
            reply = await sock.recv_json(timeout=30)
            code = "answered" if reply["ok"] else reply["error"]["code"]
            tally[code] = tally.get(code, 0) + 1
            inflight.release()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(answers)
        for k in range(10**9):
            await inflight.acquire()
            op, args = HOSTILE_READS[k % len(HOSTILE_READS)]
            await sock.send_json({"id": k, "op": op, "to": f"field:{game}", "args": args})
            await trio.sleep(1 / 200)  # the frame rate a connection is allowed


def hostile_main(port: int, game: str, idle: bool) -> None:
    """The hostile reader's process: read until stdin closes, then print its tally. With
    `idle` it runs only on a core that is otherwise idle (SCHED_IDLE: on this 2-core
    machine its own client work would otherwise take the CPU from the server or the
    measured client, which another machine's would not), for the bench's figures; a test
    runs it at normal priority, or on a saturated machine it might never be answered."""
    if idle:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    tally = {"answered": 0}

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_hostile, port, game, tally)
            await trio.to_thread.run_sync(sys.stdin.read)
            nursery.cancel_scope.cancel()

    trio.run(run)
    print(json.dumps(tally), flush=True)


class Hostile:
    """The hostile reader in a process of its own: it is another client on another
    machine, and its client-side work must not delay the measured client's own loop
    (`idle`: on idle cores only, `hostile_main`)."""

    def __init__(self, port: int, game: str, *, idle: bool = False) -> None:
        code = "import sys; from tests.server.load_scenarios import hostile_main; " \
               "hostile_main(int(sys.argv[1]), sys.argv[2], sys.argv[3] == 'idle')"
        self.proc = subprocess.Popen([sys.executable, "-c", code, str(port), game,
                                      "idle" if idle else "normal"], cwd=REPO,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def pause(self) -> None:
        """Stop it where it is (SIGSTOP): it sends nothing until `resume`."""
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let it go on (SIGCONT)."""
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> dict[str, Any]:
        """End it; what it was answered (and refused, by code)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        out = self.proc.stdout.read()
        self.proc.wait(30)
        return json.loads(out)

    def kill(self) -> None:
        """Make sure it is gone."""
        if self.proc.poll() is None:
            self.proc.kill()  # (SIGKILL ends a stopped process too)
            self.proc.wait(10)
