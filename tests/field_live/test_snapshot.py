"""The field's store snapshot (rules.dump / rules.load): a field restored from it equals its
replay and answers every op as before, through the runtime and a real SQLite store; the
history before it is folded again when asked; a snapshot of another format, or one that
does not load, is skipped for a replay of the whole stream."""

from __future__ import annotations

import json
import sqlite3
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import trio

from actors import field
from actors.field import actor as field_actor
from actors.field import live, rules
from actors.field.actor import MAX_REPLAYS, truth_stream
from actors.field.events import JoinEvent
from actors.field.generate import Field
from actors.runtime import Actor, ActorKind, Call, RuntimeConfig, open_directory
from actors.runtime.mailbox import Pending
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops.field import HistoryArgs, JoinArgs, LeaderboardArgs, ObserveArgs, RulesArgs
from server.storage import SqliteEventStore
from tests.field._games import Game, play_random, scatter

GAME = "snap"
ID = f"field:{GAME}"
KINDS = [ActorKind.of(field.WORLD)]
CONFIG = RuntimeConfig(snapshot_every=64)


@cache
def _stream() -> tuple[Field, tuple[dict[str, Any], ...]]:
    """A field played by three agents, and its stored records (joins by caller "tester")."""
    g = Game(scatter("referee", 60), seed=3)
    play_random(g, np.random.default_rng(3), steps=200, agents=3)
    w, records = rules.initial(GAME), []
    for ev in g.events:
        ev = rules.Joined(ev, "tester") if isinstance(ev, JoinEvent) else ev
        w = rules.evolve(w, ev)
        records.append(rules.encode(ev, w))
    return g.truth, tuple(json.loads(json.dumps(records)))


