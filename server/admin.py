"""The owner's console as a world, `admin:main`, hosted beside the server's other worlds.

Its ops (protocol/ops/admin.py, owner only) read what the server holds and act on it:
the worlds (from the directory: mailbox, subscribers, revision, the world's own summary),
the connections, the store's health, the budgets and who hit them, and the tokens
(through `Console`, the server's side: server/console.py); a world can be stopped (held:
refused until released), released or unloaded. Each change is an event of its stream,
so the console keeps an audit trail of who did what, when (never a token itself), and the
held worlds outlive a restart: the server loads this world as it starts, and it holds
again what its stream holds. A change is made only once its event is durable (`durable`),
so an answer that nothing was stored is true: a stop, release, unload or revoke is
recorded first, then done; a token, whose name only the token files can judge, is
created first and revoked again, unseen, when its record cannot be stored. Made durable
by their handlers, changes keep no receipt (so a created token is never in one).
Worlds under `actors/` may not import the server, so this one lives here and gets what it
needs through `Console`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

import attrs

from actors.runtime import ActorContext, ActorKind, Call, WorldActor
from actors.runtime.host import Effect
from actors.world import Codec, StateCodec, World
from protocol.envelope import ACTOR_ID_RE
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops import admin as ops

log = logging.getLogger("petridish.admin")
KIND = "admin"
AUDIT_KEPT = 200  # audit entries the state keeps (the stream keeps them all)
MAX_SUMMARY = 2048  # characters of a world's summary shown (a bigger one is not shown)


class TokenRefused(ValueError):
    """A token could not be issued (bad role or name, a name in use): the sentence says why."""


class Console(Protocol):
    """What the admin world asks of the server."""

    def counts(self) -> ops.ConnectionCounts:
        """Connections now, by role."""

    def store(self) -> ops.StoreHealth:
        """Whether writes can be made durable now."""

    def connections(self, args: ops.ConnectionsArgs) -> ops.Connections:
        """A page of the connections."""

    def budgets(self) -> ops.BudgetReport:
        """The budgets in force and who hit them."""

    def tokens(self) -> list[ops.TokenRow]:
        """Every issued token, with its live sessions."""

    def create_token(self, role: str, name: str) -> str:
        """Issue a token (TokenRefused when it cannot be); its plaintext."""

    def revoke_token(self, name: str) -> tuple[bool, int]:
        """Revoke `name`'s token and end its sessions: (whether it existed, sessions ended)."""


@attrs.frozen
class Audit:
    """The latest AUDIT_KEPT changes, oldest first, and the worlds held now."""

    entries: tuple[dict[str, Any], ...] = ()
    held: frozenset[str] = frozenset()


def evolve(state: Audit, event: dict[str, Any]) -> Audit:
    """One more entry; a stop or release changes what is held."""
    held = state.held
    if event["type"] == "world_stopped":
        held = held | {event["id"]}
    elif event["type"] == "world_released":
        held = held - {event["id"]}
    return Audit((*state.entries, event)[-AUDIT_KEPT:], held)


def to_snapshot(state: Audit) -> dict[str, Any]:
    """The state as stored."""
    return {"entries": list(state.entries), "held": sorted(state.held)}


def from_snapshot(data: Any) -> Audit:
    """The state from a snapshot (one made before holds were kept: a list of entries,
    whose stops and releases are all it can tell)."""
    if isinstance(data, list):
        state = Audit()
        for entry in data:
            state = evolve(state, entry)
        return state
    return Audit(tuple(data["entries"]), frozenset(data["held"]))


WORLD = World(
    kind=KIND,
    initial=lambda _name: Audit(),
    evolve=evolve,
    codec=Codec(lambda event, _after: dict(event), dict),
    view=lambda state: {"audit": list(state.entries)},
    ops=ops.OPS,
    declared=lambda name, _t: name == "main",
    resident=True,
    snapshot=StateCodec(to_snapshot, from_snapshot),
    listed=False,
    followable=False,  # the audit trail is the owner's
)


def shown_summary(summary: Any) -> dict[str, Any] | None:
    """A world's summary as the console shows it: None when there is none, a note when
    it is too long to show (MAX_SUMMARY characters of JSON)."""
    if summary is None:
        return None
    text = json.dumps(summary, default=str)
    return dict(summary) if len(text) <= MAX_SUMMARY else {"too_long": len(text)}


