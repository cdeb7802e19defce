"""Ops of the lobby (`lobby:main`): list the worlds, create one."""

from __future__ import annotations

from typing import Any

import attrs

from protocol.bounds import bounded
from protocol.registry import OpSpec

LOBBY_ID = "lobby:main"


@attrs.frozen
class WorldInfo:
    """One world as the lobby shows it: `live` whether it is loaded now (an idle world is
    unloaded and listed all the same), `summary` what the world last said of itself
    (e.g. a field's `{"state": "live", "agents": 3, ...}`), None when it never did."""

    kind: str
    id: str
    revision: int
    subscribers: int
    live: bool
    summary: dict[str, Any] | None = None


@attrs.frozen
class ListArgs:
    """`kind`: only worlds of this kind (default every kind)."""

    kind: str | None = bounded(None, length=32)


@attrs.frozen
class ListResult:
    """Every world the lobby knows, sorted by id."""

    worlds: list[WorldInfo]


@attrs.frozen
class CreateArgs:
    """Create world `kind:name` with kind-specific `params`."""

    kind: str = bounded(length=32)
    name: str = bounded(length=80)
    params: dict[str, Any] = bounded(factory=dict, length=32)  # checked as the create op's args


@attrs.frozen
class CreateResult:
    """The new world's id and revision."""

    id: str
    revision: int


OPS = (
    OpSpec("lobby.list", ListArgs, ListResult, "spectator",
           "List every world that exists (today's daily field first once it started, then by "
           "id): kind, id, revision, subscribers, whether it is loaded, and its summary.",
           default_to=LOBBY_ID),
    OpSpec("lobby.create", CreateArgs, CreateResult, "agent",
           "Create a world of `kind` named `name`; the kind decides the role it needs.",
           default_to=LOBBY_ID),
)
