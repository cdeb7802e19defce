"""One actor's topic: its subscribers, and a bounded history of its durable events for resume.

The actor publishes through it only what is durable. Published events enter the history
at once and wait in `pending` until `flush` pushes them as one `events` frame (so an
actor can coalesce pushes). Each subscriber is a bounded `SubscriberQueue`; a full one
is dropped from the topic with one `resync` push, so a slow consumer never slows the
actor or the other subscribers.

A push to a crowded topic is spread: the `spread` task (run in the actor's nursery)
offers it to FANOUT_CHUNK subscribers at a time and yields between chunks, so offering
it to hundreds of queues (a connection's outbox writes to its socket at once when it is
idle: server/session.py) does not stall everything else for one long step (answers to
the actor's callers go out between chunks). Pushes keep their order; a
subscriber that joins while a push is being spread skips it (its first push covers it).
`spread_seconds` tells the actor how long the last spread took, queueing included: on a
busy server the actor waits as long again before the next push (see Actor._push_if_due).

A `Relay` is a follower of the topic on another process (a cluster's mirror of the world,
server/cluster/mirrors.py): it counts as a subscriber while someone watches through it,
holding the world as firmly as they would (its `footprint`), and gets the snapshot pushes
(the events reach it through the store) and the end of the topic, in order; once
`closed` it is forgotten.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import trio

from actors.runtime.subscriber import SubscriberQueue
from actors.store import Event
from protocol.envelope import encode_push, encode_result
from protocol.errors import ErrorCode, ProtocolError

FANOUT_CHUNK = 64  # subscribers offered a push between two yields of the spread task
UNWATCHED = 0  # a relay's footprint while nobody watches through it


class Relay(Protocol):
    """A follower of the topic's snapshot pushes on another process."""

    closed: bool
    # How firmly its spectators hold the world live, as one subscriber's
    # (`SubscriberQueue.footprint`: None holds it, else the fewest worlds any of their
    # clients follows), or UNWATCHED: it is then no follower.
    footprint: int | None

    def snapshot(self, rev: int, frame: str) -> None:
        """A snapshot push of the state at `rev` (the frame every subscriber got)."""

    def stopped(self, rev: int, unloaded: bool) -> None:
        """The topic ended at `rev`: its actor stopped (`unloaded`: to make room, its
        followers letting it go)."""


