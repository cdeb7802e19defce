"""The lobby's effects: it creates worlds through the directory and republishes the live
figures (both need the directory, which no table can reach)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import attrs

from actors.lobby import rules
from actors.runtime import Call, WorldActor, refused
from actors.runtime.host import Effect
from actors.world import Refusal
from protocol.convert import structure, unstructure
from protocol.ops.lobby import CreateArgs, CreateResult, ListResult, WorldInfo

TICK = 0.5  # seconds between checks of the live figures


class _Tick:
    """Timer message: compare the live figures with the last published ones."""


class LobbyActor(WorldActor):
    """The one lobby, `lobby:main`."""

    _last_view: list[WorldInfo] | None = None

    def _listing(self) -> list[WorldInfo]:
        directory = self.context.directory
        live = [rules.LiveFigures(s.actor_id, s.kind, s.rev, s.subscribers)
                for s in directory.live()
                if s.kind in directory.kinds and directory.kinds[s.kind].listed]
        return rules.listing(self.state, live)

    def view(self) -> dict[str, Any]:
        """What subscribers see: the same list as `lobby.list`."""
        self._last_view = self._listing()
        return {"worlds": unstructure(self._last_view)}

    async def on_start(self) -> None:
        """Check the live figures every TICK seconds."""
        self.every(TICK, _Tick())

    async def on_message(self, message: Any) -> None:
        """On a tick, publish a snapshot if any live figure changed."""
        if isinstance(message, _Tick) and self._listing() != self._last_view:
            self.publish_view()

    async def _list(self, _call: Call) -> ListResult:
        return ListResult(self._listing())

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
        await directory.ask(actor_id, attrs.evolve(call, op=kind.create_op, args=params))
        self.fold(decided)
        world = directory.alive(actor_id)
        return CreateResult(actor_id, world.rev if world is not None else 0)

    effects: ClassVar[Mapping[str, Effect]] = {"lobby.list": _list, "lobby.create": _create}


WORLD = attrs.evolve(rules.WORLD, actor=LobbyActor)
