"""Chaos: mixed writes on a counter and a field from several clients while the server, its
store writer, or both are SIGKILLed at seeded random moments, cycle after cycle. After
every restart (of the server, or of the writer by the server) each acknowledged write is
in the store at the revision its reply named, and every stream's revisions run 1..N with
no hole. A write whose outcome was unknown was sent again with its request id, so no
write is stored twice.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path

import attrs
import pytest
import trio

from protocol import client
from protocol.client import Client
from server.storage.sqlite import SqliteEventStore
from tests.field_live._live import start
from tests.server.chaos_load import Ack, Ledger, count_up, play
from tests.server.server_process import ServerProcess

SEED = 18
CYCLES = 10
COUNTER, FIELD = "counter:chaos", "field:chaos"
COUNTERS, PLAYERS = 3, 2  # clients adding to the counter, agents playing the field
MAX_WRITER_DEATHS = 4  # per server process: the sixth in a minute makes it exit (on purpose)
RESUME_TIMEOUT = 30.0  # seconds for the load to be acknowledged again after a kill


@attrs.define
class Audit:
    """What the store was found to hold against the acknowledgements, over every check."""

    checks: int = 0
    lost: list[Ack] = attrs.Factory(list)  # acknowledged, but not stored as acknowledged
    holes: list[str] = attrs.Factory(list)  # streams whose revisions were not 1..N
    revisions: dict[str, int] = attrs.Factory(dict)

    async def check(self, store: SqliteEventStore, ledger: Ledger) -> None:
        """Every acknowledgement so far is stored where its reply said; no stream has a
        hole."""
        acks = list(ledger.acks)  # acknowledged before we read: durable before that
        self.checks += 1
        listed = await store.streams()  # the server may append on while we read
        for stream in (COUNTER, FIELD):
            events = await store.read(stream)
            self.revisions[stream] = len(events)
            if [e.rev for e in events] != list(range(1, len(events) + 1)) \
                    or len(events) < listed[stream]:
                self.holes.append(stream)
            by_rev = {e.rev: e.data for e in events}
            self.lost += [a for a in acks if a.stream == stream
                          and not a.holds.items() <= by_rev.get(a.rev, {}).items()]


async def _resumed(ledger: Ledger, server: ServerProcess) -> None:
    """Wait until both worlds acknowledge writes again."""
    before = {s: ledger.count(s) for s in (COUNTER, FIELD)}
    with trio.fail_after(RESUME_TIMEOUT):
        while any(ledger.count(s) <= n for s, n in before.items()):
            assert server.proc is not None and server.proc.poll() is None, \
                "".join(server.output[-30:])
            await trio.sleep(0.05)


def _kill(server: ServerProcess, what: str) -> Callable[[], None]:
    def kill() -> None:
        if what in ("writer", "both"):
            assert server.kill_writer(), "the server had no store writer to kill"
        if what in ("server", "both"):
            server.kill()
            server.start(port=server.port)
    return kill


async def test_acknowledged_writes_survive_random_kills_of_server_and_writer(
        tmp_path: Path, record_property: Callable[[str, object], None],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Clients reconnect within 0.2 s, so the cycles are not spent in backoff.
    monkeypatch.setattr(client, "backoff_delays", partial(client.backoff_delays, cap=0.2))
    rng = random.Random(SEED)
    server = ServerProcess(tmp_path / "data")
    await trio.to_thread.run_sync(server.start)
    kills: Counter[str] = Counter()
    ledger, audit = Ledger(), Audit()
    began = time.monotonic()
    try:
        token = server.owner_token
        assert token is not None
        async with Client.connect(server.ws_url, token) as c:
            await c.request("counter.create", COUNTER)
            await start(c, "chaos", size=24, seed=SEED, guess="accept")
        async with SqliteEventStore.in_directory(server.data_dir) as store, \
                trio.open_nursery() as nursery:
            for k in range(COUNTERS):
                nursery.start_soon(count_up, server.ws_url, token, COUNTER, k, ledger)
            for k in range(PLAYERS):
                nursery.start_soon(play, server.ws_url, token, FIELD, k, ledger)
            await _resumed(ledger, server)
            writer_deaths = 0
            for _ in range(CYCLES):
                await trio.sleep(rng.uniform(0.2, 1.0))  # the kill lands mid-load
                what = rng.choice(["server", "writer", "both"])
                if what == "writer" and writer_deaths >= MAX_WRITER_DEATHS:
                    what = "both"
                writer_deaths = writer_deaths + 1 if what == "writer" else 0
                await trio.to_thread.run_sync(_kill(server, what))
                kills[what] += 1
                await _resumed(ledger, server)
                await audit.check(store, ledger)
            nursery.cancel_scope.cancel()
        await trio.to_thread.run_sync(server.kill)  # a last kill, then the final count
        async with SqliteEventStore.in_directory(server.data_dir) as store:
            await audit.check(store, ledger)
            notes = [e.data["note"] for e in await store.read(COUNTER)
                     if e.data["type"] == "added"]
    finally:
        await trio.to_thread.run_sync(server.kill)

    assert len(notes) == len(set(notes)), "a write was stored twice"
    acked_notes = {a.holds["note"] for a in ledger.acks if a.stream == COUNTER}
    assert acked_notes <= set(notes)
    figures = {"cycles": CYCLES, "kills": dict(kills), "acknowledged": len(ledger.acks),
               "acknowledged_counter": ledger.count(COUNTER),
               "acknowledged_field": ledger.count(FIELD), "unknown_outcomes": ledger.unknown,
               "stored": audit.revisions,
               "checks": audit.checks, "lost": len(audit.lost), "holes": len(audit.holes),
               "seconds": round(time.monotonic() - began, 1)}
    record_property("chaos", figures)
    print(f"\nchaos: {figures}")
    assert not audit.lost, f"acknowledged writes lost: {audit.lost[:5]}"
    assert not audit.holes, f"streams with a hole: {audit.holes}"
    assert all(kills[w] for w in ("server", "writer", "both")), kills
