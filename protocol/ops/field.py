"""Ops of the field ("mosaic") worlds, `field:<game id>`, and the field's world error codes.

Reads (`observe`, `rules`, `leaderboard`, `history`) need the spectator role; `start`,
`join` and the writes (`reveal`, `commit`, `retract`) the agent role, and a write must
name an agent the same caller joined. Every write carries `expected_revision`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

import attrs

from protocol.bounds import MAX_OFFSET, MAX_PAGE, bounded, items
from protocol.errors import ErrorCode, register_world_codes
from protocol.registry import OpSpec

# Bounds of the field's args (docs/field-live.md): the args classes below declare them, so
# the converter refuses what is out of them and `petridish protocol-schema` states them; the
# referee (`actors.field.live.plan_start`, `referee.join`) checks the same constants for
# callers that do not come through the protocol, and the bounds that depend on another
# argument (a canvas of at least `chunk`, at most canvas // chunk chunks).
MAX_SEED = 2**53 - 1  # a seed a JavaScript client can hold exactly
MAX_CANVAS = 1000  # the largest canvas side G
MIN_SIZE = 14  # the smallest scatter field side (a wall of 12 keeps no tile 55% of the time)
MAX_SIZE = 200  # the largest scatter field side
MIN_CHUNK, MAX_CHUNK = 20, 100  # a chunk's side in cells
MIN_CANVAS = MIN_CHUNK  # a canvas holds at least one chunk
MAX_CHUNKS = MAX_CANVAS // MIN_CHUNK  # the first block's side in chunks (at most canvas // chunk)
MAX_DEPTH = 2  # the referee's bifurcation depth is 0..MAX_DEPTH
MIN_GROW_S, MAX_GROW_S = 1.0, 86400.0  # seconds between a growing field's timed growths
MAX_NAME = 80  # characters of a join's name (1..80), and of the model, harness, user it keeps
MAX_TILES = 1_000_000  # more tile ids than any canvas holds
MAX_REVISION = 2**53 - 1
MAX_AGENT = 80  # characters of an agent id
MAX_TEXT = 256  # characters of a join's harness, model or user (kept: MAX_NAME)
MAX_BATCH = 4096  # cells in one commit or retract
MAX_INTENT = 160  # characters of a commit's intent
MAX_MACHINE = 128  # characters of a join's machine id
BOARD_PAGE = 100  # rows of the merged board's page unless `limit` says otherwise
# An observed rectangle [x, y, w, h]: a corner on the largest canvas (and on the field: the
# referee checks x, y < G) and a side of at least one cell.
RECT = (items(lo=0, hi=MAX_CANVAS - 1),) * 2 + (items(lo=1, hi=MAX_CANVAS),) * 2
FieldKind = Literal["scatter", "field"]


@register_world_codes
class FieldCode(StrEnum):
    """World codes a field answers with, beyond the protocol's own (see docs/protocol.md);
    registered, so `ProtocolError(FieldCode.DEAD, ...)` carries them."""

    GENERATING = "generating"  # the field is being generated: retry in a moment
    UNKNOWN_AGENT = "agent"  # the agent id has not joined this field (the seed's code)
    DEAD = "dead"  # the agent died of its wrong-rate; its writes are refused for the day
    ENDED = "ended"  # a growth found no room: the game is over
    BAD_TILE = "bad_tile"  # the tile id is not a tile of the field
    NOT_HIDDEN = "not_hidden"  # reveal of a tile already revealed or solved
    NOT_ON_FRONTIER = "not_on_frontier"  # reveal outside the group's frontier
    BAD_CELL = "bad_cell"  # a cell entry is not [id, 0|1] (retract: not an id)
    NO_ROOM = "no_room"  # join found no hidden tile to seat the agent on


GuessPolicy = Literal["accept", "reject"]


@attrs.frozen
class GrowPolicy:
    """How a growing field grows: every `every_s` seconds, and on its triggers."""

    every_s: float = bounded(1800.0, lo=MIN_GROW_S, hi=MAX_GROW_S)


@attrs.frozen
class StartArgs:
    """Create the field: a scatter field of `size`, or a field of chunks (`kind` field),
    growing (`grow`) on a G canvas or fixed at chunks x chunk cells."""

    seed: int = bounded(0, lo=0, hi=MAX_SEED)
    kind: FieldKind | None = None  # default: scatter with a size, field with grow
    size: int | None = bounded(None, lo=MIN_SIZE, hi=MAX_SIZE)  # scatter: size x size
    canvas: int = bounded(1000, lo=MIN_CANVAS, hi=MAX_CANVAS)  # growing: the canvas side G
    chunks: int = bounded(3, lo=1, hi=MAX_CHUNKS)  # the first chunks x chunks block
    chunk: int = bounded(40, lo=MIN_CHUNK, hi=MAX_CHUNK)  # a chunk's side in cells
    guess: GuessPolicy = "accept"
    depth: int = bounded(0, lo=0, hi=MAX_DEPTH)  # bifurcation depth of the propagation
    grow: GrowPolicy | None = None
    fog: bool | None = None  # default: on for growing fields, off otherwise


@attrs.frozen
class StartResult:
    """The field's id and state: `generating` until its manifest is stored, then `ready`."""

    game: str
    status: Literal["generating", "ready"]
    revision: int


