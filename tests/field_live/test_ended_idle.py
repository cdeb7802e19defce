"""A growing field's growth timer stops when the field ends: the ended field idles and
unloads like any world nobody asks, and loads again, the same, on demand.

The field reads trio's clock as its own, a mock clock the test moves a second at a time
(tests/clocked.py); the store is a real SQLite file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
import trio.testing

from actors.field import rules
from actors.field.actor import WORLD
from actors.runtime import Call, RuntimeConfig
from actors.runtime.directory import ActorKind, open_directory
from protocol.ops import field as ops
from server.storage import SqliteEventStore
from tests import clocked
from tests.clocked import settled, trio_ms

FIELD = "field:ends"
IDLE = 60.0  # the runtime's idle timeout here, in seconds
EVERY = ops.MIN_GROW_S  # seconds between timed growths



async def run_for(clock: trio.testing.MockClock, actor: Any, seconds: float) -> None:
    """Let `seconds` of the field's clock pass, a growth interval at a time, each settled."""
    await clocked.run_for(clock, actor, seconds, EVERY)


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
        for _ in range(20):
            if actor.state.state.ended and not actor.state.generating:
                break
            await run_for(mock_clock, actor, EVERY)
        assert actor.state.state.ended
        state, rev = rules.dump(actor.state), actor.rev
        await run_for(mock_clock, actor, IDLE + EVERY)
        assert actor.stopped and directory.live() == []
        assert len(await store.read(FIELD)) == rev  # nothing happened meanwhile

        again = await directory.get(FIELD)  # loaded on demand, as it was
        await settled(again)
        assert again is not actor and (rules.dump(again.state), again.rev) == (state, rev)
        assert again.state.truth.to_dict() == actor.state.truth.to_dict()
