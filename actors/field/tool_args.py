"""The arguments of the field's MCP tools (actors/field/tools.py): attrs classes with
bounds, from which the MCP host builds each tool's JSON Schema and checks its arguments
with the protocol's strict converter."""

from __future__ import annotations

from typing import Literal

import attrs

from protocol.bounds import bounded, items
from protocol.errors import ErrorCode
from protocol.ops import field as ops

MAX_GAME = 80


@attrs.frozen
class Grow:
    """How often the field grows a ring, in minutes (it also grows on its triggers)."""

    every_minutes: float = bounded(lo=1.0, hi=1440.0)


@attrs.frozen
class StartMosaicArgs:
    """Start a new mosaic game."""

    kind: Literal["field", "scatter"] = "field"
    # field.start's bound (the seed's G up to 1000 over the smallest chunk); what does not
    # fit the canvas with the chosen `chunk` the referee refuses, naming `chunks`
    chunks: int = bounded(3, lo=1, hi=ops.MAX_CHUNKS)
    chunk: int = bounded(40, lo=ops.MIN_CHUNK, hi=ops.MAX_CHUNK)
    size: int | None = bounded(None, lo=ops.MIN_SIZE, hi=ops.MAX_SIZE)
    grow: Grow | None = None
    seed: int | None = bounded(None, lo=0, hi=ops.MAX_SEED)
    guess: Literal["accept", "reject"] = "accept"
    depth: int = bounded(0, lo=0, hi=ops.MAX_DEPTH)
    fog: bool | None = None


@attrs.frozen
class JoinToolArgs:
    """Join a game."""

    game_id: str = bounded(length=MAX_GAME)
    name: str = bounded(length=ops.MAX_NAME, nonempty=True)
    machine_id: str | None = bounded(None, length=ops.MAX_MACHINE)
    model: str | None = bounded(None, length=ops.MAX_NAME)


@attrs.frozen
class ObserveToolArgs:
    """Observe a game."""

    game_id: str = bounded(length=MAX_GAME)
    agent: str | None = bounded(None, length=ops.MAX_AGENT, nonempty=True)
    rect: tuple[int, int, int, int] | None = bounded(None, at=ops.RECT)


@attrs.frozen
class RevealToolArgs:
    """Reveal a tile."""

    game_id: str = bounded(length=MAX_GAME)
    tile: int = bounded(lo=0, hi=ops.MAX_TILES)
    expected_revision: int = bounded(lo=0, hi=ops.MAX_REVISION)
    agent: str | None = bounded(None, length=ops.MAX_AGENT, nonempty=True)
    intent: str = bounded("", length=ops.MAX_INTENT)


@attrs.frozen
class CommitToolArgs:
    """Commit cells."""

    game_id: str = bounded(length=MAX_GAME)
    agent: str = bounded(length=ops.MAX_AGENT, nonempty=True)
    cells: list[tuple[int, int]] = bounded(length=ops.MAX_BATCH, code=ErrorCode.TOO_LARGE)
    expected_revision: int = bounded(lo=0, hi=ops.MAX_REVISION)
    intent: str = bounded("", length=ops.MAX_INTENT)


@attrs.frozen
class RetractToolArgs:
    """Retract cells."""

    game_id: str = bounded(length=MAX_GAME)
    cells: list[int] = bounded(length=ops.MAX_BATCH, code=ErrorCode.TOO_LARGE,
                               each=items(lo=0, hi=ops.MAX_CANVAS ** 2))
    expected_revision: int = bounded(lo=0, hi=ops.MAX_REVISION)
    agent: str | None = bounded(None, length=ops.MAX_AGENT, nonempty=True)
    intent: str = bounded("", length=ops.MAX_INTENT)


@attrs.frozen
class ListGamesArgs:
    """No arguments."""


@attrs.frozen
class RulesToolArgs:
    """The rules, and a game's settings when `game_id` is given."""

    game_id: str | None = bounded(None, length=MAX_GAME)
