"""Loading a world folds its stored events a slice at a time (actors/runtime/load.py): the
other tasks run between slices, none of them sees the state halfway, and the state is the
one fold of every event."""

from __future__ import annotations

import logging
from pathlib import Path

import attrs
import pytest
import trio
import trio.testing

from actors.counter import rules
from actors.puzzle import WORLD as PUZZLE
from actors.puzzle import rules as puzzle_rules
from actors.puzzle.diagnostics import MAX_DIAGNOSTICS, STOPPED
from actors.puzzle.snapshot import RestoreError
from actors.runtime import Call, WorldActor
from actors.runtime.directory import ActorKind, Directory, open_directory
from actors.runtime.load import MAX_LOGGED, SLICE_SECONDS
from actors.runtime.subscriber import SubscriberQueue
from actors.store import MemoryEventStore
from actors.world import World
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops import puzzle as puzzle_ops
from server.storage import SqliteEventStore

EVENTS = 200  # a created event, then adds of 1 .. EVENTS - 1
FOLD_SECONDS = 0.005  # of the mock clock, what each event's fold takes
WORLD = "counter:c"
FOLDED = rules.Counter(sum(range(EVENTS)), EVENTS - 1, EVENTS)


def slow_counter(clock: trio.testing.MockClock) -> World:
    """The counter world, whose every fold takes FOLD_SECONDS, and which tells its adds."""
    def evolve(state: rules.Counter, event: rules.Event) -> rules.Counter:
        clock.jump(FOLD_SECONDS)
        return rules.evolve(state, event)

    return attrs.evolve(rules.WORLD, evolve=evolve, summary=lambda s: {"adds": s.adds})


async def stored_counter() -> MemoryEventStore:
    """A store holding a counter of EVENTS events and no snapshot: a load folds them all."""
    store = MemoryEventStore()
    await store.append(WORLD, 0, [{"type": "created"}, *(
        {"type": "added", "amount": i, "note": ""} for i in range(1, EVENTS))])
    return store


async def test_the_other_tasks_run_between_slices_of_a_long_fold(
        mock_clock: trio.testing.MockClock) -> None:
    waits: list[float] = []  # each of another task's waits for its next turn

    async def other(task_status: trio.TaskStatus[None]) -> None:
        task_status.started()
        while True:
            asked = trio.current_time()
            try:
                await trio.lowlevel.checkpoint()
            finally:
                waits.append(trio.current_time() - asked)

    async with open_directory(await stored_counter(),
                              [ActorKind.of(slow_counter(mock_clock))]) as d:
        async with trio.open_nursery() as nursery:
            await nursery.start(other)
            actor = await d.get(WORLD)
            nursery.cancel_scope.cancel()
        assert isinstance(actor, WorldActor)
        assert (actor.state, actor.rev) == (FOLDED, EVENTS)
    assert sum(waits) == pytest.approx(EVENTS * FOLD_SECONDS)  # the whole fold, interleaved
    # Each step of the load folds one slice (the events until SLICE_SECONDS have passed);
    # trio runs every runnable task once per batch, in either order, so the load may take
    # two steps between two turns of another task.
    assert max(waits) <= 2 * (SLICE_SECONDS + FOLD_SECONDS)


async def halfway(d: Directory) -> WorldActor | None:
    """WORLD's actor at a turn when its load has folded some of its events, not all; None
    if no such turn came."""
    while (actor := d.alive(WORLD)) is None or not actor.loaded:
        if isinstance(actor, WorldActor) and 0 < actor.state.adds < EVENTS - 1:
            return actor
        await trio.lowlevel.checkpoint()
    return None


