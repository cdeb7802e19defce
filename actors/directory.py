"""The directory: actor ids (`kind:name`) to live actors, started on demand per kind.

Each world kind registers an `ActorKind` (its factory and who may create one). `get`
starts an actor whose stream exists (or one that its kind starts on demand, such as
`lobby:main`); `create` writes a new world's first events and starts it. Actors run in the
directory's nursery, each in its own supervised task, so one crashing leaves the others
untouched.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from actors.runtime import (
    Actor,
    ActorContext,
    ActorStatistics,
    NullObserver,
    RuntimeConfig,
    RuntimeObserver,
)
from actors.store import ConflictError, EventStore
from protocol.envelope import ACTOR_ID_RE
from protocol.errors import ErrorCode, ProtocolError

log = logging.getLogger("petridish.actors")


@attrs.frozen
class ActorKind:
    """How to make actors of one kind, and who may create a world of it."""

    kind: str
    factory: Callable[[str, ActorContext], Actor]  # (actor_id, context) -> a fresh actor
    create_role: str = "owner"
    # Names `get` starts even with an empty stream: a set (`{"main"}` for the lobby), or True
    # for every name (test and bench kinds). Anything else must be created first, so a
    # client cannot conjure actors by naming them.
    autostart: bool | frozenset[str] = False
    listed: bool = True  # the lobby lists worlds of this kind


class Directory:
    """Live actors by id; use `open_directory` to get one with its hosting nursery."""

    def __init__(self, store: EventStore, kinds: Iterable[ActorKind], nursery: trio.Nursery,
                 config: RuntimeConfig, observer: RuntimeObserver) -> None:
        self.store = store
        self.kinds = {k.kind: k for k in kinds}
        self.config = config
        self.observer = observer
        self._nursery = nursery
        self._live: dict[str, Actor] = {}
        self._starting: dict[str, trio.Lock] = {}

    def _kind_of(self, actor_id: str) -> ActorKind:
        if not ACTOR_ID_RE.match(actor_id):
            raise ProtocolError(ErrorCode.BAD_REQUEST, f"{actor_id[:80]!r} is not an actor id "
                                "'kind:name'", {"path": "to"})
        kind = self.kinds.get(actor_id.split(":", 1)[0])
        if kind is None:
            raise ProtocolError(ErrorCode.UNKNOWN_ACTOR, f"there is no world kind "
                                f"{actor_id.split(':', 1)[0]!r}", {"actor": actor_id})
        return kind

    def alive(self, actor_id: str) -> Actor | None:
        """The actor `actor_id` if it is live now (no loading, no waiting)."""
        actor = self._live.get(actor_id)
        return actor if actor is not None and not actor.stopped else None

    async def get(self, actor_id: str) -> Actor:
        """The live actor `actor_id`, started from the store if needed (`unknown_actor`)."""
        actor = self.alive(actor_id)
        if actor is not None:
            return actor
        kind = self._kind_of(actor_id)
        async with self._lock(actor_id):
            actor = self.alive(actor_id)
            if actor is not None:
                return actor
            name = actor_id.partition(":")[2]
            started_on_demand = kind.autostart is True or (
                isinstance(kind.autostart, frozenset) and name in kind.autostart)
            if not started_on_demand and await self.store.revision(actor_id) == 0:
                raise ProtocolError(ErrorCode.UNKNOWN_ACTOR, f"there is no world {actor_id!r}",
                                    {"actor": actor_id})
            return await self._start(kind, actor_id)

    async def create(self, actor_id: str, params: dict[str, Any]) -> Actor:
        """Write the first events of a new world and start it (`already_exists` if it exists)."""
        kind = self._kind_of(actor_id)
        exists = ProtocolError(ErrorCode.ALREADY_EXISTS, f"the world {actor_id!r} exists",
                               {"actor": actor_id})
        async with self._lock(actor_id):
            if self.alive(actor_id) is not None:
                raise exists
            actor = kind.factory(actor_id, self._context())
            events = actor.creation_events(params)  # may refuse the params
            try:
                await self.store.append(actor_id, 0, events)
            except ConflictError:
                raise exists from None
            self.observer.appended(kind.kind, len(events))
            return await self._start(kind, actor_id, actor)

    def live(self) -> list[ActorStatistics]:
        """Statistics of every live actor, sorted by id."""
        return [self._live[i].statistics() for i in sorted(self._live)
                if not self._live[i].stopped]

    def _context(self) -> ActorContext:
        return ActorContext(self.store, self, self.config, self.observer)

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
        actor = actor or kind.factory(actor_id, self._context())
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


@asynccontextmanager
async def open_directory(store: EventStore, kinds: Iterable[ActorKind], *,
                         config: RuntimeConfig | None = None,
                         observer: RuntimeObserver | None = None) -> AsyncIterator[Directory]:
    """A directory whose actors live until the block ends (then they are cancelled)."""
    async with trio.open_nursery() as nursery:
        directory = Directory(store, kinds, nursery, config or RuntimeConfig(),
                              observer or NullObserver())
        try:
            yield directory
        finally:
            nursery.cancel_scope.cancel()