def _revisions(n: int) -> list[int]:
    return [1, 2, 5, n // 3, n // 2, n - 1, n]


def test_a_restored_field_equals_its_replay_and_its_history_completes() -> None:
    _truth, records = _stream()
    full = rules.replayed(GAME, records)
    for k in (len(records) // 3, len(records)):
        replayed = rules.replayed(GAME, records[:k])
        w = rules.load(json.loads(json.dumps(rules.dump(replayed))))
        assert w == replayed and rules.view(w) == rules.view(replayed)
        assert (w.history.first, w.history.events) == (k, [])
        for record in records[k:]:
            w = rules.evolve(w, rules.decode(record))
        assert w == full
        assert w.history.state_at(len(records)) == full.state
        with pytest.raises(ValueError, match=rf"^revision {k - 1} is not in {k}\.\."):
            w.history.state_at(k - 1)
        w.history.prepend(replayed.history)
        assert w.history.first == 0
        assert all(w.history.state_at(r) == full.history.state_at(r)
                   for r in range(len(records) + 1))


def test_a_snapshot_of_another_format_is_refused() -> None:
    data = rules.dump(rules.replayed(GAME, _stream()[1]))
    with pytest.raises(ValueError, match=r"^field snapshot version 0, not 1$"):
        rules.load({**data, "v": 0})
    with pytest.raises(ValueError, match=r"^field snapshot version None, not 1$"):
        rules.load([])


async def _stored(tmp_path: Path) -> SqliteEventStore:
    """The SQLite store of `tmp_path`, holding the field's secret and its stream."""
    truth, records = _stream()
    async with SqliteEventStore.in_directory(tmp_path) as store:
        await store.save_snapshot(truth_stream(GAME), 0, truth.to_dict())
        await store.append(ID, 0, list(records))
    return SqliteEventStore.in_directory(tmp_path)


async def _shows(actor: Actor, revisions: list[int]) -> dict[str, Any]:
    """What the field answers a spectator: views, observations, rules, board, history (its
    asks sent at once)."""
    async def ask(op: str, args: Any) -> Any:
        return await actor.ask(Call(op, args, "spectator", "watcher"))

    agents = [a.id for a in actor.state.state.agents]
    return {"view": actor.view(), "history": await _history(actor, revisions),
            "rules": await ask("field.rules", RulesArgs()),
            "observe": [await ask("field.observe", ObserveArgs(agent=a)) for a in agents],
            "map": await ask("field.observe", ObserveArgs(rect=(0, 0, 60, 60))),
            "board": await ask("field.leaderboard", LeaderboardArgs())}


async def _history(actor: Actor, revisions: list[int]) -> dict[int, Any]:
    """The field's views at `revisions`, its asks sent at once."""
    history: dict[int, Any] = {}

    async def one(r: int) -> None:
        history[r] = await actor.ask(Call("field.history", HistoryArgs(revision=r),
                                          "spectator", "watcher"))

    async with trio.open_nursery() as n:
        for r in revisions:
            n.start_soon(one, r)
    return history


async def _join(actor: Actor, caller: str) -> None:
    await actor.ask(Call("field.join", JoinArgs(name=caller), "agent", caller))


async def test_a_field_loads_from_its_snapshot_and_answers_as_before(tmp_path: Path) -> None:
    n = len(_stream()[1])
    revisions = _revisions(n + 1)
    async with await _stored(tmp_path) as store:
        async with open_directory(store, KINDS, config=CONFIG) as d:
            actor = await d.get(ID)
            assert actor.state.history.first == 0  # no snapshot: the stream was folded
            await _join(actor, "late")  # more than snapshot_every events: a snapshot
            before, state = await _shows(actor, revisions), actor.state
        snap = await store.load_snapshot(ID)
        assert snap.rev == n + 1 and snap.data["v"] == rules.SNAPSHOT_VERSION
        async with open_directory(store, KINDS, config=CONFIG) as d:
            actor = await d.get(ID)
            # loaded from the snapshot: not one event before it was folded
            assert (actor.state.history.first, actor.state.history.events) == (n + 1, [])
            assert actor.state == state
            # an effect answers field.history now; it stays a read (safe to send again)
            assert "field.history" in KINDS[0].reads
            # the history asks below the snapshot wait for the stream's fold, then answer
            assert await _shows(actor, revisions) == before
            assert actor.state.history.first == 0
            await _join(actor, "later")
            await _join(actor, "latest")
            state = actor.state
        async with open_directory(store, KINDS, config=CONFIG) as d:
            actor = await d.get(ID)  # the snapshot, then the two events after it
            assert (actor.state.history.first, len(actor.state.history.events)) == (n + 1, 2)
            stored = [e.data for e in await store.read(ID)]
            assert actor.state == state == rules.replayed(GAME, stored)


class _Charged(Pending):
    """An answer slot that keeps what serving its ask was charged, charge by charge."""

    def __init__(self) -> None:
        super().__init__()
        self.charges: list[float] = []

    def charge(self, seconds: float) -> None:
        self.charges.append(seconds)


async def test_the_history_fold_below_a_snapshot_is_charged_to_the_ask_that_set_it_off(
        tmp_path: Path) -> None:
    async with await _stored(tmp_path) as store:
        async with open_directory(store, KINDS, config=CONFIG) as d:
            await _join(await d.get(ID), "late")  # past snapshot_every: a snapshot
        async with open_directory(store, KINDS, config=CONFIG) as d:
            await d.get(ID)  # from the snapshot
            first, second = _Charged(), _Charged()
            for answer, revision in ((first, 1), (second, 2)):
                ask = Call("field.history", HistoryArgs(revision=revision), "spectator", "s")
                assert (await d.ask(ID, ask, answer=answer)).view["revision"] == revision
        # The first: its handler's time, then the worker thread's fold of the stream (the
        # spectator's CPU budget pays it); the second found the history folded.
        assert len(first.charges) == 2 and first.charges[1] > 0
        assert len(second.charges) == 1


class _ReadsKept(SqliteEventStore):
    """A SQLite store that keeps the revisions each read of the field's stream returned
    (or, `failing`, fails those reads)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self.reads: list[list[int]] = []
        self.failing = False

    async def read_rows(self, stream: str, after: int = 0, upto: int | None = None
                        ) -> list[tuple[int, str]]:
        if self.failing and stream == ID:
            raise sqlite3.OperationalError("disk I/O error")
        rows = await super().read_rows(stream, after, upto)
        if stream == ID:
            self.reads.append([rev for rev, _ in rows])
        return rows


async def test_the_history_before_the_snapshot_reads_the_stream_only_up_to_it(
        tmp_path: Path) -> None:
    n = len(_stream()[1])
    async with await _stored(tmp_path) as store, open_directory(store, KINDS,
                                                                 config=CONFIG) as d:
        await _join(await d.get(ID), "late")  # a snapshot at n + 1
    async with _ReadsKept.in_directory(tmp_path) as store, open_directory(
            store, KINDS, config=CONFIG) as d:
        actor = await d.get(ID)
        await _join(actor, "later")  # n + 2, after the snapshot
        store.reads.clear()
        await actor.ask(Call("field.history", HistoryArgs(revision=3), "spectator", "w"))
        assert store.reads == [list(range(1, n + 2))]
        assert (actor.state.history.first, len(actor.state.history.events)) == (0, n + 2)


@pytest.mark.parametrize("snapshot", ["old", "broken"])
async def test_a_snapshot_that_does_not_load_is_skipped_for_a_replay(
        tmp_path: Path, snapshot: str) -> None:
    _truth, records = _stream()
    n = len(records)
    data = rules.dump(rules.replayed(GAME, records))
    data = {**data, "v": 0} if snapshot == "old" else {**data, "state": {"revision": n}}
    async with await _stored(tmp_path) as store:
        async with open_directory(store, KINDS, config=CONFIG) as d:
            before = await _shows(await d.get(ID), _revisions(n))
        await store.save_snapshot(ID, n, data)
        async with open_directory(store, KINDS, config=CONFIG) as d:
            actor = await d.get(ID)
            assert (actor.state.history.first, len(actor.state.history.events)) == (0, n)
            assert actor.state == rules.replayed(GAME, records)
            assert await _shows(actor, _revisions(n)) == before
        # the replay left no snapshot behind: the first message saved one of this format
        snap = await store.load_snapshot(ID)
        assert snap.rev == n and snap.data == json.loads(json.dumps(rules.dump(actor.state)))


async def test_a_history_that_cannot_be_folded_again_is_refused_unavailable(
        tmp_path: Path) -> None:
    n = len(_stream()[1])
    async with await _stored(tmp_path) as store, open_directory(store, KINDS,
                                                                 config=CONFIG) as d:
        await _join(await d.get(ID), "late")  # a snapshot at n + 1
    db = sqlite3.connect(tmp_path / "events.sqlite3")
    with db:  # an event before it rots
        db.execute("UPDATE events SET data = '{\"kind\": \"rot\"}' WHERE stream = ? AND rev = 5",
                   (ID,))
    db.close()
    async with SqliteEventStore.in_directory(tmp_path) as store, \
            open_directory(store, KINDS, config=CONFIG) as d:
        actor = await d.get(ID)  # from the snapshot: the rotten event is not read
        assert actor.state.history.first == n + 1
        for _ in range(2):  # each ask tries again
            with pytest.raises(ProtocolError, match=rf"^the history before revision {n + 1} "
                                                    r"could not be read; retry$") as err:
                await actor.ask(Call("field.history", HistoryArgs(revision=3), "spectator", "w"))
            assert err.value.code == ErrorCode.UNAVAILABLE
        # the revisions it holds answer as ever
        view = await actor.ask(Call("field.history", HistoryArgs(revision=n + 1), "spectator",
                                    "w"))
        assert view.view == actor.view()


HELD = 16  # events a field holds in these tests (live.MAX_HELD_EVENTS)


def _views(records: list[dict[str, Any]]) -> list[Any]:
    """The field's view at each revision 0..len(records), of a full replay."""
    w, views = rules.initial(GAME), [None]
    for record in records:
        w = rules.evolve(w, rules.decode(record))
        views.append(rules.past_view(GAME, w.state))
    return views


async def test_a_field_holds_only_its_latest_events_and_answers_every_revision(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "MAX_HELD_EVENTS", HELD)
    monkeypatch.setattr(field_actor, "MAX_REPLAYS", 1000)  # every ask at once, none refused
    n = len(_stream()[1])
    revisions = [*range(1, n + 3, 5), n, n + 1, n + 2]
    async with await _stored(tmp_path) as store, open_directory(store, KINDS,
                                                                 config=CONFIG) as d:
        actor = await d.get(ID)  # the whole stream folded: its latest events held
        assert (actor.state.history.first, actor.state.history.events) == (
            0, [rules.decode(r) for r in _stream()[1][-HELD:]])
        await _join(actor, "late")  # past snapshot_every: a snapshot at n + 1
        await _join(actor, "later")
        views = _views([e.data for e in await store.read(ID)])
        assert await _history(actor, revisions) == {r: views[r] for r in revisions}
        assert len(actor.state.history.events) == HELD
    async with _ReadsKept.in_directory(tmp_path) as store, open_directory(
            store, KINDS, config=CONFIG) as d:
        actor = await d.get(ID)  # from the snapshot at n + 1, then one event
        history = actor.state.history
        assert (history.first, len(history.events)) == (n + 1, 1)
        store.reads.clear()
        # the asks below the snapshot wait for the prefix's fold; those whose events are
        # not held then read from the store the events after their checkpoint, no more
        assert await _history(actor, revisions) == {r: views[r] for r in revisions}
        assert (history.first, len(history.events)) == (0, HELD)
        assert store.reads[0] == list(range(1, n + 2))  # the prefix, once
        for read in store.reads[1:]:
            assert 0 < len(read) <= history.every
            assert read == list(range(history.base(read[-1]) + 1, read[-1] + 1))
            assert not history.held(read[-1]) and read[-1] in revisions
        assert len(store.reads) > len(revisions) / 2
        # an old revision's ask pays for its fold, as well as its handler
        answer = _Charged()
        ask = Call("field.history", HistoryArgs(revision=revisions[1]), "spectator", "s")
        assert await d.ask(ID, ask, answer=answer) == views[revisions[1]]
        assert len(answer.charges) == 2 and answer.charges[1] > 0


async def test_asks_of_old_revisions_past_max_replays_are_refused_overloaded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At most MAX_REPLAYS asks of revisions not held are read and folded at once per field:
    a spectator sending many cannot queue store reads and folds without end."""
    monkeypatch.setattr(live, "MAX_HELD_EVENTS", HELD)
    async with await _stored(tmp_path):
        pass  # the stream stored
    async with SqliteEventStore.in_directory(tmp_path) as store, open_directory(
            store, KINDS, config=CONFIG) as d:
        actor = await d.get(ID)
        views = _views([e.data for e in await store.read(ID)])
        old = [r for r in range(1, len(views)) if not actor.state.history.held(r)]
        old = old[:3 * MAX_REPLAYS]
        outcomes: dict[int, Any] = {}

        async def one(r: int) -> None:
            try:
                outcomes[r] = await actor.ask(Call("field.history", HistoryArgs(revision=r),
                                                   "spectator", "w"))
            except ProtocolError as error:
                assert error.message == f"{MAX_REPLAYS} older revisions are being read; " \
                                        "retry in a moment"
                outcomes[r] = error.code

        async with trio.open_nursery() as n:  # sent at once: the first are being folded
            for r in old:
                n.start_soon(one, r)
        answered = {r: v for r, v in outcomes.items() if v != ErrorCode.OVERLOADED}
        assert len(old) > len(answered) >= MAX_REPLAYS
        assert answered == {r: views[r] for r in answered}
        for r in old:  # once those are answered, each is served again
            assert await actor.ask(Call("field.history", HistoryArgs(revision=r),
                                        "spectator", "w")) == views[r]


async def test_an_old_revision_whose_stored_events_cannot_be_read_is_refused_unavailable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "MAX_HELD_EVENTS", HELD)
    n = len(_stream()[1])
    async with await _stored(tmp_path):
        pass  # the stream stored
    async with _ReadsKept.in_directory(tmp_path) as store, open_directory(
            store, KINDS, config=CONFIG) as d:
        actor = await d.get(ID)
        old = next(r for r in range(n // 2, n) if not actor.state.history.held(r))
        other = next(r for r in range(old - 1, 0, -1) if not actor.state.history.held(r))
        db = sqlite3.connect(tmp_path / "events.sqlite3")
        with db:  # the event it ends at rots
            db.execute("UPDATE events SET data = '{\"kind\": \"rot\"}' WHERE stream = ? "
                       "AND rev = ?", (ID, old))
        db.close()
        for _ in range(2):  # each ask tries again
            with pytest.raises(ProtocolError, match=rf"^the history at revision {old} could "
                                                    r"not be read; retry$") as err:
                await actor.ask(Call("field.history", HistoryArgs(revision=old), "spectator",
                                     "w"))
            assert err.value.code == ErrorCode.UNAVAILABLE
        # the revisions it holds answer as ever
        view = await actor.ask(Call("field.history", HistoryArgs(revision=n), "spectator",
                                    "w"))
        assert view.view == actor.view()
        store.failing = True  # a read that fails (logged) is refused alike
        with pytest.raises(ProtocolError, match=rf"^the history at revision {other} could "
                                                r"not be read; retry$") as err:
            await actor.ask(Call("field.history", HistoryArgs(revision=other), "spectator",
                                 "w"))
        assert err.value.code == ErrorCode.UNAVAILABLE
