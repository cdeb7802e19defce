"""Spectators of worlds hosted by other processes: one mirror per world per process, fed by
the store's notifications.

A subscription that reaches a process which does not host the world is served here. The
process keeps one `Mirror` per such world: a topic (the same `Topic` a live actor has: a
bounded history for resume, slow consumers dropped with a resync) whose events are read
from the store. Every process listens to the store's notifications once (`Mirrors.run`:
one connection, `stream:rev` lines per commit); for each batch of notifications it reads
each mirrored world's events after the mirror's last revision, ONE read per world per
batch however many spectators watch it, and publishes them in order. Events are the
stored records, exactly what the hosting actor pushes to its own subscribers, so a
spectator sees the same frames on any process; a reconnect to another process resumes
with `since` like any subscribe.

A subscribe with `since` inside the mirror's reach gets the events after it; otherwise
its reply and first push come from the hosting process (a `ViewMsg` forwarded there:
the view at its durable revision R), followed at once by the events the mirror has past
R. The mirror keeps following whichever process hosts the world, across re-homes; after
the notification connection is lost it listens again and reads after its last revision,
so nothing is skipped. A mirror nobody watched for IDLE seconds is dropped.

The same feed tells a follower of a stream (`follow`: the owner's holds, holds.py) when
that stream moved.

What a mirror cannot carry: snapshot pushes a world makes of state that is not in its
events (`publish_view`, the lobby's live figures); its spectators see the events only.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from actors.runtime.mailbox import ViewMsg
from actors.runtime.subscriber import SubscriberQueue
from actors.runtime.topic import Topic
from protocol.envelope import encode_push
from protocol.errors import ErrorCode, ProtocolError
from server.storage.postgres import PostgresEventStore

if TYPE_CHECKING:
    from actors.runtime import Directory, RuntimeObserver

log = logging.getLogger("petridish.cluster")
IDLE = 30.0  # seconds a mirror with no subscriber is kept (a reconnect comes back soon)
SWEEP = 5.0  # seconds between looks for idle mirrors
RELISTEN = 1.0  # seconds before listening again after the notification connection failed


class Mirror:
    """World `actor_id` as followed from this process."""

    def __init__(self, actor_id: str, history_size: int, on_drop: Callable[[], None]) -> None:
        self.actor_id = actor_id
        self.topic = Topic(actor_id, history_size, on_drop)
        self.history_size = history_size
        self.rev: int | None = None  # the last revision published; None until started
        self.first = 0  # the revision history starts after
        self.lock = trio.Lock()
        self.idle_since = trio.current_time()

    def reaches(self, since: int) -> bool:
        """True when the topic's history holds every event after `since`."""
        assert self.rev is not None
        return self.first <= since <= self.rev

    def publish(self, events: list[Any], last: int) -> None:
        """Push events that end at revision `last` (contiguous after `rev`)."""
        self.topic.publish(last, events)
        self.topic.flush()
        self.rev = last
        self.first = max(self.first, last - self.history_size)


