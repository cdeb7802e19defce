"""The run's state snapshot (actors/ecosystem/snapshot.py): restored at any point of a run
it is exactly the state a replay of the same events folds, and the run goes on from it
event for event; through the runtime and a real SQLite store a long run loads from its
snapshot and answers as before, and an unreadable snapshot falls back to the replay."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from actors.ecosystem import WORLD as HOSTED
from actors.ecosystem.events import Phrased
from actors.ecosystem.rules import SNAPSHOT_EVERY, WORLD
from actors.ecosystem.snapshot import VERSION, dump, load
from actors.ecosystem.state import Run
from actors.runtime import RuntimeConfig
from actors.runtime.directory import ActorKind, open_directory
from actors.runtime.mailbox import Call
from actors.store import EventStore
from protocol.convert import structure, unstructure
from server.storage import SqliteEventStore
from tests.ecosystem.table import ANSWERS, OWNER, SPECS, Table, self_patch

RUN = "ecosystem:pond"
EVERY = 30  # the runtime's snapshot period in the store tests: a snapshot each 30 events


def assert_same(a: Run, b: Run) -> None:
    """Every part of two states equal, the float32 planes byte for byte (Run's own `==`
    leaves out the engine, the graphs and the coarse pictures)."""
    assert a == b and a.graphs == b.graphs and a.densities == b.densities
    assert json.dumps(dump(a)) == json.dumps(dump(b))  # floats by repr: -0.0 is not 0.0
    if a.engine is None or b.engine is None:
        assert a.engine is b.engine
        return
    x, y = a.engine, b.engine
    for name in ("config", "graph", "seed", "size", "history", "decisions", "frame",
                 "schedule"):
        assert getattr(x, name) == getattr(y, name), name
    f, g = x.fields, y.fields
    assert (f.ids, f.size, f.seed, f.alive) == (g.ids, g.size, g.seed, g.alive)
    assert x.cache.model == y.cache.model
    for name in ("capacity_map", "stripes", "resource", "fields"):
        p, q = getattr(f, name), getattr(g, name)
        assert (p.dtype, p.shape, p.tobytes()) == (q.dtype, q.shape, q.tobytes()), name


def replayed(stored: list[dict[str, Any]], name: str = RUN) -> Run:
    """The state a load without a snapshot folds from stored events."""
    state = WORLD.initial(name)
    for data in stored:
        state = WORLD.evolve(state, WORLD.codec.decode(data))
    return state


def to(generation: int) -> Callable[[Table], Any]:
    def run(table: Table) -> Any:
        table.run_to(generation)
        return table.state.generation
    return run


def call(op: str, args: Callable[[Table], dict[str, Any]] | dict[str, Any]
         ) -> Callable[[Table], Any]:
    return lambda table: table.call(op, args(table) if callable(args) else args)


def patch(species: str) -> Callable[[Table], Any]:
    return call("ecosystem.patch", lambda t: {"patch": self_patch(species, "cooperative"),
                                              "expected_graph_version": t.state.graph["version"]})


def schedule(generation: int, activation: str, duration: str, transition: str,
             change: dict[str, str]) -> Callable[[Table], Any]:
    return call("ecosystem.schedule", {"change": {
        "generation": generation, "activation": activation, "duration": duration,
        "transition": transition, "patch": change}})


def phrased(table: Table) -> None:
    table.fold([Phrased("model", "The snails held on.", "fake-model", None, 1)])


SNAP = "snapshot"  # a point of the script where the test snapshots the run
SCRIPT: list[Any] = [
    SNAP,  # generation 0
    call("ecosystem.control", {"action": "play", "speed": 30}), to(12),
    schedule(14, "after_6", "short", "ramp", {"kind": "environment", "field": "pressure",
                                              "value": "toxin_wave"}),
    patch("A"),
    schedule(40, "population_boom", "persistent", "pulse", self_patch("C", "cooperative")),
    to(22), SNAP,  # a ramp under way, a temporary change holding, a decision pending
    patch("B"), SNAP,  # a decision due at the next generation
    call("ecosystem.control", {"action": "pause", "speed": 5}), to(100), SNAP,
    to(180), SNAP,  # ended
    phrased, SNAP,
]


def test_a_restored_run_is_the_replayed_one_and_goes_on_event_for_event() -> None:
    full = Table(RUN)
    full.call("ecosystem.create", {"answers": ANSWERS, "seed": 5, "size": 16})
    points, replies = [], []
    for k, step in enumerate(SCRIPT):
        if step == SNAP:
            points.append((k, full.state, len(full.stored),
                           json.dumps(WORLD.snapshot.dump(full.state))))
        else:
            replies.append((k, step(full)))
    schedules = [s.engine.schedule for _, s, _, _ in points]
    assert any(s.pending and s.holdings and s.bases and s.transitions for s in schedules)
    assert any(len(s.decisions) > len(s.engine.decisions) for _, s, _, _ in points)
    assert full.state.ended is not None and full.state.phrasing is not None
    for k, live, n, text in points:
        restored = WORLD.snapshot.load(json.loads(text))
        assert_same(restored, live)
        assert_same(restored, replayed(full.stored[:n]))
        twin = Table(RUN)
        twin.state = restored
        again = [(j, step(twin)) for j, step in enumerate(SCRIPT) if j > k and step != SNAP]
        assert again == [(j, reply) for j, reply in replies if j > k]
        assert twin.stored == full.stored[n:]
        assert_same(twin.state, full.state)
        assert WORLD.view(twin.state) == WORLD.view(full.state)
        for g in range(0, 181, 30):
            assert twin.call("ecosystem.history", {"generation": g, "count": 181}) == \
                full.call("ecosystem.history", {"generation": g, "count": 181})


def test_the_empty_state_round_trips_and_other_versions_are_refused() -> None:
    empty = WORLD.initial(RUN)
    assert_same(load(json.loads(json.dumps(dump(empty)))), empty)
    with pytest.raises(ValueError, match=r"^ecosystem snapshot version 2, not 1$"):
        load({**dump(empty), "v": VERSION + 1})
    with pytest.raises(ValueError, match=r"^ecosystem snapshot version None, not 1$"):
        load({k: v for k, v in dump(empty).items() if k != "v"})
    with pytest.raises(ValueError, match=r"^ecosystem snapshot version None, not 1$"):
        load("not a snapshot")


# ---- through the runtime and a real SQLite store -----------------------------------------

KINDS = [ActorKind.of(HOSTED)]
CONFIG = RuntimeConfig(snapshot_every=EVERY)


def ask(op: str, args: dict[str, Any]) -> Call:
    return Call(op, structure(args, SPECS[op].args), "agent", OWNER)


async def answers(directory: Any) -> list[Any]:
    """What the run answers a reader: its view and its history from every 7th generation."""
    out = [await directory.ask(RUN, ask("ecosystem.view", {}))]
    for g in range(0, 70, 7):
        out.append(await directory.ask(RUN, ask("ecosystem.history",
                                                {"generation": g, "count": 181})))
    return [unstructure(a) for a in out]


async def long_run(store: EventStore, config: RuntimeConfig = CONFIG
                   ) -> tuple[Run, list[Any]]:
    """A run of more than EVERY events (65 generations, two patches, speed changes): its
    state and its answers, then unloaded."""
    async with open_directory(store, KINDS, config=config) as directory:
        await directory.ask(RUN, ask("ecosystem.create", {"answers": ANSWERS, "seed": 5,
                                                          "size": 16}))
        for g in range(65):
            if g in (10, 30):
                version = (await directory.get(RUN)).state.graph["version"]
                await directory.ask(RUN, ask("ecosystem.patch", {
                    "patch": self_patch("AB"[g // 30], "cooperative"),
                    "expected_graph_version": version}))
            if g % 4 == 0:
                await directory.ask(RUN, ask("ecosystem.control",
                                             {"action": "pause", "speed": 1 + g % 8}))
            await directory.ask(RUN, ask("ecosystem.control", {"action": "step"}))
        return (await directory.get(RUN)).state, await answers(directory)


async def test_a_long_run_loads_from_its_snapshot_and_answers_as_before(tmp_path: Path) -> None:
    path = tmp_path / "events.sqlite3"
    async with SqliteEventStore(path) as store:
        before, said = await long_run(store)
        rev, snap = await store.revision(RUN), await store.load_snapshot(RUN)
    assert snap is not None and snap.data["v"] == VERSION
    assert rev == before.rev == 86 and snap.rev == 60 == snap.data["rev"]
    # A generation before the snapshot no longer simulates to its stored digest: a replay
    # refuses such a stream, a load from the snapshot does not simulate it again.
    with sqlite3.connect(path) as db:
        (text,) = db.execute("SELECT data FROM events WHERE stream = ? AND rev = 12",
                             (RUN,)).fetchone()
        tampered = json.loads(text)
        assert tampered["type"] == "generation"
        tampered["frame"]["digest"] = "0" * 32
        db.execute("UPDATE events SET data = ? WHERE stream = ? AND rev = 12",
                   (json.dumps(tampered), RUN))
    async with SqliteEventStore(path) as store, \
            open_directory(store, KINDS, config=CONFIG) as directory:
        actor = await directory.get(RUN)
        assert actor.rev == actor.statistics().rev == rev
        assert_same(actor.state, before)
        assert await answers(directory) == said


async def test_a_run_snapshots_every_sixty_events_below_the_runtime_s_period(
        tmp_path: Path) -> None:
    """Each stored generation is simulated again when folded, so a run snapshots more often
    than the runtime's default (500 events, more than a whole run makes)."""
    async with SqliteEventStore(tmp_path / "events.sqlite3") as store:
        await long_run(store, RuntimeConfig())
        snap = await store.load_snapshot(RUN)
    assert RuntimeConfig().snapshot_every == 500 and SNAPSHOT_EVERY == 60
    assert snap is not None and snap.rev == 60


