"""The directory: actor ids (`kind:name`) to live actors, activated on demand per kind.

Each world kind is an `ActorKind` (built from its `World` with `ActorKind.of`): how to make
its actors, which op creates one and with which role, which names exist without being
created. A world exists once its stream has events, or when its kind declares the name
(`lobby:main`, today's daily field); naming any other world starts nothing: it is
`unknown_actor`. The create op is the one message that may reach a world that does not
exist: the directory starts the actor provisionally (invisible to everyone else) and
hands it the call; a refused create stops it again and leaves nothing behind.

Adapters reach worlds through an `ActorRef` (actors/runtime/ref.py), never the actor. A
refusal the directory makes before a message reaches an actor (as a full or closed
mailbox's) says so: `ProtocolError.delivered` is False (the server gives back a budget
spent on it: server/claims.py).
Actors run in the directory's nursery, each in its own supervised task, so one crashing
leaves the others untouched.

With `max_live_worlds`, at most that many worlds are live here at once (those being
loaded or created included): each stays in memory until its idle unload, so a client
naming one stored world after another would otherwise load them all. A world that would
start past the bound first unloads the live world used least lately (a timer's message is
a use) that can go (nobody subscribed, no message waiting or being handled, no answer
owed, no offloaded work running, and a message handled since it loaded: one loaded for a
caller whose message is not yet posted stays), as its idle unload would. Failing that, it
unloads a world whose every subscriber lets it go (`SubscriberQueue.footprint`: the server
gives its anonymous spectators the number of worlds their client follows; another process's
mirror says its spectators', `topic.Relay`), whose lightest
follower follows the most (a few clients following many worlds cannot pin them all), its
subscribers told `resync` `actor_stopped`; a caller with a footprint of its own (the
message's answer or subscriber queue says a number) unloads only a world whose followers all
follow more than it does, so a resubscribe never unloads its peer's world in turn. When
every one is in use, it is refused `over_budget` and nothing changes. House worlds (`resident`
kinds: the lobby, the owner's console) are outside the bound: never unloaded to make
room, never counted, never refused, so the owner can always reach the console.

With a `Placement` (actors/runtime/placement.py) the directory is one of several
processes sharing the worlds: a world not live here is hosted here only once this
process holds its lease, and then the stream is claimed before it is replayed (so a
previous owner's late appends are refused by the store); otherwise the message is
forwarded, and a subscription follows the world from here.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from actors.runtime.base import Actor
from actors.runtime.context import (
    ActorContext,
    ActorStatistics,
    NullObserver,
    RuntimeConfig,
    RuntimeObserver,
    wall_clock_ms,
)
from actors.runtime.deferred import Passing, tell
from actors.runtime.host import WorldActor, check_world
from actors.runtime.mailbox import ActorStopped, Answer, Call, Pending, wait_answer
from actors.runtime.placement import REDELIVERIES, Placement, Rerouting
from actors.runtime.ref import ActorRef
from actors.runtime.subscriber import SubscriberQueue
from actors.store import EventStore, StoreUnavailable
from actors.world import World, creates_any
from protocol.envelope import ACTOR_ID_RE
from protocol.errors import ErrorCode, ProtocolError, over_budget

log = logging.getLogger("petridish.actors")


def no_name(_name: str, _t: int) -> bool:
    """Declares no world: every world of the kind must be created."""
    return False


def any_name(_name: str, _t: int) -> bool:
    """Declares every name (test and benchmark kinds only: any request starts an actor)."""
    return True


@attrs.frozen
class ActorKind:
    """How to make actors of one kind, how one comes to life, and who may create one."""

    kind: str
    factory: Callable[[str, ActorContext], Actor]  # (actor_id, context) -> a fresh actor
    create_role: str = "owner"
    create_op: str | None = None  # the op that brings a world of this kind to life
    create_args: type | None = None  # that op's args class (lobby.create's params)
    # (name, now in ms) -> True for names that exist without being created.
    declared: Callable[[str, int], bool] = no_name
    listed: bool = True  # the lobby lists worlds of this kind
    followable: bool = True  # spectators may subscribe (World.followable)
    # Ops that only read (safe to send again when a reply was lost between processes; served
    # to an account whose `stored_per_hour` is spent): the world's reads and effect reads.
    reads: frozenset[str] = frozenset()
    seat_op: str | None = None  # the op that seats a new player (World.seat)
    resident: bool = False  # a house world: outside max_live_worlds (World.resident)
    creatable: Callable[[str], bool] = creates_any  # names create_op accepts (World.creatable)
    # Messages of other worlds it takes, by wire name (World.internal): a cluster carries
    # them between processes.
    internal: Mapping[str, type] = attrs.field(factory=dict)

    @classmethod
    def of(cls, world: World) -> ActorKind:
        """The kind of `world`, hosted by its effect actor or the plain `WorldActor`."""
        host: type[WorldActor] = world.actor or WorldActor
        check_world(world, host)
        create_args = next((s.args for s in world.ops if s.name == world.create), None)
        return cls(world.kind, lambda actor_id, context: host(actor_id, context, world),
                   world.create_role, world.create, create_args, world.declared, world.listed,
                   world.followable, frozenset(world.reads) | host.effect_reads,
                   world.seat, world.resident, world.creatable,
                   {cls.wire: cls for cls in world.internal})


class Directory:
    """Live actors by id; use `open_directory` to get one with its hosting nursery."""

    def __init__(self, store: EventStore, kinds: Iterable[ActorKind], nursery: trio.Nursery,
                 config: RuntimeConfig, observer: RuntimeObserver,
                 clock: Callable[[], int] = wall_clock_ms, model: Any = None,
                 placement: Placement | None = None,
                 max_live_worlds: int | None = None) -> None:
        self.store = store
        self.kinds = {k.kind: k for k in kinds}
        self.config = config
        self.observer = observer
        self.clock = clock
        self.model = model
        self.placement = placement
        self.max_live_worlds = max_live_worlds  # None: no bound
        self.closing = False  # set when the directory's block ends: nothing is rerouted
        self._nursery = nursery
        self._live: dict[str, Actor] = {}
        self._starting: dict[str, trio.Lock] = {}
        self._coming: set[str] = set()  # ids given a place by `_make_room`, not yet live
        self.held: set[str] = set()  # worlds the owner stopped: refused until released
        self._offload = trio.CapacityLimiter(config.offload_threads)
        self._io = trio.CapacityLimiter(config.io_threads)

    def kind_of(self, actor_id: str) -> ActorKind:
        """The kind of `actor_id` (`bad_request` for a malformed id, `unknown_actor` for a
        kind this server does not host)."""
        if not ACTOR_ID_RE.match(actor_id):
            raise ProtocolError(ErrorCode.BAD_REQUEST, f"{actor_id[:80]!r} is not an actor id "
                                "'kind:name'", {"path": "to"}, delivered=False)
        kind = self.kinds.get(actor_id.split(":", 1)[0])
        if kind is None:
            raise ProtocolError(ErrorCode.UNKNOWN_ACTOR, f"there is no world kind "
                                f"{actor_id.split(':', 1)[0]!r}", {"actor": actor_id},
                                delivered=False)
        return kind

    def ref(self, actor_id: str) -> ActorRef:
        """A reference to world `actor_id` (its id and kind checked; nothing started)."""
        self.kind_of(actor_id)
        return ActorRef(self, actor_id)

    def alive(self, actor_id: str) -> Actor | None:
        """The actor `actor_id` if it is live now (no loading, no waiting; a world being
        created is not live until its create was accepted)."""
        actor = self._live.get(actor_id)
        if actor is None or actor.stopped or actor.provisional:
            return None
        return actor

    def live(self) -> list[ActorStatistics]:
        """Statistics of every live actor, sorted by id."""
        return [self._live[i].statistics() for i in sorted(self._live)
                if self.alive(i) is not None]

    async def get(self, actor_id: str) -> Actor:
        """The live actor `actor_id`, started from the store if needed (`unknown_actor`
        for a world that was never created and that its kind does not declare). In a
        cluster, `unavailable` when another process hosts it."""
        actor = self.alive(actor_id)
        if actor is not None:
            return actor
        where = await self._place(actor_id)
        if where is not None:
            raise ProtocolError(ErrorCode.UNAVAILABLE, f"{actor_id} is hosted by another "
                                "process", {"actor": actor_id})
        return await self._load(actor_id)

    async def _load(self, actor_id: str, payer: Answer | SubscriberQueue | None = None
                    ) -> Actor:
        """The live actor, started here from the store (its lease held, in a cluster).
        What looking it up and loading it cost (reading its stream and folding it: a long
        history costs much) is charged to `payer`, the answer or subscriber queue of the
        message that named it; a message that found it live or loading pays nothing."""
        kind = self.kind_of(actor_id)
        async with self._lock(actor_id):
            actor = self.alive(actor_id)
            if actor is None:
                started = time.perf_counter()
                try:
                    if not await self._exists(kind, actor_id):
                        if self.placement is not None:
                            await self.placement.release(actor_id)
                        raise self._unknown(kind, actor_id)
                    actor = await self._start(kind, actor_id, payer=payer)
                finally:
                    tell(payer, "charge", time.perf_counter() - started)
            return actor

    async def _place(self, actor_id: str) -> Any | None:
        """None when this process may host `actor_id` (always, without a placement; in
        a cluster, once it holds the lease), else where the world lives; `unavailable`
        for a world the owner holds stopped."""
        self.kind_of(actor_id)
        if actor_id in self.held:
            raise ProtocolError(ErrorCode.UNAVAILABLE, f"{actor_id} was stopped by the owner",
                                {"actor": actor_id, "held": True}, delivered=False)
        if self.placement is None:
            return None
        return await self.placement.acquire(actor_id)

    def send(self, actor_id: str, message: Any, answer: Answer, hops: int = 0) -> None:
        """Post `message` without waiting: to the live actor now, else through
        `deliver_soon`. `hops`: processes the message came through (a cluster's)."""
        actor = self.alive(actor_id)
        if actor is None:
            self.deliver_soon(actor_id, message, answer, hops)
        else:
            self._post(actor, actor_id, message, answer, hops)

    def _post(self, actor: Actor, actor_id: str, message: Any, answer: Answer,
              hops: int) -> None:
        if self.placement is None:
            actor.send(message, answer)
            return
        rerouting = Rerouting.wrap(self, actor_id, message, answer, hops)
        try:
            actor.send(message, rerouting)
        except ActorStopped as stopped:  # it stopped meanwhile: wherever the world went
            rerouting.fail(stopped)

    async def deliver(self, actor_id: str, message: Any, answer: Answer, hops: int = 0) -> None:
        """Post `message` to world `actor_id`, activating it first if needed; its answer
        goes to `answer`. The kind's create call may also bring the world to life. In a
        cluster, a world another process hosts gets the message forwarded."""
        actor = self.alive(actor_id)
        if actor is None:
            kind = self.kind_of(actor_id)
            where = await self._place(actor_id)
            if where is not None:
                assert self.placement is not None
                self.placement.forward(where, actor_id, message, answer, hops)
                return
            if isinstance(message, Call) and message.op == kind.create_op:
                actor, answer = await self._creating(kind, actor_id, answer)
            else:
                actor = await self._load(actor_id, answer)
        self._post(actor, actor_id, message, answer, hops)

    async def subscribe(self, actor_id: str, queue: SubscriberQueue, since: int | None,
                        request_id: int) -> None:
        """Follow world `actor_id`'s pushes into `queue` (the reply and first push go
        there): on its live actor, or, in a cluster, from the process hosting it (and
        again wherever the world went, if its actor stopped meanwhile); `forbidden` for a
        kind whose events are not for spectators."""
        if not self.kind_of(actor_id).followable:
            raise ProtocolError(ErrorCode.FORBIDDEN, f"{actor_id} cannot be followed: its "
                                "events are not for spectators", {"actor": actor_id})
        for attempt in itertools.count(1):
            actor = self.alive(actor_id)
            if actor is None:
                where = await self._place(actor_id)
                if where is not None:
                    assert self.placement is not None
                    await self.placement.follow(where, actor_id, queue, since, request_id)
                    return
                actor = await self._load(actor_id, queue)
            try:
                await actor.subscribe(queue, since, request_id)
                return
            except ActorStopped:
                if self.placement is None or self.closing or attempt >= REDELIVERIES:
                    raise

    def unsubscribe(self, actor_id: str, queue: SubscriberQueue) -> None:
        """Stop following (a world not live here has forgotten `queue` already)."""
        actor = self.alive(actor_id)
        if actor is not None:
            actor.unsubscribe(queue)
        if self.placement is not None:
            self.placement.unfollow(actor_id, queue)

    def evict(self, actor_id: str) -> bool:
        """Stop world `actor_id` at once (its lease is lost): messages waiting for it are
        delivered again wherever it goes; True if it was live here."""
        actor = self._live.get(actor_id)
        if actor is None or actor.stopped:
            return False
        actor.stop()
        return True

    def hold(self, actor_id: str) -> bool:
        """Stop world `actor_id` and refuse it until `release` (the owner's console); True
        if it was live."""
        self.held.add(actor_id)
        return self.evict(actor_id)

    def release(self, actor_id: str) -> bool:
        """Let a held world load again; True if it was held."""
        if actor_id not in self.held:
            return False
        self.held.discard(actor_id)
        return True

    def summary(self, actor_id: str) -> Any:
        """What live world `actor_id` says of itself now (`World.summary`), or None (not
        live, not loaded yet, or it says nothing); the owner's console shows it."""
        actor = self.alive(actor_id)
        if not isinstance(actor, WorldActor) or not actor.loaded:
            return None
        return actor.world.summary(actor.state)

    def hosted(self) -> list[str]:
        """The ids of every world this process hosts or is starting (a cluster renews
        their leases)."""
        return [i for i, actor in self._live.items() if not actor.stopped]

    def deliver_soon(self, actor_id: str, message: Any, answer: Answer, hops: int = 0) -> None:
        """`deliver` in a task of the directory's own (the caller does not wait for the
        load); a refusal goes to `answer`. Once the directory is closing, `answer` is
        refused at once, as a stopped actor refuses what it did not apply."""
        if self.closing:  # (its nursery takes no task: it is cancelled, or closed)
            answer.fail(ActorStopped(actor_id, "was not delivered: the server is shutting "
                                     "down", delivered=False))
            return

        async def run() -> None:
            try:
                await self.deliver(actor_id, message, answer, hops)
            except ProtocolError as error:
                answer.fail(error)
            except Exception:
                log.exception("delivering to %s failed", actor_id)
                answer.fail(ProtocolError(ErrorCode.INTERNAL, "the server failed on this "
                                          "request; the failure was logged"))

        self._nursery.start_soon(run)

    async def ask(self, actor_id: str, message: Any, timeout: float | None = None,
                  answer: Pending | None = None) -> Any:
        """Deliver `message` and wait for its answer (see `Actor.ask` for the refusals);
        `answer` is the slot to wait on, when the caller brings its own (one that charges
        what the message cost: actors/runtime/base.py)."""
        pending = answer if answer is not None else Pending()
        await self.deliver(actor_id, message, pending)
        limit = self.config.ask_timeout if timeout is None else timeout
        return await wait_answer(pending, limit, actor_id)

    def context(self) -> ActorContext:
        """What a new actor gets from this directory."""
        return ActorContext(self.store, self, self.config, self.observer, self.clock,
                            self._offload, self.model, self._io)

    # ---- activation ---------------------------------------------------------------------

    async def _exists(self, kind: ActorKind, actor_id: str) -> bool:
        name = actor_id.partition(":")[2]
        return kind.declared(name, self.clock()) or await self.store.revision(actor_id) > 0

    def _unknown(self, kind: ActorKind, actor_id: str) -> ProtocolError:
        creatable = kind.create_op and kind.creatable(actor_id.partition(":")[2])
        how = f"; {kind.create_op} creates it" if creatable else ""
        return ProtocolError(ErrorCode.UNKNOWN_ACTOR, f"there is no world {actor_id!r}{how}",
                             {"actor": actor_id}, delivered=False)

    async def _creating(self, kind: ActorKind, actor_id: str,
                        answer: Answer) -> tuple[Actor, Answer]:
        """The actor a create call goes to: the live one, the stored one, or a new one
        started provisionally, whose create answer decides whether it stays (starting
        either is charged to `answer`, as `_load` charges)."""
        async with self._lock(actor_id):
            actor = self._live.get(actor_id)
            if actor is not None and not actor.stopped:
                return actor, answer  # live, or being created: it answers for itself
            started = time.perf_counter()
            try:
                if await self._exists(kind, actor_id):
                    return await self._start(kind, actor_id, payer=answer), answer
                actor = kind.factory(actor_id, self.context())
                actor.provisional = True
                await self._start(kind, actor_id, actor, answer)
                return actor, _CreateAnswer(actor, answer)
            finally:
                tell(answer, "charge", time.perf_counter() - started)

    @asynccontextmanager
    async def _lock(self, actor_id: str) -> AsyncIterator[None]:
        # One lock per id being started, so two first requests do not load it twice.
        lock = self._starting.setdefault(actor_id, trio.Lock())
        try:
            async with lock:
                yield
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._starting.pop(actor_id, None)

    async def _start(self, kind: ActorKind, actor_id: str, actor: Actor | None = None,
                     payer: Answer | SubscriberQueue | None = None) -> Actor:
        stopped = self._live.get(actor_id)
        if stopped is not None and stopped.stopped:
            # Its last batch may still be appending (a handler was awaiting when it was
            # stopped), with this process's fence: replay only after it.
            await stopped.ended.wait()
        try:
            self._make_room(kind, actor_id, None if payer is None else payer.footprint)
        except ProtocolError:
            if self.placement is not None:  # another process may have room for it
                await self.placement.release(actor_id)
            raise
        actor = actor or kind.factory(actor_id, self.context())
        self._coming.add(actor_id)
        try:
            if self.placement is not None:
                # The lease is held: claim before replaying, so an append of the previous
                # owner either landed before the claim (and the replay sees it) or is
                # refused by the store.
                await self.store.claim(actor_id)
            await self._nursery.start(self._host, actor)
        except ActorStopped:
            # Stopped while loading (a hold, a lost lease): its caller's message fails or
            # goes where the world went, as to any actor stopped before it got it.
            return actor
        except StoreUnavailable as down:  # said once per second by the renewals: no trace
            log.warning("%s could not be loaded: %s", actor_id, down.why)
            raise ProtocolError(ErrorCode.UNAVAILABLE, f"{actor_id} could not be loaded from "
                                f"the store ({down.why}); retry in a moment",
                                {"actor": actor_id, "store": "down"}, delivered=False) from None
        except Exception:
            log.exception("%s could not be loaded", actor_id)
            raise ProtocolError(ErrorCode.UNAVAILABLE, f"{actor_id} could not be loaded from "
                                "the store", {"actor": actor_id}, delivered=False) from None
        finally:
            self._coming.discard(actor_id)
        return actor

    def _make_room(self, kind: ActorKind, actor_id: str, reach: int | None = None) -> None:
        """Give `actor_id` a place within `max_live_worlds`: unload the live world used least
        lately that nothing holds if there is none free, else one followed only by
        subscribers that let it go, those whose lightest follower follows most first (and,
        for a caller of footprint `reach`, only one whose followers all follow more), else
        refuse `over_budget`."""
        limit = self.max_live_worlds
        if limit is None or kind.resident:
            return
        live = {i: a for i, a in self._live.items()
                if not a.stopped and not self.kind_of(i).resident}
        coming = {i for i in self._coming if not self.kind_of(i).resident}
        if len(live.keys() | coming) < limit:
            return
        for actor in sorted(live.values(), key=lambda a: a.active_at):
            if actor.unload():
                return
        spare = [(size, actor) for actor in live.values()
                 if (size := actor.footprint(reach)) is not None]
        for _, actor in sorted(spare, key=lambda s: (-s[0], s[1].active_at)):
            if actor.unload(followed=True):
                return
        refusal = over_budget("max_live_worlds", f"the server's live worlds are at their most "
                              f"({limit}), and each is followed or answering a request; retry "
                              "once one is not (a world nobody follows is unloaded to make "
                              "room)", limit)
        refusal.delivered = False
        self.observer.refused(actor_id, refusal)
        try:
            raise refusal
        finally:  # raised from a name, it would hold its traceback's frame
            refusal = None  # (a cycle: tests/server/test_cyclic_garbage.py)

    async def _host(self, actor: Actor, *, task_status: trio.TaskStatus[None]) -> None:
        self._live[actor.actor_id] = actor
        try:
            await actor.run(task_status=task_status)
        finally:
            if self._live.get(actor.actor_id) is actor:
                del self._live[actor.actor_id]
                if self.placement is not None and not self.closing:
                    self._nursery.start_soon(self._release, actor.actor_id)

    async def _release(self, actor_id: str) -> None:
        """Forget the claim of an actor that ended and hand its lease back, unless it
        started here again."""
        assert self.placement is not None
        async with self._lock(actor_id):
            if actor_id not in self._live:
                await self.store.unclaim(actor_id)  # (it ended; raises nothing)
                try:
                    await self.placement.release(actor_id)
                except StoreUnavailable as down:  # it lapses by itself; the next owner claims
                    log.warning("the lease of %s could not be released: %s", actor_id,
                                down.why)
                except Exception:  # the lease lapses by itself; the next owner claims
                    log.exception("the lease of %s could not be released", actor_id)


class _CreateAnswer(Passing):
    """The answer to a world's create call: accepted, the world stays; refused, it stops
    (its create wrote nothing) and is forgotten. The create is its caller's own
    (`Passing`): delivered again, it makes room as that caller would."""

    __slots__ = ("_actor",)

    def __init__(self, actor: Actor, answer: Answer) -> None:
        super().__init__(answer)
        self._actor = actor

    def succeed(self, value: Any) -> None:
        """The world exists from now on."""
        self._actor.provisional = False
        self._answer.succeed(value)

    def fail(self, error: ProtocolError) -> None:
        """The create was refused: stop the world it would have been."""
        if self._actor.provisional:
            self._actor.stop()
        self._answer.fail(error)


@asynccontextmanager
async def open_directory(store: EventStore, kinds: Iterable[ActorKind], *,
                         config: RuntimeConfig | None = None,
                         observer: RuntimeObserver | None = None,
                         clock: Callable[[], int] = wall_clock_ms, model: Any = None,
                         placement: Placement | None = None,
                         max_live_worlds: int | None = None) -> AsyncIterator[Directory]:
    """A directory whose actors live until the block ends (then they are cancelled);
    `model` is the server's model endpoint, handed to every actor (ActorContext.model);
    at most `max_live_worlds` are live at once (None: no bound)."""
    async with trio.open_nursery() as nursery:
        directory = Directory(store, kinds, nursery, config or RuntimeConfig(),
                              observer or NullObserver(), clock, model, placement,
                              max_live_worlds)
        try:
            yield directory
        finally:
            directory.closing = True
            nursery.cancel_scope.cancel()