class Mirrors:
    """This process's mirrors and the notification feed that drives them."""

    def __init__(self, store: PostgresEventStore, history_size: int,
                 observer: RuntimeObserver) -> None:
        self.store = store
        self.history_size = history_size
        self.observer = observer
        self.directory: Directory | None = None
        self._mirrors: dict[str, Mirror] = {}
        self._followers: dict[str, Callable[[], Awaitable[None]]] = {}
        # for metrics: notifications received (and of them from other processes), batches
        # handed out, store reads made for mirrors
        self.notified = self.foreign = self.batches = self.reads = 0
        self._counted = (0, 0, 0)  # of the current listening connection

    def __len__(self) -> int:
        return len(self._mirrors)

    def watchers(self) -> int:
        """Subscribers of every mirror here."""
        return sum(len(m.topic) for m in self._mirrors.values())

    def follow(self, stream: str, catch_up: Callable[[], Awaitable[None]]) -> None:
        """Await `catch_up()` whenever `stream` moves, and each time the feed listens again
        (what moved meanwhile was not notified)."""
        self._followers[stream] = catch_up

    # ---- subscribers ------------------------------------------------------------------

    async def subscribe(self, actor_id: str, queue: SubscriberQueue, since: int | None,
                        request_id: int) -> None:
        """Put the reply and first push into `queue`, then follow the world from here."""
        mirror = self._mirrors.get(actor_id)
        if mirror is None:
            kind = actor_id.partition(":")[0]
            mirror = self._mirrors[actor_id] = Mirror(
                actor_id, self.history_size, lambda: self.observer.dropped(kind))
        async with mirror.lock:
            viewed = None
            if mirror.rev is None:
                viewed = await self._start(mirror, since)
            else:
                await self._catch_up(mirror)
            assert mirror.rev is not None
            if since is not None and since > mirror.rev:
                raise ProtocolError(ErrorCode.BAD_REQUEST, f"since: {since} is ahead of "
                                    f"{actor_id} (revision {mirror.rev})",
                                    {"path": "since", "rev": mirror.rev})
            if since is not None and mirror.reaches(since):
                mirror.topic.subscribe(queue, since, request_id, mirror.rev, _no_view)
                return
            await self._from_view(mirror, queue, request_id, viewed)

    def unsubscribe(self, actor_id: str, queue: SubscriberQueue) -> None:
        """Forget `queue` (no error if it was not here)."""
        mirror = self._mirrors.get(actor_id)
        if mirror is not None:
            mirror.topic.unsubscribe(queue)
            if not mirror.topic.prune():
                mirror.idle_since = trio.current_time()

    async def _start(self, mirror: Mirror, since: int | None) -> tuple[int, Any] | None:
        """Fix where a new mirror starts: at `since` when the store has little after it,
        else at the hosting process's view (returned)."""
        if since is not None:
            rev = await self.store.revision(mirror.actor_id)
            if 0 <= rev - since <= self.history_size:
                mirror.rev = mirror.first = since
                await self._catch_up(mirror)
                return None
        viewed = await self._view(mirror.actor_id)
        mirror.rev = mirror.first = viewed[0]
        await self._catch_up(mirror)
        return viewed

    async def _from_view(self, mirror: Mirror, queue: SubscriberQueue, request_id: int,
                         viewed: tuple[int, Any] | None) -> None:
        """Reply and snapshot from the hosting process, then the events past it."""
        rev, view = viewed or await self._view(mirror.actor_id)
        assert mirror.rev is not None
        if rev > mirror.rev:
            await self._catch_up(mirror)
        if not mirror.first <= rev <= mirror.rev:  # a stale host answered: try again later
            raise ProtocolError(ErrorCode.UNAVAILABLE, f"{mirror.actor_id} is moving to "
                                "another process; subscribe again", {"actor": mirror.actor_id})
        mirror.topic.subscribe(queue, None, request_id, rev, lambda: view)
        if rev < mirror.rev:
            missed = mirror.topic.events_after(rev, mirror.rev)
            if missed and not queue.offer(encode_push(mirror.actor_id, mirror.rev, "events",
                                                      missed)):
                mirror.topic.unsubscribe(queue)
                queue.force(encode_push(mirror.actor_id, mirror.rev, "resync",
                                        {"reason": "slow_consumer"}))

    async def _view(self, actor_id: str) -> tuple[int, Any]:
        """(durable revision, view) from the process hosting the world."""
        assert self.directory is not None
        rev, view = await self.directory.ask(actor_id, ViewMsg())
        return rev, view

    async def _catch_up(self, mirror: Mirror) -> None:
        """Read and publish every stored event after the mirror's revision."""
        assert mirror.rev is not None
        self.reads += 1
        events = await self.store.read(mirror.actor_id, after=mirror.rev)
        if events:
            if events[0].rev != mirror.rev + 1:  # never: a store read is contiguous
                raise RuntimeError(f"{mirror.actor_id}: read after {mirror.rev} began at "
                                   f"{events[0].rev}")
            mirror.publish([e.data for e in events], events[-1].rev)

    # ---- the feed -----------------------------------------------------------------------

    async def run(self) -> None:
        """Listen to the store's notifications and feed the mirrors until cancelled."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._sweep)
            while True:
                try:
                    async with self.store.listen(own=True) as notes:
                        # Listening now: whatever was missed meanwhile is read first.
                        await self._feed({m: -1 for m in (*self._mirrors,
                                                          *self._followers)})
                        async for moved in notes:
                            self._count(notes.statistics())
                            await self._feed(moved)
                except Exception as exc:  # noqa: BLE001 - listen again, read what was missed
                    log.warning("the store's notifications stopped: %r; listening again",
                                exc)
                self._counted = (0, 0, 0)
                await trio.sleep(RELISTEN)

    def _count(self, stats: Any) -> None:
        received, foreign, batches = stats.received, stats.foreign, stats.batches
        last = self._counted
        self.notified += received - last[0]
        self.foreign += foreign - last[1]
        self.batches += batches - last[2]
        self._counted = (received, foreign, batches)

    async def _feed(self, moved: dict[str, int]) -> None:
        """Each follower of a stream that moved, then one read per mirrored world that
        moved past its mirror, all at once."""
        for stream, catch_up in self._followers.items():
            if stream in moved:
                try:
                    await catch_up()
                except Exception:  # the next notification (or listen) tries again
                    log.exception("following %s failed", stream)
        due = [m for name, rev in moved.items()
               if (m := self._mirrors.get(name)) is not None and m.rev is not None
               and (rev < 0 or rev > m.rev)]
        if not due:
            return
        async with trio.open_nursery() as nursery:
            for mirror in due:
                nursery.start_soon(self._feed_one, mirror)

    async def _feed_one(self, mirror: Mirror) -> None:
        async with mirror.lock:
            if mirror.rev is None or self._mirrors.get(mirror.actor_id) is not mirror:
                return
            try:
                await self._catch_up(mirror)
            except Exception:  # the next notification (or subscribe) reads again
                log.exception("reading %s for its spectators failed", mirror.actor_id)

    async def _sweep(self) -> None:
        """Drop mirrors nobody watched for IDLE seconds."""
        while True:
            await trio.sleep(SWEEP)
            now = trio.current_time()
            for actor_id, mirror in list(self._mirrors.items()):
                if mirror.topic.prune():
                    mirror.idle_since = now
                elif now - mirror.idle_since >= IDLE and not mirror.lock.locked():
                    del self._mirrors[actor_id]


def _no_view() -> Any:
    raise AssertionError("a mirror answers from its history here")
