"""Ops of the lobby (`lobby:main`): list the worlds, create one."""

from __future__ import annotations

from typing import Any

import attrs

from protocol.bounds import MAX_OFFSET, MAX_PAGE, bounded
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


PAGE = 100  # worlds in a page of the listing unless `limit` says otherwise


@attrs.frozen
class ListArgs:
    """`kind`: only worlds of this kind (default every kind); the worlds `offset` ..
    `offset + limit - 1` of the listing."""

    kind: str | None = bounded(None, length=32)
    offset: int = bounded(0, lo=0, hi=MAX_OFFSET)
    limit: int = bounded(PAGE, lo=1, hi=MAX_PAGE)


@attrs.frozen
class ListResult:
    """A page of the worlds the lobby knows (today's daily field first, then by id), from
    the `offset`th, of `total`."""

    worlds: list[WorldInfo]
    total: int
    offset: int


@attrs.frozen
class CreateArgs:
    """Create world `kind:name` with kind-specific `params`."""

    kind: str = bounded(length=32, nonempty=True)
    name: str = bounded(length=80, nonempty=True)
    params: dict[str, Any] = bounded(factory=dict, length=32)  # checked as the create op's args


@attrs.frozen
class CreateResult:
    """The new world's id and revision."""

    id: str
    revision: int


OPS = (
    OpSpec("lobby.list", ListArgs, ListResult, "spectator",
           "List the worlds that exist, a page at a time (today's daily field first once it "
           "started, then by id): kind, id, revision, subscribers, whether it is loaded, and "
           "its summary; paged by `offset` and `limit`.",
           default_to=LOBBY_ID),
    OpSpec("lobby.create", CreateArgs, CreateResult, "agent",
           "Create a world of `kind` named `name`; the kind decides the role it needs.",
           default_to=LOBBY_ID),
)
