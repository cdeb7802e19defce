"""Bounded load tests, against a server in its own process with its default budgets: a
client's round trip stays under 50 ms p99 while 2,000 idle connections and 500
handshakes that never finish are held; an anonymous client asking the costliest reads it
may, as fast as its frame rate allows, cannot raise another client's p99 more than 2x.
These two timings are what the issue asks the tests to show, so they are asserted (over
200 and 4,000 round trips); every other speed lives in bench/. (One agent cannot create
more worlds than its budget: tests/server/test_budgets.py.)

The hostile-reader figures are taken in alternating blocks, the reader reading, then
stopped (SIGSTOP), so that this VM's own drift (steal time of 10% and more, a quiet p99
from 1 to 15 ms between runs) falls on both; the reader is a lean client in a process of
its own that runs only on an idle core. Measured while the design was settled: over
2,000 round trips, ratios from 1.2x to 1.9x in 20 runs and 2.02x once (the reader then
ran at normal priority); over 4,000 with the reader on idle cores, 1.3x to 1.6x. The
reader adds ~0.5-1 ms to the p99: one costly read, and its share (5% of a core) of the
collections and the run queue.

The server allows 64 connections per client address, so the connections come from many
loopback addresses (127.0.0.0/8 is all loopback on Linux), each within that budget.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trio

from protocol.client import Client
from server.budgets import Budgets
from tests.field_live._live import start
from tests.server.raw_ws import RawSocket
from tests.server.server_process import REPO, ServerProcess

IDLE, HALF_OPEN = 2000, 500
PER_ADDRESS = 50  # connections from one address (the budget is 64)
SAMPLES = 200  # round trips measured per figure
HOSTILE_SAMPLES = 4000  # ... of the hostile-reader figures (a p99 of 200 is 2 samples)
HOSTILE_BLOCKS = 20  # ... taken in alternating blocks, reader reading and paused
PAUSE_SETTLE = 0.1  # seconds from pausing the reader to measuring the quiet block
P99_LIMIT_MS = 50.0
COUNTER = "counter:load"
HANDSHAKE_TIMEOUT = Budgets().handshake_timeout  # seconds the server gives a handshake
VICTIM = "127.3.0.1"
SETTLE = 1.0  # seconds between the last connection opened and the measure
PARTIAL = b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"  # never ends


def _address(block: int, k: int) -> str:
    """The k-th source address of a block (block 0: idle, 1: half-open handshakes)."""
    n = k // PER_ADDRESS + 2
    return f"127.{block}.{n // 256}.{n % 256}"


def _p99(samples: list[float], q: float = 0.99) -> float:
    """The 99th (or the q-th) percentile, in ms."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000


async def _round_trips(victim: RawSocket, n: int = SAMPLES) -> list[float]:
    """Seconds of `n` counter.get round trips, a few ms apart."""
    out = []
    for rid in range(n):
        t = time.perf_counter()
        await victim.send_json({"id": rid, "op": "counter.get", "to": COUNTER})
        reply = await victim.recv_json()
        out.append(time.perf_counter() - t)
        assert reply["ok"] and reply["id"] == rid, reply
        await trio.sleep(0.005)
    return out


