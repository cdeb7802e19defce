"""Stored rows as events: a long read is decoded a slice at a time.

A read of a long stream (a field of 50,000 events is 12.7 MB of JSON) would hold the
server's one trio thread for its whole decode; between slices of `SLICE` rows the other
tasks take their turn.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import trio

from actors.store import StoredEvent

SLICE = 1000  # rows decoded between two turns of the other tasks


async def stored_events(rows: Sequence[tuple[int, str]]) -> list[StoredEvent]:
    """The events of `(rev, JSON text)` rows, in order."""
    out = [StoredEvent(rev, json.loads(data)) for rev, data in rows[:SLICE]]
    for start in range(SLICE, len(rows), SLICE):
        await trio.lowlevel.checkpoint()
        out.extend(StoredEvent(rev, json.loads(data)) for rev, data in rows[start:start + SLICE])
    return out