class Topic:
    """Subscribers of actor `name` and the last `history_size` events, by revision."""

    def __init__(self, name: str, history_size: int, on_drop: Callable[[], None]) -> None:
        self.name = name
        self._history: deque[tuple[int, Event]] = deque(maxlen=history_size)
        # queue -> the number of pushes made before it joined (an ordered set with a mark)
        self._subscribers: dict[SubscriberQueue, int] = {}
        self._pushes = 0
        self._spread: deque[tuple[int, str, int, list[SubscriberQueue], float]] = deque()
        self._spreading = False  # a spread task runs
        self._work = trio.Event()
        self.spread_seconds = 0.0  # the last spread, from its push being queued to its end
        self._on_drop = on_drop
        self.pending: list[Event] = []  # published, not yet pushed
        self._pending_rev = 0
        self.dropped = 0
        self._relays: list[Relay] = []
        self.unloaded = False  # its actor was unloaded to make room (`close` tells relays)

    def __len__(self) -> int:
        relays = sum(map(_watching, self._relays)) if self._relays else 0
        return len(self._subscribers) + relays

    def relay(self, relay: Relay | None) -> None:
        """Give `relay` every snapshot pushed from now on, and the topic's end (None:
        nothing)."""
        if relay is not None and relay not in self._relays:
            self._relays.append(relay)

    def reset_history(self, events: Iterable[tuple[int, Event]]) -> None:
        """Forget the history and start it again from `events` (after a load)."""
        self._history.clear()
        self._history.extend(events)

    def backfill(self, events: list[tuple[int, Event]]) -> None:
        """Put `events`, the ones just before the history's first (in order), before it: a
        follower that started later reaches back as far as its actor's history would."""
        maxlen = self._history.maxlen
        if maxlen is not None and len(self._history) + len(events) > maxlen:
            raise ValueError(f"{self.name}: a backfill past the history's {maxlen} events")
        self._history.extendleft(reversed(events))

    def publish(self, rev: int, events: list[Event]) -> None:
        """Record durable `events` (the last at `rev`) for resume and for the next `flush`."""
        first = rev - len(events) + 1
        self._history.extend(zip(range(first, rev + 1), events, strict=True))
        self.pending.extend(events)
        self._pending_rev = rev

    def flush(self) -> None:
        """Push the pending events to every subscriber as one `events` frame."""
        if self.pending:
            events, self.pending = self.pending, []
            if self._subscribers:  # nobody listening: nothing to encode
                self._offer_all(encode_push(self.name, self._pending_rev, "events", events),
                                self._pending_rev)

    def publish_snapshot(self, rev: int, view: Any) -> None:
        """Push a fresh snapshot of the state at `rev` to every subscriber (events first)."""
        self.flush()
        frame = encode_push(self.name, rev, "snapshot", view)
        self._offer_all(frame, rev)
        for relay in self._relays:
            if not relay.closed:  # (a closed one is forgotten when counted)
                relay.snapshot(rev, frame)

    def subscribe(self, queue: SubscriberQueue, since: int | None, request_id: int, rev: int,
                  view: Callable[[], Any]) -> None:
        """Put the reply and the first push into `queue`, then follow the topic.

        The first push is the events after `since` when history still has them, a
        snapshot otherwise (or when `since` is None), nothing when `since` is `rev`.
        """
        if since is not None and since > rev:
            raise ProtocolError(ErrorCode.BAD_REQUEST,
                                f"since: {since} is ahead of {self.name} (revision {rev})",
                                {"path": "since", "rev": rev})
        self.flush()  # what is pending predates this subscriber's starting point
        self._subscribers.pop(queue, None)
        queue.force(encode_result(request_id, {"topic": self.name, "rev": rev}))
        missed = None if since is None else self.events_after(since, rev)
        if missed is None:
            first: str | None = encode_push(self.name, rev, "snapshot", view())
        elif missed:
            first = encode_push(self.name, rev, "events", missed)
        else:
            first = None
        if first is None or self._offer(queue, first, rev):
            self._subscribers[queue] = self._pushes

    def unsubscribe(self, queue: SubscriberQueue) -> None:
        """Forget `queue`."""
        self._subscribers.pop(queue, None)

    def prune(self) -> int:
        """Forget closed queues and relays; the number of subscribers left."""
        for queue in [q for q in self._subscribers if q.closed]:
            del self._subscribers[queue]
        if self._relays:
            self._relays = [r for r in self._relays if not r.closed]
        return len(self)

    def footprint(self, above: int | None) -> int | None:
        """The least footprint of the subscribers and watched relays
        (`SubscriberQueue.footprint`: what their clients follow), or None when there is
        none, one holds the world (its footprint is None), or one's is not above `above`
        (None: any)."""
        least = None
        sizes = itertools.chain((q.footprint for q in self._subscribers if not q.closed),
                                (r.footprint for r in self._relays if _watching(r)))
        for size in sizes:
            if size is None or (above is not None and size <= above):
                return None
            least = size if least is None else min(least, size)
        return least

    def close(self, rev: int) -> None:
        """The actor stopped: every subscriber gets a resync, every relay its end (and
        whether it was `unloaded`), and the topic is empty."""
        while self._spread:  # the spread task is gone: finish its pushes here
            push, frame, push_rev, queues, _ = self._spread.popleft()
            self._deliver_spread(push, queues, frame, push_rev)
        self.flush()
        for queue in self._subscribers:
            queue.force(encode_push(self.name, rev, "resync", {"reason": "actor_stopped"}))
        self._subscribers.clear()
        relays, self._relays = self._relays, []
        for relay in relays:
            if not relay.closed:
                relay.stopped(rev, self.unloaded)

    def events_after(self, since: int, rev: int) -> list[Event] | None:
        """The events after `since`, or None when history no longer reaches back to them."""
        if since == rev:
            return []
        if not self._history or self._history[0][0] > since + 1:
            return None
        return [e for r, e in self._history if r > since]

    def _offer(self, queue: SubscriberQueue, frame: str, rev: int) -> bool:
        """Offer one frame; a full queue gets a resync and loses the subscription."""
        if queue.offer(frame):
            return True
        self._subscribers.pop(queue, None)
        if not queue.closed:
            queue.force(encode_push(self.name, rev, "resync", {"reason": "slow_consumer"}))
            self.dropped += 1
            self._on_drop()
        return False

    def _offer_all(self, frame: str, rev: int) -> None:
        self._pushes += 1
        if self._spreading and (len(self._subscribers) > FANOUT_CHUNK or self._spread):
            self._spread.append((self._pushes, frame, rev, list(self._subscribers),
                                 trio.current_time()))
            self._work.set()
            return
        for queue in list(self._subscribers):
            self._deliver(queue, frame, rev)

    def _deliver(self, queue: SubscriberQueue, frame: str, rev: int) -> None:
        if queue.closed:
            del self._subscribers[queue]
        else:
            self._offer(queue, frame, rev)

    def _deliver_spread(self, push: int, queues: list[SubscriberQueue], frame: str,
                        rev: int) -> None:
        for queue in queues:
            joined = self._subscribers.get(queue)
            if joined is not None and joined < push:  # still here, and joined before it
                self._deliver(queue, frame, rev)

    async def spread(self) -> None:
        """Offer the queued crowded pushes, a chunk at a time, until cancelled."""
        self._spreading = True
        try:
            while True:
                while not self._spread:
                    self._work = trio.Event()
                    await self._work.wait()
                push, frame, rev, queues, queued_at = self._spread[0]
                for start in range(0, len(queues), FANOUT_CHUNK):
                    self._deliver_spread(push, queues[start:start + FANOUT_CHUNK], frame, rev)
                    await trio.lowlevel.checkpoint()
                self._spread.popleft()
                self.spread_seconds = trio.current_time() - queued_at
        finally:
            self._spreading = False


def _watching(relay: Relay) -> bool:
    """True while `relay` follows the topic for someone (open, and watched)."""
    return not relay.closed and relay.footprint != UNWATCHED
