"""The lobby's actor: creates worlds through the directory and republishes live figures."""

from __future__ import annotations

from typing import Any

from actors.lobby import catalog
from actors.runtime import Actor, Call
from protocol.convert import unstructure
from protocol.ops.lobby import CreateResult, ListResult, WorldInfo

KIND = "lobby"
TICK = 0.5  # seconds between checks of the live figures


class _Tick:
    """Timer message: compare the live figures with the last published ones."""


class LobbyActor(Actor):
    """The one lobby, `lobby:main`."""

    kind = KIND

    def reset(self) -> None:
        """An empty catalog."""
        self.catalog = catalog.Catalog()
        self._last_view: list[WorldInfo] | None = None

    def apply(self, event: dict[str, Any]) -> None:
        """Fold one `world_created` event."""
        self.catalog = catalog.apply(self.catalog, event)

    def snapshot(self) -> dict[str, str]:
        """The catalog: id -> kind."""
        return dict(self.catalog.worlds)

    def restore(self, data: dict[str, str]) -> None:
        """The catalog from `snapshot`."""
        self.catalog = catalog.Catalog(dict(data))

    def _listing(self) -> list[WorldInfo]:
        directory = self.context.directory
        live = [catalog.LiveFigures(s.actor_id, s.kind, s.rev, s.subscribers)
                for s in directory.live()
                if s.kind in directory.kinds and directory.kinds[s.kind].listed]
        return catalog.listing(self.catalog, live)

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

    async def handle(self, call: Call) -> ListResult | CreateResult:
        """`lobby.list` and `lobby.create`."""
        if call.op == "lobby.list":
            return ListResult(self._listing())
        directory = self.context.directory
        create_roles = {k.kind: k.create_role for k in directory.kinds.values() if k.listed}
        actor_id, events = catalog.decide_create(self.catalog, call.args, call.role,
                                                 call.caller, create_roles)
        world = await directory.create(actor_id, call.args.params)
        await self.commit(events)
        return CreateResult(actor_id, world.rev)
