"""The lobby's effects: it creates worlds through the directory, reads which worlds exist
from the store, keeps what worlds say of themselves, and republishes the list.

- Existence is the store's: every stream of a listed kind (a world exists once its first
  event is stored) and every live world. The stored streams are read at start and every
  SCAN seconds (sorted then, per kind: `rules.Stored`), so a world created anywhere
  (`lobby.create`, its own create op, a daily field starting itself) is listed (at once
  while it is live here; from another process of a cluster, within SCAN seconds), and
  stays listed after it is unloaded for idleness or the server restarts. `lobby.list`
  reads none of it again: a page costs its end and the live worlds, not every stored one
  (a read of the store's streams ran in its one writer, ~85 ms at 20,000 worlds).
- Summaries are the worlds' own: a world tells the lobby what it is (`Seen`: a
  field's state, agents, tiles; generation progress) when that changes. The lobby keeps
  the last one per world in the side snapshot `lobbyseen:main` (a change of state,
  agents or dead saved at once, the other figures at most every SAVE seconds), so an
  unloaded field, or one from before a restart, still shows its agents and whether it
  ended.
- Today's daily field is featured: listed first once it exists (it is declared, and
  starts when first asked for: before that, the lobby's page links it on its own).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

import attrs
import trio

from actors.lobby import rules
from actors.runtime import Call, Directory, WorldActor, refused
from actors.runtime.host import Effect
from actors.store import StoreUnavailable
from actors.world import Refusal
from protocol.convert import structure, unstructure
from protocol.errors import ProtocolError
from protocol.ops.lobby import CreateArgs, CreateResult, ListArgs, ListResult

TICK = 0.5  # seconds between checks of the live figures
SCAN = 10.0  # seconds between reads of the store's streams
SAVE = 1.0  # seconds between saves of the summaries
SEEN = "lobbyseen:main"  # the side stream whose snapshot keeps the summaries
MAX_SUMMARY = 2048  # characters of one summary's JSON (a bigger one is dropped)
FIRST_PAGE = ListArgs()  # what a subscriber sees: the first page of `lobby.list`


class _Tick:
    """Timer message: compare the live figures with the last published ones."""


class _Scan:
    """Timer message: read the store's streams again."""


class _Save:
    """Timer message: save the summaries if they changed."""


@attrs.frozen
class Seen:
    """What world `actor_id` says of itself now (its summary): a message of worlds to the
    lobby, not an op (`World.internal`: in a cluster it goes to whichever process hosts
    the lobby)."""

    wire: ClassVar[str] = "lobby.seen"

    actor_id: str
    summary: Mapping[str, Any]

    def to_wire(self) -> dict[str, Any]:
        """The message as JSON."""
        return {"actor_id": self.actor_id, "summary": dict(self.summary)}

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Seen:
        """The message of `to_wire`'s JSON."""
        summary = data["summary"]
        if not isinstance(summary, dict):
            raise TypeError("a summary is a JSON object")
        return cls(str(data["actor_id"]), summary)


def _settled(summary: Mapping[str, Any] | None) -> Any:
    """What a world is, in its summary: its state, agents and dead (not the figures that
    move with play or generation)."""
    if summary is None:
        return None
    return {k: summary.get(k) for k in ("state", "agents", "dead")}


def featured(directory: Directory) -> list[str]:
    """Today's daily field (UTC), when this server hosts fields."""
    if "field" not in directory.kinds:
        return []
    day = datetime.fromtimestamp(directory.clock() / 1000, UTC).date()
    return [f"field:day-{day.isoformat()}"]


def _within_params(error: ProtocolError) -> None:
    """A create op's refusal names its own args (`args.size`); within `lobby.create` they
    are `args.params.size`, in the path and in the message that leads with it."""
    path = error.detail.get("path")
    if isinstance(path, str) and path.startswith("args."):
        nested = "args.params." + path.removeprefix("args.")
        error.detail["path"] = nested
        if error.message.startswith(path):
            error.message = nested + error.message.removeprefix(path)
            error.args = (error.message,)


