"""A long read is decoded a slice at a time: the other tasks run between slices."""

from __future__ import annotations

import json

import trio
import trio.lowlevel

from actors.store import StoredEvent
from server.storage.rows import SLICE, stored_events


async def test_a_long_read_lets_the_other_tasks_run_between_slices() -> None:
    rows = [(rev, json.dumps({"type": "added", "amount": rev})) for rev in range(1, 5 * SLICE + 2)]
    turns = 0

    async def other() -> None:
        nonlocal turns
        while True:
            await trio.lowlevel.checkpoint()
            turns += 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other)
        events = await stored_events(rows)
        during = turns
        nursery.cancel_scope.cancel()
    assert events == [StoredEvent(rev, {"type": "added", "amount": rev}) for rev, _ in rows]
    # Five turns were given, one after each slice but the last (the first starts `other`;
    # trio may order a turn's tasks either way): decoded in one step, `other` never ran.
    assert during >= 1