class AdminActor(WorldActor):
    """`admin:main`: every op is an effect over the directory and the `Console`."""

    state: Audit

    def __init__(self, actor_id: str, context: ActorContext, world: World,
                 console: Console | None = None) -> None:
        super().__init__(actor_id, context, world)
        self.console = console

    async def on_start(self) -> None:
        """Hold again what the stream holds (the server loads this world as it starts)."""
        await super().on_start()
        self.context.directory.held.update(self.state.held)

    def _console(self) -> Console:
        if self.console is None:
            raise self.refuse(ErrorCode.UNAVAILABLE, "the console is not attached to a server")
        return self.console

    async def _recorded(self, call: Call, what: str, **detail: Any) -> None:
        """Record a change and make the record durable (before the change is made)."""
        self.fold([{"type": what, **detail, "by": call.caller, "t": self.now()}])
        await self.durable()

    async def _overview(self, _call: Call) -> ops.Overview:
        console = self._console()
        directory = self.context.directory
        return ops.Overview(len(directory.live()), sorted(directory.held), console.counts(),
                            console.store(), list(self.state.entries[-ops.AUDIT_SHOWN:])[::-1])

    def _summary(self, actor_id: str) -> dict[str, Any] | None:
        try:
            return shown_summary(self.context.directory.summary(actor_id))
        except Exception:  # a world's summary failing must not take the console down
            log.exception("the summary of %s failed", actor_id)
            return {"error": "its summary failed; see the server's log"}

    async def _worlds(self, call: Call) -> ops.Worlds:
        args: ops.PageArgs = call.args
        directory = self.context.directory
        live = {s.actor_id: s for s in directory.live()}
        ids = sorted(set(live) | directory.held)
        rows = []
        for actor_id in ids[args.offset:args.offset + args.limit]:
            s = live.get(actor_id)
            if s is None or actor_id in directory.held:
                rows.append(ops.WorldRow(actor_id, actor_id.partition(":")[0], "held", -1,
                                         0, 0, 0, 0, 0, 0, None))
                continue
            rows.append(ops.WorldRow(actor_id, s.kind, "live", s.rev, s.mailbox_depth,
                                     s.mailbox_peak, s.subscribers, s.handled, s.restarts,
                                     s.dropped, self._summary(actor_id)))
        return ops.Worlds(len(ids), args.offset, rows)

    async def _connections(self, call: Call) -> ops.Connections:
        return self._console().connections(call.args)

    async def _budgets(self, _call: Call) -> ops.BudgetReport:
        return self._console().budgets()

    async def _tokens(self, _call: Call) -> ops.Tokens:
        return ops.Tokens(self._console().tokens())

    async def _token_create(self, call: Call) -> ops.CreatedToken:
        args: ops.CreateTokenArgs = call.args
        try:
            token = self._console().create_token(args.role, args.name)
        except TokenRefused as refused:
            code = ErrorCode.ALREADY_EXISTS if "already exists" in str(refused) else \
                ErrorCode.BAD_REQUEST
            raise self.refuse(code, f"args.name: {refused}", path="args.name") from None
        try:
            await self._recorded(call, "token_created", name=args.name, role=args.role)
        except ProtocolError:
            self._undo_create(args.name)
            raise
        return ops.CreatedToken(args.name, args.role, token)

    def _undo_create(self, name: str) -> None:
        """Revoke a token whose create could not be recorded (nobody was shown it)."""
        try:
            self._console().revoke_token(name)
        except OSError:
            log.exception("the token %r was created but its create could not be recorded, "
                          "nor the token revoked again: revoke it", name)

    async def _token_revoke(self, call: Call) -> ops.Revoked:
        name = call.args.name
        console = self._console()
        if all(row.name != name for row in console.tokens()):
            return ops.Revoked(name, False, 0)
        await self._recorded(call, "token_revoked", name=name)
        try:
            revoked, ended = console.revoke_token(name)
        except OSError as failed:
            log.exception("the revoke of %r was recorded but not done", name)
            raise self.refuse(ErrorCode.UNAVAILABLE, f"the revoke of {name!r} is in the audit "
                              f"trail, but the token files could not be written ({failed}): "
                              "the token still works; revoke it again", recorded=True,
                              done=False) from None
        return ops.Revoked(name, revoked, ended)

    def _world(self, call: Call) -> str:
        world = call.args.id
        directory = self.context.directory
        if not ACTOR_ID_RE.match(world) or world.partition(":")[0] not in directory.kinds:
            raise self.refuse(ErrorCode.BAD_REQUEST, f"args.id: {world[:120]!r} is not a "
                              "world of this server", path="args.id")
        if world == self.actor_id:
            raise self.refuse(ErrorCode.BAD_REQUEST, "args.id: the console cannot stop itself",
                              path="args.id")
        return world

    async def _hold(self, call: Call) -> ops.WorldDone:
        world = self._world(call)
        await self._recorded(call, "world_stopped", id=world)
        return ops.WorldDone(world, self.context.directory.hold(world), True)

    async def _release(self, call: Call) -> ops.WorldDone:
        world = self._world(call)
        directory = self.context.directory
        if world in directory.held:
            await self._recorded(call, "world_released", id=world)
            directory.release(world)
        return ops.WorldDone(world, directory.alive(world) is not None, False)

    async def _unload(self, call: Call) -> ops.WorldDone:
        world = self._world(call)
        directory = self.context.directory
        was_live = directory.alive(world) is not None
        if was_live:
            await self._recorded(call, "world_unloaded", id=world)
            was_live = directory.evict(world)  # (it may have stopped meanwhile)
        return ops.WorldDone(world, was_live, world in directory.held)

    effects: ClassVar[Mapping[str, Effect]] = {
        "admin.overview": _overview, "admin.worlds": _worlds,
        "admin.connections": _connections, "admin.budgets": _budgets,
        "admin.tokens": _tokens, "admin.token_create": _token_create,
        "admin.token_revoke": _token_revoke, "admin.stop": _hold,
        "admin.release": _release, "admin.unload": _unload}


HOSTED = attrs.evolve(WORLD, actor=AdminActor)


def kind(console: Console | None) -> ActorKind:
    """The directory's kind of the admin world, its actors attached to `console`."""
    base = ActorKind.of(HOSTED)
    return attrs.evolve(base, factory=lambda actor_id, context: AdminActor(
        actor_id, context, HOSTED, console))