class LobbyActor(WorldActor):
    """The one lobby, `lobby:main`."""

    _last_view: ListResult | None = None

    def _kinds(self) -> list[str]:
        directory = self.context.directory
        return sorted(k for k, v in directory.kinds.items() if v.listed)

    async def _scan(self) -> None:
        store = self.context.store
        stored: dict[str, int] = {}
        for kind in self._kinds():
            stored.update(await store.streams(f"{kind}:"))
        self._stored = rules.Stored(stored)

    def _listing(self, args: ListArgs = FIRST_PAGE) -> ListResult:
        directory = self.context.directory
        listed = set(self._kinds())
        live = [rules.LiveFigures(s.actor_id, s.kind, s.rev, s.subscribers)
                for s in directory.live() if s.kind in listed]
        return rules.listing(self._stored, live, self._seen, featured(directory), args.kind,
                             args.offset, args.limit)

    def view(self) -> dict[str, Any]:
        """What subscribers see: the first page of `lobby.list`, as it answers."""
        self._last_view = self._listing()
        return unstructure(self._last_view)

    async def on_start(self) -> None:
        """Read the summaries and the stored worlds; arm the tick, scan and save timers."""
        self._stored = rules.Stored({})
        self._seen: dict[str, dict[str, Any]] = {}
        self._dirty = False
        self._saved_at = -SAVE
        snap = await self.load_side(SEEN)
        if snap is not None:
            self._seen = {k: dict(v) for k, v in snap.data.items()}
        await self._scan()
        self.every(TICK, _Tick())
        self.every(SCAN, _Scan())
        self.every(SAVE, _Save())

    async def handle(self, call: Any) -> Any:
        """A world's summary (told through the lobby's ref, from this process or another),
        else a call for the table."""
        if isinstance(call, Seen):
            await self._seen_now(call)
            return None
        return await super().handle(call)

    async def _seen_now(self, message: Seen) -> None:
        """Keep what a world says of itself."""
        old = self._seen.get(message.actor_id)
        if len(repr(message.summary)) <= MAX_SUMMARY and old != message.summary:
            self._seen[message.actor_id] = dict(message.summary)
            self._dirty = True
            # A change of what a world is (its state, its agents) is kept at once; the
            # figures that move at most every SAVE seconds.
            if (_settled(old) != _settled(message.summary)
                    or trio.current_time() - self._saved_at >= SAVE):
                await self._save()

    async def on_message(self, message: Any) -> None:
        """Ticks republish changed figures; scans re-read the store; summaries are kept."""
        if isinstance(message, Seen):
            await self._seen_now(message)
        elif isinstance(message, _Scan):
            await self._scan()
        elif isinstance(message, _Save) and self._dirty:
            await self._save()
        # The listing is built only for someone watching (it costs O(worlds) a tick; a
        # new subscriber's first snapshot builds it afresh).
        if (isinstance(message, _Tick | _Scan) and self.watched
                and self._listing() != self._last_view):
            self.publish_view()

    async def _save(self) -> None:
        self._dirty = False
        self._saved_at = trio.current_time()
        await self.save_side(SEEN, len(self._seen), self._seen)

    async def _list(self, call: Call) -> ListResult:
        return self._listing(call.args)

    async def _create(self, call: Call) -> CreateResult:
        """Decide the lobby's event, create the world with its kind's create op (its
        params checked as that op's args), then record it."""
        args: CreateArgs = call.args
        directory = self.context.directory
        creatable = {k.kind: k for k in directory.kinds.values()
                     if k.listed and k.create_op is not None}
        decided = rules.decide_create(self.state, args, self.ctx(call),
                                      {k: v.create_role for k, v in creatable.items()})
        if isinstance(decided, Refusal):
            raise refused(decided)
        kind = creatable[args.kind]
        assert kind.create_args is not None and kind.create_op is not None
        params = structure(args.params, kind.create_args, root="args.params")
        actor_id = decided[0].id
        try:
            await directory.ask(actor_id, attrs.evolve(call, op=kind.create_op, args=params))
        except ProtocolError as error:
            _within_params(error)
            raise
        try:
            rev = await self.context.store.revision(actor_id)  # (wherever it is hosted)
        except StoreUnavailable:  # it was created: answer what this process knows of it
            world = directory.alive(actor_id)
            return CreateResult(actor_id, world.rev if world is not None else 0)
        if rev:  # the world is stored: the lobby records it (and the request's receipt)
            self.fold(decided)
        # else its first events come later (a field being generated, a run setting up): a
        # record now would outlive a crash that lost the world, and refuse its name for ever
        return CreateResult(actor_id, rev)

    effects: ClassVar[Mapping[str, Effect]] = {"lobby.list": _list, "lobby.create": _create}
    effect_reads: ClassVar[frozenset[str]] = frozenset({"lobby.list"})


WORLD = attrs.evolve(rules.WORLD, actor=LobbyActor, internal=(Seen,))