@attrs.frozen
class JoinArgs:
    """Join with a short name, the harness and model playing, the user behind it and, if
    you have a durable one, your machine id (an agent that died today stays dead for its
    user and its machine: rejoining gives it back)."""

    name: str = bounded(length=MAX_NAME, nonempty=True)
    harness: str = bounded("", length=MAX_TEXT)
    model: str = bounded("", length=MAX_TEXT)
    user: str = bounded("", length=MAX_TEXT, user=True)  # only the owner names another
    machine_id: str = bounded("", length=MAX_MACHINE)


@attrs.frozen
class JoinResult:
    """Your agent id (carry it on every write) and the hidden tile you were seated on; a
    rejoin of a dead agent's user or machine gives that agent back (`health` dead)."""

    agent: str
    seed_tile: int
    revision: int
    health: dict[str, Any] | None = None
    note: str | None = None


@attrs.frozen
class ObserveArgs:
    """`{agent}` (your territory, its surroundings, your frontier) or `{rect: [x, y, w, h]}`
    (x, y in 0..999, w, h in 1..1000: a rectangle of the canvas)."""

    agent: str | None = bounded(None, length=MAX_AGENT)
    rect: tuple[int, int, int, int] | None = bounded(None, at=RECT)


@attrs.frozen
class ObserveResult:
    """The revision, listed tiles, known [cell, value] pairs, agents, and (with agent) more."""

    revision: int
    G: int
    fog: bool
    ended: bool
    tiles: list[dict[str, Any]]
    known: list[list[int]]
    tiles_total: int
    holes: int
    agents: list[dict[str, Any]]
    totals: dict[str, int]
    agent: str | None = None
    frontier: list[int] | None = None
    territory: list[int] | None = None
    health: dict[str, Any] | None = None
    note: str | None = None
    truncated: bool = False
    grown: int = 0  # growth rings added since the start
    field: dict[str, Any] | None = None  # the settings the field was started with


@attrs.frozen
class RevealArgs:
    """Reveal a hidden tile on your frontier: its givens become known. Without `agent`,
    the write is the implicit agent a0's (the seed's single implicit player)."""

    tile: int = bounded(lo=0, hi=MAX_TILES)
    expected_revision: int = bounded(lo=0, hi=MAX_REVISION)
    agent: str | None = bounded(None, length=MAX_AGENT)
    intent: str = bounded("", length=MAX_INTENT)


@attrs.frozen
class RevealResult:
    """The new revision, the givens revealed, tiles solved and meets it caused."""

    revision: int
    tile: int
    givens: list[list[int]]
    solved: list[dict[str, Any]]
    meets: list[dict[str, Any]]


@attrs.frozen
class CommitArgs:
    """A batch of [cell id, value] pairs with a one-line intent (<= 160 characters);
    without `agent`, the implicit agent a0's."""

    cells: list[list[int]] = bounded(length=MAX_BATCH, code=ErrorCode.TOO_LARGE)
    expected_revision: int = bounded(lo=0, hi=MAX_REVISION)
    agent: str | None = bounded(None, length=MAX_AGENT)
    intent: str = bounded("", length=MAX_INTENT)


