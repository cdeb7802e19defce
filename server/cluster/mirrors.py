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

A subscribe with `since` within the history a host keeps (its last `history_size` events)
gets the events after it, as from the host: from the mirror's history, which first reaches
back to `since` with one read of the store when the mirror started later (at a view; at
most one such read per revision it reaches back, however many subscribe). Otherwise its
reply and first push come from the hosting process (a `ViewMsg` forwarded there:
the view at its durable revision R), followed at once by the events the mirror has past
R. The mirror keeps following whichever process hosts the world, across re-homes; after
the notification connection is lost it listens again and reads after its last revision,
so nothing is skipped. A mirror nobody watched for IDLE seconds is dropped.

Snapshot pushes (state that is not in events: `publish_view`, e.g. an ecosystem run's
density fields, a field's generation progress, a pack's solve progress, the lobby's live
figures) come from the host itself: the mirror's first view registers a `_Relay` on the
hosting actor's topic (`ViewMsg.relay`; through the peer link when the world lives
elsewhere, wire.py), which then sends it every snapshot push of the world, on the link
that carried the view's reply. The mirror publishes each one after the events up to its
revision and before any later one, as the host does (one read of the store serves
both); one that arrives after later events went out is dropped (a client keeps no older
snapshot). When the relay ends (the actor stopped: moved, held, shut down; the link
broke; the host's outbox to this process grew past RELAY_BACKLOG) the mirror registers
again wherever the world is, with backoff while it has subscribers, or once one joins
(as spectators on the host resubscribe: what was pushed meanwhile of the figures comes
with the next push). An end that comes while a view registering the relay is answered
may be that relay's: it is registered again.

The host holds the world live as firmly as the mirror's spectators would hold it there
(`Mirror.footprint`: the relay carries it, and `max_live_worlds` reads it as a
subscriber's): the view that registers the relay says it, and the host is told again as
spectators come and go (at once when one holds it more firmly: `_joined`; by the sweep
otherwise). A world only anonymous spectators follow may so be unloaded to make room;
the relay's end then says `unloaded`, and the mirror's spectators get `resync`
`actor_stopped`, as the host's own do.

The same feed tells a follower of a stream (`follow`: the owner's holds, holds.py) when
that stream moved. A read for the feed that finds the store down logs one line, at most
every DOWN_LOG_EVERY seconds; the next notification (or listen) reads again.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from actors.runtime.mailbox import Pending, ViewMsg
from actors.runtime.subscriber import SubscriberQueue
from actors.runtime.topic import UNWATCHED, Topic
from actors.store import StoreUnavailable
from protocol.envelope import encode_push
from protocol.errors import ErrorCode, ProtocolError
from server.storage.postgres import PostgresEventStore
from server.trace import Throttle

if TYPE_CHECKING:
    from actors.runtime import Directory, RuntimeObserver

log = logging.getLogger("petridish.cluster")
IDLE = 30.0  # seconds a mirror with no subscriber is kept (a reconnect comes back soon)
SWEEP = 5.0  # seconds between looks for idle mirrors
RELISTEN = 1.0  # seconds before listening again after the notification connection failed
RELISTEN_LOG_EVERY = 10.0  # seconds between two warnings that listening failed
DOWN_LOG_EVERY = 10.0  # seconds between two warnings of reads the store refused (down)
RELAY_RETRY = 0.2  # seconds before following a world's snapshot pushes again, doubling
RELAY_RETRY_MAX = 5.0  # ... up to this


class Mirror:
    """World `actor_id` as followed from this process."""

    def __init__(self, actor_id: str, history_size: int, on_drop: Callable[[], None],
                 mirrors: Mirrors) -> None:
        self.actor_id = actor_id
        self.topic = Topic(actor_id, history_size, on_drop)
        self.history_size = history_size
        self.rev: int | None = None  # the last revision published; None until started
        self.first = 0  # the revision history starts after
        self.lock = trio.Lock()
        self.idle_since = trio.current_time()
        self.relay = _Relay(mirrors, self)
        self.relaying = False  # the host is believed to relay its snapshot pushes here
        self.registering = False  # a task is registering the relay again
        self.ended = 0  # relays that ended (`Mirrors.on_relay_lost`)
        # Relayed snapshot pushes not published yet: (arrival number, revision, view).
        self.views: deque[tuple[int, int, Any]] = deque()
        self.arrived = 0  # relayed snapshot pushes received
        self.draining = False  # a task will publish `views`
        self.drain_read = False  # ... and read the store first
        self.told: int | None = None  # the footprint its host was last told (`footprint`)

    def footprint(self, joining: SubscriberQueue | None = None) -> int | None:
        """How firmly its spectators (and `joining`) hold the world live on its host, as
        they would hold it there (`SubscriberQueue.footprint`): None when one holds it,
        else the fewest worlds any of their clients follows; UNWATCHED when none
        watches."""
        least = self.topic.footprint(None) if self.topic.prune() else UNWATCHED
        if joining is None or least is None:
            return least
        own = joining.footprint
        return own if own is None or least == UNWATCHED else min(least, own)

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


class _Relay:
    """How a mirror follows its world's snapshot pushes: on the hosting actor's topic when
    the world lives here (`topic.Relay`), else as the target of the pushes a peer link
    carries for the world (server/cluster/peers.py, `Link.relays`)."""

    def __init__(self, mirrors: Mirrors, mirror: Mirror) -> None:
        self._mirrors, self._mirror = mirrors, mirror
        self.closed = False  # the mirror was dropped: the host forgets it
        self.links: set[Any] = set()  # the peer links it was registered through

    @property
    def footprint(self) -> int | None:
        """How firmly the mirror's spectators hold the world here (as last told)."""
        return self._mirror.told

    def snapshot(self, rev: int, frame: str) -> None:
        """A snapshot push of the actor here (its frame as every subscriber got it)."""
        self._mirrors.on_relayed(self._mirror, rev, json.loads(frame)["data"])

    def stopped(self, _rev: int, unloaded: bool) -> None:
        """The actor here stopped (`unloaded` to make room)."""
        self._mirrors.on_relay_lost(self._mirror, unloaded=unloaded)

    def pushed(self, frame: dict[str, Any]) -> None:
        """A push the hosting process relayed: a snapshot, or a resync (the relay ended)."""
        rev = frame.get("rev")
        if frame.get("kind") == "snapshot" and isinstance(rev, int):
            self._mirrors.on_relayed(self._mirror, rev, frame.get("data"))
        else:
            data = frame.get("data")
            self._mirrors.on_relay_lost(self._mirror, unloaded=isinstance(data, dict) and
                                        data.get("reason") == "unloaded")

    def lost(self) -> None:
        """The peer link it was registered through broke."""
        self._mirrors.on_relay_lost(self._mirror)


class _Marked(Pending):
    """A view's answer slot that notes how many relayed pushes had arrived when it was
    answered: those came before the view, later ones after it (one link carries both);
    should the view load the world, it does so for callers of `footprint`."""

    def __init__(self, mirror: Mirror, footprint: int | None) -> None:
        super().__init__()
        self._mirror = mirror
        self.mark = 0
        self.footprint = footprint

    def succeed(self, value: Any) -> None:
        if not self.done.is_set():
            self.mark = self._mirror.arrived
        super().succeed(value)


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
        # snapshot pushes relayed by hosts, and of them those dropped for coming too late
        self.relayed = self.late = 0
        self._counted = (0, 0, 0)  # of the current listening connection
        self._down_log = Throttle(DOWN_LOG_EVERY)
        self._nursery: trio.Nursery | None = None  # the feed's, while `run` runs

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
                actor_id, self.history_size, lambda: self.observer.dropped(kind), self)
        async with mirror.lock:
            viewed = None
            if mirror.rev is None:
                viewed = await self._start(mirror, since, queue)
            else:
                await self._advance(mirror)
            assert mirror.rev is not None
            if since is not None and since > mirror.rev:
                raise ProtocolError(ErrorCode.BAD_REQUEST, f"since: {since} is ahead of "
                                    f"{actor_id} (revision {mirror.rev})",
                                    {"path": "since", "rev": mirror.rev})
            if since is not None and since < mirror.first \
                    and mirror.rev - since <= self.history_size:
                await self._backfill(mirror, since)
            if since is not None and mirror.reaches(since):
                mirror.topic.subscribe(queue, since, request_id, mirror.rev, _no_view)
                self._joined(mirror, queue)
                return
            await self._from_view(mirror, queue, request_id, viewed)
            self._joined(mirror, queue)

    def unsubscribe(self, actor_id: str, queue: SubscriberQueue) -> None:
        """Forget `queue` (no error if it was not here)."""
        mirror = self._mirrors.get(actor_id)
        if mirror is not None:
            mirror.topic.unsubscribe(queue)
            if not mirror.topic.prune():
                mirror.idle_since = trio.current_time()

    def drop(self, actor_id: str) -> None:
        """Forget the mirror of `actor_id` (its subscribers, if any, are not told); its
        host stops relaying to it."""
        mirror = self._mirrors.pop(actor_id, None)
        if mirror is None:
            return
        relay = mirror.relay
        relay.closed = True  # a topic on this process forgets it
        for link in relay.links:
            link.unfollow(actor_id, relay)
        relay.links.clear()

    async def _start(self, mirror: Mirror, since: int | None,
                     queue: SubscriberQueue) -> tuple[int, Any, int] | None:
        """Fix where a new mirror starts, for `queue`: at `since` when the store has little
        after it, else at the hosting process's view (returned, with the relay
        registered)."""
        if since is not None:
            rev = await self.store.revision(mirror.actor_id)
            if 0 <= rev - since <= self.history_size:
                mirror.rev = mirror.first = since
                await self._advance(mirror)
                return None
        viewed = await self._view(mirror, relay=True, joining=queue)
        mirror.rev = mirror.first = viewed[0]
        await self._advance(mirror, before=viewed[2], upto=viewed[0])
        return viewed

    async def _backfill(self, mirror: Mirror, since: int) -> None:
        """Reach back to `since` (within the history a host keeps) when the mirror started
        after it: the events between are read from the store, once (a later subscribe
        from as far back reads nothing)."""
        self.reads += 1
        stored = await self.store.read(mirror.actor_id, after=since, upto=mirror.first)
        if len(stored) != mirror.first - since:  # never: a stream's revisions are contiguous
            raise RuntimeError(f"{mirror.actor_id}: read {since}..{mirror.first} gave "
                               f"{len(stored)} events")
        mirror.topic.backfill([(e.rev, e.data) for e in stored])
        mirror.first = since

    async def _from_view(self, mirror: Mirror, queue: SubscriberQueue, request_id: int,
                         viewed: tuple[int, Any, int] | None) -> None:
        """Reply and snapshot from the hosting process, then the events past it."""
        rev, view, mark = viewed or await self._view(mirror, relay=not mirror.relaying,
                                                     joining=queue)
        assert mirror.rev is not None
        # What the host pushed before this view goes to the subscribers before this one.
        await self._advance(mirror, before=mark, upto=rev, read=rev > mirror.rev)
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

    async def _view(self, mirror: Mirror, *, relay: bool,
                    joining: SubscriberQueue | None = None) -> tuple[int, Any, int]:
        """(durable revision, view, relayed pushes received before it) from the process
        hosting the world, for the mirror's spectators and `joining`; with `relay`, the
        host relays its snapshot pushes from then on (and learns how firmly they hold the
        world: `Mirror.footprint`)."""
        assert self.directory is not None
        if relay:
            footprint = mirror.told = mirror.footprint(joining)
        else:  # (it loads the world, if it must, for the one joining: as a local subscribe)
            footprint = None if joining is None else joining.footprint
        pending = _Marked(mirror, footprint)
        ended = mirror.ended
        rev, view = await self.directory.ask(
            mirror.actor_id, ViewMsg(mirror.relay if relay else None), answer=pending)
        # A relay that ended meanwhile may be this one (its end can come right behind the
        # answer, before this task runs again): it is registered again (the register
        # loop asks again; `_joined` starts one).
        if relay and mirror.ended == ended:
            mirror.relaying = True
            if mirror.told != footprint:  # changed while asked: the host has `footprint`
                told, mirror.told = mirror.told, footprint
                self._tell(mirror, told)
        return rev, view, pending.mark

    async def _advance(self, mirror: Mirror, *, before: int | None = None,
                       upto: int | None = None, read: bool = True) -> None:
        """Publish what the mirror is behind on, in the host's order: the stored events
        after its revision (up to `upto`; `read` False: only those the relayed snapshots
        need) and each relayed snapshot queued (the first `before` to arrive; all when
        None) after the events up to its revision. A snapshot older than the events
        already pushed is dropped: a client keeps no snapshot older than what it has."""
        assert mirror.rev is not None
        count = sum(1 for v in mirror.views if before is None or v[0] <= before)
        views = [mirror.views[i] for i in range(count)]
        events: list[tuple[int, Any]] = []
        if read or any(v[1] > mirror.rev for v in views):
            self.reads += 1
            stored = await self.store.read(mirror.actor_id, after=mirror.rev)
            if stored and stored[0].rev != mirror.rev + 1:  # never: a read is contiguous
                raise RuntimeError(f"{mirror.actor_id}: read after {mirror.rev} began at "
                                   f"{stored[0].rev}")
            events = [(e.rev, e.data) for e in stored]
        for _ in range(count):
            mirror.views.popleft()
        held = [e for e in events if upto is not None and e[0] > upto]
        events = events[:len(events) - len(held)]
        for at, (_, rev, view) in enumerate(views):
            ready = [e for e in events if e[0] <= rev]
            if ready:
                mirror.publish([data for _, data in ready], ready[-1][0])
                events = events[len(ready):]
            if rev == mirror.rev:
                mirror.topic.publish_snapshot(rev, view)
            elif rev < mirror.rev:
                self.late += 1
            else:  # its events are not in the store yet (or held back): later
                mirror.views.extendleft(reversed(views[at:]))
                break
        if events:
            mirror.publish([data for _, data in events], events[-1][0])
        if held:  # and the snapshots after them: once this turn ends
            self._drain_soon(mirror, read=True)

    # ---- relayed snapshot pushes --------------------------------------------------------

    def on_relayed(self, mirror: Mirror, rev: int, view: Any) -> None:
        """A snapshot push of the world's host: published in order by a task of ours."""
        if mirror.relay.closed:
            return
        self.relayed += 1
        mirror.arrived += 1
        mirror.views.append((mirror.arrived, rev, view))
        self._drain_soon(mirror)

    def on_relay_lost(self, mirror: Mirror, *, unloaded: bool = False) -> None:
        """The host stopped relaying (its actor stopped, the link broke, this process read
        too slowly): register again, while anyone watches. When the host `unloaded` it to
        make room (its followers let it go, these spectators among them), they are told
        `resync` `actor_stopped`, as the host's own were, unless one that holds it joined
        them meanwhile."""
        if mirror.relay.closed:
            return
        mirror.relaying = False
        mirror.ended += 1
        if unloaded and mirror.rev is not None and mirror.footprint() is not None:
            mirror.topic.close(mirror.rev)
        self._register(mirror)

    def _joined(self, mirror: Mirror, queue: SubscriberQueue) -> None:
        """`queue` follows the mirror now: its host learns at once if that holds the world
        more firmly (the sweep tells it the rest: spectators leaving, following more), and
        is asked to relay its snapshot pushes if it does not (a relay that ended while
        nobody watched, or while `queue`'s view was asked, was not registered again)."""
        if not mirror.relaying:
            self._register(mirror)
        told, own = mirror.told, queue.footprint
        if told is not None:
            self._tell(mirror, own if own is None or told == UNWATCHED else min(told, own))

    def _tell(self, mirror: Mirror, footprint: int | None) -> None:
        """Tell the world's host how firmly the mirror's spectators hold it now."""
        if footprint != mirror.told:
            mirror.told = footprint
            for link in mirror.relay.links:
                link.tell(mirror.actor_id, mirror.relay, footprint)

    def _drain_soon(self, mirror: Mirror, *, read: bool = False) -> None:
        """Publish the queued snapshots (and, with `read`, the stored events) in a task."""
        mirror.drain_read |= read
        if mirror.draining:
            return
        if self._nursery is None:
            self._not_feeding("publishing the snapshot pushes", mirror)
            return
        mirror.draining = True

        async def drain() -> None:
            try:
                async with mirror.lock:
                    mirror.draining = False
                    read, mirror.drain_read = mirror.drain_read, False
                    if mirror.rev is not None and self._mirrors.get(mirror.actor_id) is mirror:
                        await self._advance(mirror, read=read)
            except StoreUnavailable as down:  # the next notification (or subscribe) reads again
                self._down(f"publishing {mirror.actor_id} to its spectators", down)
            except Exception:
                log.exception("publishing %s to its spectators failed", mirror.actor_id)

        self._nursery.start_soon(drain)

    def _register(self, mirror: Mirror) -> None:
        """Have the world's host relay its snapshot pushes here again (with backoff, while
        the mirror has subscribers). The view it answers is not pushed: spectators on the
        host, told to resubscribe when its actor stopped, get the events they missed and
        no snapshot either (what they missed of the figures comes with the next one)."""
        if mirror.registering:
            return
        if self._nursery is None:
            self._not_feeding("following the snapshot pushes", mirror)
            return
        mirror.registering = True

        async def register() -> None:
            delay = RELAY_RETRY
            try:
                while not mirror.relaying and not mirror.relay.closed \
                        and mirror.topic.prune():
                    try:
                        rev, _, mark = await self._view(mirror, relay=True)
                    except Exception as exc:  # noqa: BLE001 - moving, held, unreachable
                        log.info("%s's snapshot pushes are not relayed here yet: %r",
                                 mirror.actor_id, exc)
                        await trio.sleep(delay)
                        delay = min(2 * delay, RELAY_RETRY_MAX)
                        continue
                    async with mirror.lock:
                        if mirror.rev is not None:
                            await self._advance(mirror, before=mark, upto=rev)
            except StoreUnavailable as down:
                self._down(f"following {mirror.actor_id}'s snapshot pushes", down)
            except Exception:
                log.exception("following %s's snapshot pushes failed", mirror.actor_id)
            finally:
                mirror.registering = False

        self._nursery.start_soon(register)

    def _not_feeding(self, what: str, mirror: Mirror) -> None:
        """A mirror's task asked for while the feed does not run (not yet, or no more: the
        server shuts down, and a peer link that fails then loses its relays): dropped, as
        nothing is published to the mirror's spectators any longer."""
        log.debug("%s of %s dropped: the mirrors' feed is not running", what,
                  mirror.actor_id)

    # ---- the feed -----------------------------------------------------------------------

    async def run(self) -> None:
        """Listen to the store's notifications and feed the mirrors until cancelled."""
        throttle = Throttle(RELISTEN_LOG_EVERY)  # (not every RELISTEN through an outage)
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                nursery.start_soon(self._sweep)
                while True:
                    await self._listen(throttle)
                    self._counted = (0, 0, 0)
                    await trio.sleep(RELISTEN)
            finally:
                self._nursery = None  # it closes: later calls are dropped (`_not_feeding`)

    async def _listen(self, throttle: Throttle) -> None:
        """Feed the mirrors from one listening connection, until it fails."""
        try:
            async with self.store.listen(own=True) as notes:
                # Listening now: whatever was missed meanwhile is read first.
                await self._feed({m: -1 for m in (*self._mirrors, *self._followers)})
                async for moved in notes:
                    self._count(notes.statistics())
                    await self._feed(moved)
        except Exception as exc:  # noqa: BLE001 - listen again, read what was missed
            if (held := throttle.due()) is not None:
                log.warning("the store's notifications stopped: %r; listening again every "
                            "%g s (%d time(s) since the last report)", exc, RELISTEN,
                            held + 1)

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
                except StoreUnavailable as down:  # the next notification (or listen) tries again
                    self._down(f"following {stream}", down)
                except Exception:
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
                await self._advance(mirror)
            except StoreUnavailable as down:  # the next notification (or subscribe) reads again
                self._down(f"reading {mirror.actor_id} for its spectators", down)
            except Exception:
                log.exception("reading %s for its spectators failed", mirror.actor_id)

    def _down(self, what: str, down: StoreUnavailable) -> None:
        """Log a read the store refused, being down (an outage, expected: no traceback),
        in one line at most every DOWN_LOG_EVERY seconds for every such read."""
        if (held := self._down_log.due()) is not None:
            log.warning("%s failed: %s; read again once the store answers (%d more "
                        "since the last report)", what, down.why, held)

    async def _sweep(self) -> None:
        """Drop mirrors nobody watched for IDLE seconds; tell the hosts of the others how
        firmly their spectators hold them now."""
        while True:
            await trio.sleep(SWEEP)
            now = trio.current_time()
            for actor_id, mirror in list(self._mirrors.items()):
                if mirror.topic.prune():
                    mirror.idle_since = now
                elif now - mirror.idle_since >= IDLE and not mirror.lock.locked():
                    self.drop(actor_id)
                    continue
                if mirror.relaying:
                    self._tell(mirror, mirror.footprint())


def _no_view() -> Any:
    raise AssertionError("a mirror answers from its history here")
