"""Ops of the lobby (`lobby:main`): list the worlds, create one."""

from __future__ import annotations

from typing import Any

import attrs

from protocol.registry import OpSpec

LOBBY_ID = "lobby:main"


@attrs.frozen
class WorldInfo:
    """One world as the lobby shows it."""

    kind: str
    id: str
    revision: int
    subscribers: int
    live: bool


@attrs.frozen
class ListArgs:
    """No arguments."""


@attrs.frozen
class ListResult:
    """Every world the lobby knows, sorted by id."""

    worlds: list[WorldInfo]


@attrs.frozen
class CreateArgs:
    """Create world `kind:name` with kind-specific `params`."""

    kind: str
    name: str
    params: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class CreateResult:
    """The new world's id and revision."""

    id: str
    revision: int


OPS = (
    OpSpec("lobby.list", ListArgs, ListResult, "spectator",
           "List every world: kind, id, revision, subscribers, whether it is live.",
           default_to=LOBBY_ID),
    OpSpec("lobby.create", CreateArgs, CreateResult, "agent",
           "Create a world of `kind` named `name`; the kind decides the role it needs.",
           default_to=LOBBY_ID),
)
