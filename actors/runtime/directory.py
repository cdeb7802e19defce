"""The directory: actor ids (`kind:name`) to live actors, activated on demand per kind.

Each world kind is an `ActorKind` (built from its `World` with `ActorKind.of`): how to make
its actors, which op creates one and with which role, which names exist without being
created. A world exists once its stream has events, or when its kind declares the name
(`lobby:main`, today's daily field); naming any other world starts nothing: it is
`unknown_actor`. The create op is the one message that may reach a world that does not
exist: the directory starts the actor provisionally (invisible to everyone else) and
hands it the call; a refused create stops it again and leaves nothing behind.

Adapters reach worlds through an `ActorRef` (actors/runtime/ref.py), never the actor.
Actors run in the directory's nursery, each in its own supervised task, so one crashing
leaves the others untouched.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable
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
from actors.runtime.host import WorldActor, check_world
from actors.runtime.mailbox import Answer, Call, Pending, wait_answer
from actors.runtime.ref import ActorRef
from actors.store import EventStore
from actors.world import World
from protocol.envelope import ACTOR_ID_RE
from protocol.errors import ErrorCode, ProtocolError

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

    @classmethod
    def of(cls, world: World) -> ActorKind:
        """The kind of `world`, hosted by its effect actor or the plain `WorldActor`."""
        host: type[WorldActor] = world.actor or WorldActor
        check_world(world, host)
        create_args = next((s.args for s in world.ops if s.name == world.create), None)
        return cls(world.kind, lambda actor_id, context: host(actor_id, context, world),
                   world.create_role, world.create, create_args, world.declared, world.listed)


class Directory:
    """Live actors by id; use `open_directory` to get one with its hosting nursery."""

    def __init__(self, store: EventStore, kinds: Iterable[ActorKind], nursery: trio.Nursery,
                 config: RuntimeConfig, observer: RuntimeObserver,
                 clock: Callable[[], int] = wall_clock_ms) -> None:
        self.store = store
        self.kinds = {k.kind: k for k in kinds}
        self.config = config
        self.observer = observer
        self.clock = clock
        self._nursery = nursery
        self._live: dict[str, Actor] = {}
        self._starting: dict[str, trio.Lock] = {}
        self._offload = trio.CapacityLimiter(config.offload_threads)

    def kind_of(self, actor_id: str) -> ActorKind:
        """The kind of `actor_id` (`bad_request` for a malformed id, `unknown_actor` for a
        kind this server does not host)."""
        if not ACTOR_ID_RE.match(actor_id):
            raise ProtocolError(ErrorCode.BAD_REQUEST, f"{actor_id[:80]!r} is not an actor id "
                                "'kind:name'", {"path": "to"})
        kind = self.kinds.get(actor_id.split(":", 1)[0])
        if kind is None:
            raise ProtocolError(ErrorCode.UNKNOWN_ACTOR, f"there is no world kind "
                                f"{actor_id.split(':', 1)[0]!r}", {"actor": actor_id})
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
        for a world that was never created and that its kind does not declare)."""
        actor = self.alive(actor_id)
        if actor is not None:
            return actor
        kind = self.kind_of(actor_id)
        async with self._lock(actor_id):
            actor = self.alive(actor_id)
            if actor is None:
                if not await self._exists(kind, actor_id):
                    raise self._unknown(kind, actor_id)
                actor = await self._start(kind, actor_id)
            return actor

    async def deliver(self, actor_id: str, message: Any, answer: Answer) -> None:
        """Post `message` to world `actor_id`, activating it first if needed; its answer
        goes to `answer`. The kind's create call may also bring the world to life."""
        actor = self.alive(actor_id)
        if actor is None:
            kind = self.kind_of(actor_id)
            if isinstance(message, Call) and message.op == kind.create_op:
                actor, answer = await self._creating(kind, actor_id, answer)
            else:
                actor = await self.get(actor_id)
        actor.send(message, answer)

    def deliver_soon(self, actor_id: str, message: Any, answer: Answer) -> None:
        """`deliver` in a task of the directory's own (the caller does not wait for the
        load); a refusal goes to `answer`."""
        async def run() -> None:
            try:
                await self.deliver(actor_id, message, answer)
            except ProtocolError as error:
                answer.fail(error)
            except Exception:
                log.exception("delivering to %s failed", actor_id)
                answer.fail(ProtocolError(ErrorCode.INTERNAL, "the server failed on this "
                                          "request; the failure was logged"))

        self._nursery.start_soon(run)

    async def ask(self, actor_id: str, message: Any, timeout: float | None = None) -> Any:
        """Deliver `message` and wait for its answer (see `Actor.ask` for the refusals)."""
        pending = Pending()
        await self.deliver(actor_id, message, pending)
        limit = self.config.ask_timeout if timeout is None else timeout
        return await wait_answer(pending, limit, actor_id)

    def context(self) -> ActorContext:
        """What a new actor gets from this directory."""
        return ActorContext(self.store, self, self.config, self.observer, self.clock,
                            self._offload)

    # ---- activation ---------------------------------------------------------------------

    async def _exists(self, kind: ActorKind, actor_id: str) -> bool:
        name = actor_id.partition(":")[2]
        return kind.declared(name, self.clock()) or await self.store.revision(actor_id) > 0

    def _unknown(self, kind: ActorKind, actor_id: str) -> ProtocolError:
        how = f"; {kind.create_op} creates it" if kind.create_op else ""
        return ProtocolError(ErrorCode.UNKNOWN_ACTOR, f"there is no world {actor_id!r}{how}",
                             {"actor": actor_id})

    async def _creating(self, kind: ActorKind, actor_id: str,
                        answer: Answer) -> tuple[Actor, Answer]:
        """The actor a create call goes to: the live one, the stored one, or a new one
        started provisionally, whose create answer decides whether it stays."""
        async with self._lock(actor_id):
            actor = self._live.get(actor_id)
            if actor is not None and not actor.stopped:
                return actor, answer  # live, or being created: it answers for itself
            if await self._exists(kind, actor_id):
                return await self._start(kind, actor_id), answer
            actor = kind.factory(actor_id, self.context())
            actor.provisional = True
            await self._start(kind, actor_id, actor)
            return actor, _CreateAnswer(actor, answer)

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

    async def _start(self, kind: ActorKind, actor_id: str, actor: Actor | None = None) -> Actor:
        actor = actor or kind.factory(actor_id, self.context())
        try:
            await self._nursery.start(self._host, actor)
        except Exception:
            log.exception("%s could not be loaded", actor_id)
            raise ProtocolError(ErrorCode.UNAVAILABLE, f"{actor_id} could not be loaded from "
                                "the store", {"actor": actor_id}) from None
        return actor

    async def _host(self, actor: Actor, *, task_status: trio.TaskStatus[None]) -> None:
        self._live[actor.actor_id] = actor
        try:
            await actor.run(task_status=task_status)
        finally:
            if self._live.get(actor.actor_id) is actor:
                del self._live[actor.actor_id]


class _CreateAnswer:
    """The answer to a world's create call: accepted, the world stays; refused, it stops
    (its create wrote nothing) and is forgotten."""

    __slots__ = ("_actor", "_answer")

    def __init__(self, actor: Actor, answer: Answer) -> None:
        self._actor = actor
        self._answer = answer

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
                         clock: Callable[[], int] = wall_clock_ms) -> AsyncIterator[Directory]:
    """A directory whose actors live until the block ends (then they are cancelled)."""
    async with trio.open_nursery() as nursery:
        directory = Directory(store, kinds, nursery, config or RuntimeConfig(),
                              observer or NullObserver(), clock)
        try:
            yield directory
        finally:
            nursery.cancel_scope.cancel()
