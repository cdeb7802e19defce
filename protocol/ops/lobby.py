"""Ops of the lobby (`lobby:main`): list the worlds, create one."""

from __future__ import annotations

from typing import Any

import attrs

from protocol.bounds import bounded
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
           "List every world: kind, id, revision, subscribers, whether it is live.",
           default_to=LOBBY_ID),
    OpSpec("lobby.create", CreateArgs, CreateResult, "agent",
           "Create a world of `kind` named `name`; the kind decides the role it needs.",
           default_to=LOBBY_ID),
)