@attrs.frozen
class CommitResult:
    """Verdicts per cell, tiles solved, meets, reward, your frontier and your health."""

    revision: int
    agent: str
    accepted: list[dict[str, Any]]
    rejected: list[dict[str, Any]]
    ignored: list[dict[str, Any]]
    solved: list[dict[str, Any]]
    meets: list[dict[str, Any]]
    reward: int
    frontier: list[int]
    health: dict[str, Any]
    note: str | None = None


@attrs.frozen
class RetractArgs:
    """Take back your own accepted cells on unsolved tiles; without `agent`, a0's."""

    cells: list[int] = bounded(length=MAX_BATCH, code=ErrorCode.TOO_LARGE)
    expected_revision: int = bounded(lo=0, hi=MAX_REVISION)
    agent: str | None = bounded(None, length=MAX_AGENT)
    intent: str = bounded("", length=MAX_INTENT)


@attrs.frozen
class RetractResult:
    """The new revision, the cells taken back and those ignored (with why)."""

    revision: int
    retracted: list[int]
    ignored: list[dict[str, Any]]


@attrs.frozen
class RulesArgs:
    """No arguments."""


@attrs.frozen
class RulesResult:
    """The rules as agents read them, and this game's settings."""

    text: str
    guess: str
    depth: int
    fog: bool
    grow: GrowPolicy | None


@attrs.frozen
class LeaderboardArgs:
    """`merged` false: this field's board (a row per user and model of its agents); true:
    the all-time board merged with it, rows `offset` .. `offset + limit - 1` of each list
    (it holds every user and model of every day)."""

    merged: bool = False
    offset: int = bounded(0, lo=0, hi=MAX_OFFSET)
    limit: int = bounded(BOARD_PAGE, lo=1, hi=MAX_PAGE)


@attrs.frozen
class LeaderboardResult:
    """Rows per user and per model (reward, forced, guess, wrong, wrong_rate, dead, days...)
    and how many rows each board has (`users_total`, `models_total`); a merged row lists at
    most 20 models or users."""

    users: list[dict[str, Any]]
    models: list[dict[str, Any]]
    days: list[str]
    users_total: int
    models_total: int


@attrs.frozen
class HistoryArgs:
    """The field as it was at `revision` (1..current)."""

    revision: int = bounded(lo=1, hi=MAX_REVISION)  # and at most the field's revision


@attrs.frozen
class FieldView:
    """A spectator's view of the field (the same value a `snapshot` push carries)."""

    view: dict[str, Any]


OPS = (
    OpSpec("field.start", StartArgs, StartResult, "agent",
           "Create this field (scatter `size`, or growing with `grow`); answers at once while "
           "it generates."),
    OpSpec("field.join", JoinArgs, JoinResult, "agent",
           "Join the field: your agent id and a hidden seed tile away from everyone."),
    OpSpec("field.observe", ObserveArgs, ObserveResult, "spectator",
           "Tiles, known cells and agents around an agent's territory or in a rectangle."),
    OpSpec("field.reveal", RevealArgs, RevealResult, "agent",
           "Reveal a hidden tile on your frontier (its givens)."),
    OpSpec("field.commit", CommitArgs, CommitResult, "agent",
           "Commit [cell, value] pairs; each is accepted (forced/guess), rejected or ignored."),
    OpSpec("field.retract", RetractArgs, RetractResult, "agent",
           "Take back your own accepted cells on unsolved tiles."),
    OpSpec("field.rules", RulesArgs, RulesResult, "spectator",
           "The rules text and this game's guess policy, depth, fog and growth."),
    OpSpec("field.leaderboard", LeaderboardArgs, LeaderboardResult, "spectator",
           "This field's board per user and model, or the all-time board merged with it."),
    OpSpec("field.history", HistoryArgs, FieldView, "spectator",
           "The spectator view of the field at an earlier revision."),
)
