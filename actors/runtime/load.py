"""Loading an actor's state from the store: its snapshot restored, the events after it folded.

A stream without a snapshot folds every event it holds (a field stored before fields had
one: 50,000 events fold in ~10 s), which would hold the server's one trio thread for the
whole fold; it yields to the other tasks after every `SLICE_SECONDS` of folding instead.
Nothing else sees the state halfway: the actor serves its mailbox (asks, subscriptions)
only once loaded, and `Directory.summary` says nothing of an actor not yet `loaded`. An
actor stopped meanwhile (the owner's hold, a lost lease) ends its load at the next slice.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

import attrs
import trio

from actors.runtime.context import ActorContext
from actors.runtime.mailbox import ActorStopped
from actors.store import Event, Receipt, StoredEvent
from protocol.text import stored_texts

log = logging.getLogger("petridish.actors")

SLICE_SECONDS = 0.02  # of folding between two turns of the other tasks
MAX_LOGGED = 1000  # characters of a failed restore's message in the log


class Loadable(Protocol):
    """What `load` needs of an actor (actors/runtime/base.py): its stream and its hooks."""

    actor_id: str
    context: ActorContext

    @property
    def stopped(self) -> bool:
        """True once stopped for good: the load ends (`ActorStopped`)."""

    def reset(self) -> None:
        """Set the state of an empty stream."""

    def restore(self, data: Any) -> None:
        """Set the state from a snapshot (raise if unreadable)."""

    def apply(self, event: Event) -> None:
        """Fold one event into the state."""


@attrs.frozen
class Loaded:
    """What a load read besides the state."""

    rev: int  # of the state: the stream's last event
    snapshot_rev: int  # of the snapshot it started from (0: none)
    history: list[StoredEvent]  # the last events, for resume (some before the snapshot)
    receipts: list[Receipt]  # of the writes within the receipt window


async def load(actor: Loadable) -> Loaded:
    """Set `actor`'s state from its stream. A snapshot it cannot restore (another layout)
    is skipped: every event is folded then."""
    store, config = actor.context.store, actor.context.config
    actor.reset()
    rev = 0
    snap = await store.load_snapshot(actor.actor_id)
    if snap is not None:
        try:
            with stored_texts():
                actor.restore(snap.data)
            rev = snap.rev
        except Exception as error:  # noqa: BLE001 - a snapshot only shortens loading
            log.error("%s could not restore its snapshot, so every event is folded: %s",
                      actor.actor_id, failure(error))
            actor.reset()
    # The events before a snapshot are read too, as resume history (not folded).
    history = await store.read(actor.actor_id,
                               after=max(0, rev - config.history_size) if rev else 0)
    with stored_texts():  # (a text's bounds of its day)
        if not await fold(actor.apply, (stored.data for stored in history if stored.rev > rev),
                          lambda: actor.stopped):
            raise ActorStopped(actor.actor_id, "was stopped while loading")
    last = max(rev, history[-1].rev if history else 0)
    receipts = await store.receipts(actor.actor_id, after=max(0, last - config.receipt_window))
    return Loaded(last, rev, history, receipts)


def failure(error: BaseException) -> str:
    """An exception in one bounded line: its type, where it was raised and at most
    MAX_LOGGED characters of its text (a snapshot of another layout may fail at each of
    thousands of entries; the line is logged at every load of the world)."""
    tb = traceback.extract_tb(error.__traceback__)
    where = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
    text = str(error)
    if len(text) > MAX_LOGGED:
        text = f"{text[:MAX_LOGGED]}... ({len(text)} characters)"
    return f"{type(error).__name__}{where}: {text}"


async def fold(apply: Callable[[Event], None], events: Iterable[Event],
               stopped: Callable[[], bool]) -> bool:
    """`apply` every event in order, letting the other tasks run after every
    `SLICE_SECONDS` of it (trio's clock: a test's mock clock drives it); False when
    `stopped()` turned true meanwhile (the rest is not folded)."""
    clock = trio.current_time
    deadline = clock() + SLICE_SECONDS
    for event in events:
        apply(event)
        if clock() >= deadline:
            await trio.lowlevel.checkpoint()
            if stopped():
                return False
            deadline = clock() + SLICE_SECONDS
    return True