async def test_nothing_sees_a_world_halfway_through_its_load(
        mock_clock: trio.testing.MockClock) -> None:
    async with open_directory(await stored_counter(),
                              [ActorKind.of(slow_counter(mock_clock))]) as d:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(d.get, WORLD)
            actor = await halfway(d)
            assert actor is not None
            assert d.summary(WORLD) is None  # the owner's console: nothing yet
            queue = SubscriberQueue(10)
            # A read and a subscription sent now wait for the load's end.
            total = await d.ask(WORLD, Call("counter.get", None, "agent", "ann"))
            await d.subscribe(WORLD, queue, None, 7)
        assert (total.total, total.adds, total.revision) == (FOLDED.total, EVENTS - 1, EVENTS)
        assert await queue.get() == f'{{"id":7,"ok":true,"result":{{"topic":"{WORLD}",' \
                                    f'"rev":{EVENTS}}}}}'
        assert await queue.get() == (f'{{"topic":"{WORLD}","rev":{EVENTS},"kind":"snapshot",'
                                     f'"data":{{"total":{FOLDED.total},"adds":{EVENTS - 1},'
                                     f'"revision":{EVENTS}}}}}')
        assert d.summary(WORLD) == {"adds": EVENTS - 1}


async def test_a_world_held_halfway_through_its_load_folds_no_more_and_starts_nothing(
        mock_clock: trio.testing.MockClock) -> None:
    async with open_directory(await stored_counter(),
                              [ActorKind.of(slow_counter(mock_clock))]) as d:
        async with trio.open_nursery() as nursery:
            refused: list[ProtocolError] = []

            async def ask() -> None:
                with pytest.raises(ProtocolError) as err:
                    await d.ask(WORLD, Call("counter.get", None, "agent", "ann"))
                refused.append(err.value)

            nursery.start_soon(ask)
            actor = await halfway(d)
            assert actor is not None
            assert d.hold(WORLD)  # the owner's console stops it mid-load
            adds = actor.state.adds
        # Its message found it stopped, as one sent to any actor stopped before it got it.
        assert [(e.code, e.message) for e in refused] == [
            (ErrorCode.UNAVAILABLE, f"{WORLD} has stopped")]
        # At most the slice under way when the hold came was folded after it.
        assert actor.state.adds <= adds + SLICE_SECONDS / FOLD_SECONDS + 1 < EVENTS - 1
        assert actor.stopped and not actor.loaded and d.alive(WORLD) is None


async def test_a_snapshot_failing_at_every_entry_is_logged_in_one_bounded_line(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A stored room snapshot of another layout fails at each of its thousands of objects:
    the restore's error keeps at most MAX_DIAGNOSTICS problems, the log one line of at most
    MAX_LOGGED characters of it (no traceback), and the room loads by folding its events."""
    # Before: every problem was kept and logged with the traceback, 5,000 ids of 10,000
    # characters each (50 MB), at every load of the room.
    room, agent = "puzzle:r", ("agent", "agent:a")
    async with SqliteEventStore.in_directory(tmp_path) as store:
        async with open_directory(store, [ActorKind.of(PUZZLE)]) as directory:
            await directory.ask(room, Call("puzzle.create", puzzle_ops.CreateArgs(), *agent))
            await directory.ask(room, Call("puzzle.move", puzzle_ops.MoveArgs("right", 1),
                                           *agent))
            actor = await directory.get(room)
            folded, rev = actor.snapshot(), actor.rev
        junk = [{"id": f"{i}{'x' * 10_000}"} for i in range(5000)]
        await store.save_snapshot(room, rev, {**folded, "board": {"objects": junk}})
        with caplog.at_level(logging.ERROR, "petridish.actors"):
            async with open_directory(store, [ActorKind.of(PUZZLE)]) as directory:
                actor = await directory.get(room)
                assert (actor.rev, actor.snapshot()) == (rev, folded)
    [record] = [r for r in caplog.records if "could not restore" in r.getMessage()]
    assert record.exc_info is None
    assert len(record.getMessage()) < MAX_LOGGED + 200
    assert "RestoreError at snapshot.py:" in record.getMessage()
    with pytest.raises(RestoreError) as err:
        puzzle_rules.load({**folded, "board": {"objects": junk}})
    assert len(err.value.diagnostics) == MAX_DIAGNOSTICS + 1
    assert err.value.diagnostics[-1].message == STOPPED
    assert err.value.diagnostics[0].message == "unknown or repeated id '0" + "x" * 78