async def test_the_run_goes_on_from_its_snapshot_as_a_replay_does(tmp_path: Path) -> None:
    async with SqliteEventStore(tmp_path / "events.sqlite3") as store:
        await long_run(store)
        async with open_directory(store, KINDS, config=CONFIG) as directory:
            for _ in range(20):
                await directory.ask(RUN, ask("ecosystem.control", {"action": "step"}))
            state = (await directory.get(RUN)).state
        stored = [e.data for e in await store.read(RUN)]
        snap = await store.load_snapshot(RUN)
    assert snap is not None and snap.rev == 90  # loaded from 60, saved again at 90
    assert state.generation == 85 and len(stored) == 106
    assert_same(state, replayed(stored, "pond"))  # (the host names it without its kind)


async def test_an_unreadable_snapshot_falls_back_to_the_whole_replay(tmp_path: Path) -> None:
    async with SqliteEventStore(tmp_path / "events.sqlite3") as store:
        before, said = await long_run(store)
        for bad in ("not a snapshot", {**dump(before), "v": VERSION - 1},
                    {**dump(before), "engine": {"graph": {}}}):
            snap = await store.load_snapshot(RUN)
            assert snap is not None and snap.data["v"] == VERSION
            await store.save_snapshot(RUN, snap.rev, bad)  # at the same revision: replaced
            assert (await store.load_snapshot(RUN)).data == json.loads(json.dumps(bad))
            async with open_directory(store, KINDS, config=CONFIG) as directory:
                actor = await directory.get(RUN)
                assert actor.rev == before.rev
                assert_same(actor.state, before)
                assert await answers(directory) == said
            # Loaded from nothing, the run was EVERY events or more past its last snapshot:
            # the first batch after the load saved a readable one.
            fresh = await store.load_snapshot(RUN)
            assert fresh is not None and fresh.rev == before.rev
            assert_same(load(fresh.data), before)
