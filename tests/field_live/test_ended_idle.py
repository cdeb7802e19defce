"""A growing field's growth timer stops when the field ends: the ended field idles and
unloads like any world nobody asks, and loads again, the same, on demand; a growth
delivered twice (a restart while one was being generated) does not end it.

The field reads trio's clock as its own, a mock clock the test moves a second at a time
(tests/clocked.py); the store is a real SQLite file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio
import trio.testing

from actors.field import rules
from actors.field.actor import WORLD, _Generated
from actors.runtime import Call, RuntimeConfig
from actors.runtime.directory import ActorKind, open_directory
from protocol.ops import field as ops
from server.storage import SqliteEventStore
from tests.clocked import run_for, settled, trio_ms

FIELD = "field:ends"
IDLE = 60.0  # the runtime's idle timeout here, in seconds
EVERY = ops.MIN_GROW_S  # seconds between timed growths


async def _until(clock: trio.testing.MockClock, actor: Any, done: Callable[[], bool]) -> None:
    """Let the field's clock pass a growth interval at a time until `done()` (at most 20)."""
    for _ in range(20):
        if done() and not actor.state.generating:
            return
        await run_for(clock, actor, EVERY, EVERY)
    raise AssertionError("the field did not get there in 20 growth intervals")


async def test_an_ended_field_unloads_when_idle(
        tmp_path: Path, mock_clock: trio.testing.MockClock) -> None:
    # Before: the growth timer ticked every second for good after the field ended, each
    # tick a message with nothing to do, so the field was never idle.
    async with SqliteEventStore.in_directory(tmp_path) as store, open_directory(
            store, [ActorKind.of(WORLD)], clock=trio_ms,
            config=RuntimeConfig(idle_timeout=IDLE)) as directory:
        # One chunk filling the canvas: the first growth finds no room and ends the field.
        start = ops.StartArgs(seed=5, canvas=ops.MIN_CANVAS, chunk=ops.MIN_CANVAS, chunks=1,
                              grow=ops.GrowPolicy(every_s=EVERY))
        await directory.ask(FIELD, Call("field.start", start, "owner", "owner:me"))
        actor = await directory.get(FIELD)
        await _until(mock_clock, actor, lambda: actor.state.state.ended)
        state, rev = rules.dump(actor.state), actor.rev
        await run_for(mock_clock, actor, IDLE + EVERY, EVERY)
        assert actor.stopped and directory.live() == []
        assert len(await store.read(FIELD)) == rev  # nothing happened meanwhile

        again = await directory.get(FIELD)  # loaded on demand, as it was
        await settled(again)
        assert again is not actor and (rules.dump(again.state), again.rev) == (state, rev)
        assert again.state.truth.to_dict() == actor.state.truth.to_dict()


async def test_a_growth_delivered_twice_does_not_end_the_field(
        tmp_path: Path, mock_clock: trio.testing.MockClock) -> None:
    # A restart while a growth was generated lets a tick generate it again from the same
    # field: the second result adds no tile to the first's. Before, it was folded as a
    # growth with no tiles, the field's end.
    async with SqliteEventStore.in_directory(tmp_path) as store, open_directory(
            store, [ActorKind.of(WORLD)], clock=trio_ms) as directory:
        start = ops.StartArgs(seed=5, canvas=4 * ops.MIN_CANVAS, chunk=ops.MIN_CANVAS,
                              chunks=1, grow=ops.GrowPolicy(every_s=EVERY))
        await directory.ask(FIELD, Call("field.start", start, "owner", "owner:me"))
        actor = await directory.get(FIELD)
        await _until(mock_clock, actor, lambda: len(actor.state.state.grown) >= 1)
        assert not actor.state.state.ended
        rev = actor.rev
        actor.tell(_Generated(actor.state.truth, None))  # the same growth, again
        await settled(actor)
        assert not actor.state.state.ended and actor.rev == rev
        assert len(await store.read(FIELD)) == rev