async def _victim(port: int, token: str | None = None) -> RawSocket:
    """The measured client, from an address of its own: anonymous, or the agent of
    `token` (an account of its own either way, so its use of the server is what makes
    others' CPU budgets bind)."""
    sock = await RawSocket.open(port, local=VICTIM)
    assert (await sock.hello(token))["ok"]
    return sock


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server process with a counter to measure against (fd limits raised for both)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 2 * (IDLE + HALF_OPEN) + 1000
    if hard < need:
        pytest.skip(f"needs {need} file descriptors, the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))
    proc = ServerProcess(tmp_path / "data").start()  # inherits the limit
    yield proc
    proc.kill()


async def _idle(port: int, k: int, held: list[RawSocket]) -> None:
    sock = await RawSocket.open(port, local=_address(0, k))
    hello = await sock.hello()
    assert hello["ok"], hello
    held.append(sock)


async def _half_open(port: int, k: int, closed: list[int]) -> None:
    """Hold one handshake that never finishes, and open it again whenever the server
    closes it (every handshake timeout). The slots start spread over one timeout, so
    the server closes (and the flood opens) a steady stream of them, not all at once."""
    await trio.sleep(k * HANDSHAKE_TIMEOUT / HALF_OPEN)
    while True:
        stream = await trio.open_tcp_stream("127.0.0.1", port, local_address=_address(1, k))
        if k % 2:
            await stream.send_all(PARTIAL)  # half the requests never end; half never start
        try:
            while await stream.receive_some(4096):
                pass
        except trio.BrokenResourceError:
            pass
        closed.append(k)
        await stream.aclose()


async def test_round_trip_p99_under_50_ms_with_2000_idle_and_500_half_open(
        server: ServerProcess, record_property: Callable[[str, object], None]) -> None:
    held: list[RawSocket] = []
    closed: list[int] = []
    async with Client.connect(server.ws_url, server.owner_token) as c:
        await c.request("counter.create", COUNTER)
        victim = await _victim(server.port)
        quiet = _p99(await _round_trips(victim))
        async with trio.open_nursery() as nursery:
            for k in range(HALF_OPEN):
                nursery.start_soon(_half_open, server.port, k, closed)
            # One address at a time each: an address may hold 16 connections before hello.
            with trio.fail_after(120):
                async with trio.open_nursery() as opening:
                    for first in range(0, IDLE, PER_ADDRESS):
                        opening.start_soon(_open_block, server.port, first, held)
            await trio.sleep(SETTLE)
            with trio.fail_after(2 * HANDSHAKE_TIMEOUT):  # measured while the server
                while not closed:  # closes them (and the flood opens them again)
                    await trio.sleep(0.05)
            loaded = _p99(await _round_trips(victim))
            health = await c.request("lobby.list")  # the server still answers everything
            nursery.cancel_scope.cancel()
        assert len(held) == IDLE
        for sock in held[::100]:  # idle, greeted connections are still served
            await sock.send_json({"id": 1, "op": "counter.get", "to": COUNTER})
            assert (await sock.recv_json())["ok"]
    figures = {"idle": IDLE, "half_open": HALF_OPEN, "p99_ms_quiet": round(quiet, 2),
               "p99_ms_loaded": round(loaded, 2), "samples": SAMPLES,
               "half_open_closed_by_server": len(closed)}
    record_property("load", figures)
    print(f"\nload: {figures}")
    assert health["worlds"]
    assert loaded < P99_LIMIT_MS, figures
    for sock in held:
        await sock.aclose()


async def _open_block(port: int, first: int, held: list[RawSocket]) -> None:
    for k in range(first, first + PER_ADDRESS):
        await _idle(port, k, held)


HOSTILE_READS = [("field.observe", {}), ("field.history", {"revision": 1}),
                 ("field.observe", {"rect": [0, 0, 1000, 1000]})]


async def _hostile(port: int, game: str, tally: dict[str, int]) -> None:
    """An anonymous spectator sending the costliest reads as fast as its bucket allows,
    up to as many at once as the server answers (a lean client: its own CPU is not what
    is measured, and on this machine it shares the cores with the server)."""
    inflight = trio.Semaphore(32)  # what the server handles at once per connection
    sock = await RawSocket.open(port)
    assert (await sock.hello())["ok"]

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


def hostile_main(port: int, game: str) -> None:
    """The hostile reader's process: read until stdin closes, then print its tally. It
    runs only on a core that is otherwise idle (SCHED_IDLE): on this 2-core machine its
    own client work would otherwise take the CPU from the server or the measured client,
    which another machine's would not."""
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
    machine, and its client-side work must not delay the measured client's own loop."""

    def __init__(self, port: int, game: str) -> None:
        code = "import sys; from tests.server.test_load import hostile_main; " \
               "hostile_main(int(sys.argv[1]), sys.argv[2])"
        self.proc = subprocess.Popen([sys.executable, "-c", code, str(port), game], cwd=REPO,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def pause(self) -> None:
        """Stop it where it is (SIGSTOP): it sends nothing until `resume`."""
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let it go on (SIGCONT)."""
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> dict[str, int]:
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


async def test_a_hostile_reader_cannot_double_another_clients_p99(
        server: ServerProcess, record_property: Callable[[str, object], None]) -> None:
    token = server.owner_token
    async with Client.connect(server.ws_url, token) as c:
        await c.request("counter.create", COUNTER)
        await start(c, "costly", size=40, seed=3)
        # An agent: 150 round trips a second cost ~5% of a core, an anonymous client's
        # whole budget, and the measure is of the hostile, not of the measured one's.
        agent = await c.request("admin.token_create", None, {"name": "victim"})
    victim = await _victim(server.port, agent["token"])
    hostile_reader = Hostile(server.port, "costly")
    quiet_rts: list[float] = []
    hostile_rts: list[float] = []
    try:
        await trio.sleep(2)  # it starts and reads (its burst is part of what is measured)
        # Alternating blocks, so that the machine's own drift over seconds falls on both.
        for _ in range(HOSTILE_BLOCKS):
            hostile_rts += await _round_trips(victim, HOSTILE_SAMPLES // HOSTILE_BLOCKS)
            hostile_reader.pause()
            await trio.sleep(PAUSE_SETTLE)  # what it had in flight is answered
            quiet_rts += await _round_trips(victim, HOSTILE_SAMPLES // HOSTILE_BLOCKS)
            hostile_reader.resume()
        tally = await trio.to_thread.run_sync(hostile_reader.stop)
    finally:
        hostile_reader.kill()
    quiet, hostile = _p99(quiet_rts), _p99(hostile_rts)
    figures = {"p99_ms_quiet": round(quiet, 2), "p99_ms_hostile": round(hostile, 2),
               "ratio": round(hostile / quiet, 2), "samples": HOSTILE_SAMPLES, "hostile": tally,
               "p50_ms": [round(_p99(quiet_rts, 0.5), 2), round(_p99(hostile_rts, 0.5), 2)],
               "p90_ms": [round(_p99(quiet_rts, 0.9), 2), round(_p99(hostile_rts, 0.9), 2)]}
    record_property("hostile_reader", figures)
    print(f"\nhostile reader: {figures}")
    assert tally["answered"] > 0
    assert hostile <= 2 * quiet, figures
