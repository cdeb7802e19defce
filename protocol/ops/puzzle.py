"""Ops of the puzzle rooms, `puzzle:<room id>`, and the puzzle's world error codes.

A room is one player's play of a pack (docs/puzzle.md, "The room"): `puzzle.create` (agent)
makes it from a bundled pack's level or a data-only share link; the caller who created it is
its player, the only one who may write (`move`, `undo`, `reset`, `next`); anyone may read
(`view`, `history`, `leaderboard`). `puzzle.hint` runs the solver, off the room's task.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

import attrs

from protocol.bounds import bounded
from protocol.errors import register_world_codes
from protocol.registry import OpSpec


@register_world_codes
class PuzzleCode(StrEnum):
    """World codes of the puzzle (the engine's rejections keep their seed names)."""

    BAD_ACTION = "bad_action"  # not one of up, down, left, right, wait
    NOTHING_CAN_MOVE = "nothing_can_move"  # a direction, but nothing is YOU or MOVE
    NO_CHANGE = "no_change"  # the turn would change nothing (e.g. walking into a wall)
    COMPLEXITY_BLOCKED = "complexity_blocked"  # the turn exceeded the engine's caps
    GAME_OVER = "game_over"  # the level is won: undo, reset or go to the next level
    NOTHING_TO_UNDO = "nothing_to_undo"  # undo with nothing done since the level started
    NOT_WON = "not_won"  # puzzle.next before the level is won
    LAST_LEVEL = "last_level"  # puzzle.next on the pack's last level
    MOVE_LIMIT = "move_limit"  # the level's moves reached MAX_MOVES: undo or reset


MAX_REVISION = 2**53 - 1  # exact in a JavaScript client
MAX_LINK_CHARS = 65_536  # = actors.puzzle.share.MAX_LINK_CHARS
MAX_PACK_NAME = 100  # = actors.puzzle.pack.MAX_NAME_CHARS
MAX_LEVEL_ID = 64
MAX_MOVES = 2_000  # moves of one level's play (the undo depth too)
MIN_HINT_MS, MAX_HINT_MS = 100, 10_000
_REVISION = {"lo": 0, "hi": MAX_REVISION}


@attrs.frozen
class CreateArgs:
    """A room playing `level` (an id; "" is the first) of the bundled pack `pack`, or of the
    pack in the share `link` (which wins when given), under `profile` ("" keeps the level's)."""

    pack: str = bounded("starter", length=MAX_PACK_NAME)
    level: str = bounded("", length=MAX_LEVEL_ID)
    link: str = bounded("", length=MAX_LINK_CHARS)
    profile: Literal["", "classic", "keke"] = bounded("", length=7)


@attrs.frozen
class MoveArgs:
    """One turn: a direction or `wait`, at the room's revision `expected_revision`."""

    dir: Literal["up", "down", "left", "right", "wait"] = bounded(length=5)
    expected_revision: int = bounded(**_REVISION)


@attrs.frozen
class StepArgs:
    """`undo`, `reset`, `next`: optionally at the room's revision `expected_revision`."""

    expected_revision: int | None = bounded(None, **_REVISION)


@attrs.frozen
class ViewArgs:
    """No arguments."""


@attrs.frozen
class HintArgs:
    """Ask the solver, from the current board, with a time budget in milliseconds."""

    budget_ms: int = bounded(2_000, lo=MIN_HINT_MS, hi=MAX_HINT_MS)


@attrs.frozen
class HistoryArgs:
    """The current level after its first `move` moves (0: the start)."""

    move: int = bounded(lo=0, hi=MAX_MOVES)


@attrs.frozen
class LeaderboardArgs:
    """A level's board (its id in the room's pack; "" is the current level)."""

    level: str = bounded("", length=MAX_LEVEL_ID)


@attrs.frozen
class Board:
    """A board: things in board order (`{"id", "noun"|"word", "x", "y", "facing", ...}`), the
    same as a text grid for agents, and the rules in force."""

    width: int
    height: int
    objects: list[dict[str, Any]]
    grid: str
    rules: list[str]


@attrs.frozen
class RoomView:
    """The room: its level (index in the pack, id, title, hint), the board, the moves made
    (`udlrs` letters), won/lost, the mechanics' state, the player and the revision."""

    revision: int
    player: str
    pack: str
    profile: str
    level: int
    levels: int
    level_id: str
    title: str
    hint: str
    board: Board
    moves: str
    won: bool
    lost: bool
    mechanics: dict[str, dict[str, Any]]
    solved: list[str]


@attrs.frozen
class TurnResult:
    """A write's outcome: the room after it, and what the turn did (the engine's turn record:
    moves, automata, transforms, destroyed, mechanics, rules_changed; empty for others)."""

    room: RoomView
    turn: dict[str, Any]


@attrs.frozen
class HintResult:
    """`solved` with the moves from here (`next` is the first), `unsolvable` (nothing reachable
    wins), or `unknown` (the budget ran out first); `expanded` states searched."""

    status: Literal["solved", "unsolvable", "unknown"]
    moves: str
    next: str
    expanded: int
    reason: str


@attrs.frozen
class Best:
    """One user's fewest-moves win of a level."""

    user: str
    moves: int


@attrs.frozen
class LeaderboardResult:
    """Per level: fewest moves by user (only wins whose moves replay to a win count), and per
    user the number of levels solved."""

    level_id: str
    fewest: list[Best]
    solved: dict[str, int]


OPS = (
    OpSpec("puzzle.create", CreateArgs, RoomView, "agent",
           "Create this room from a bundled pack's level or a share link; you are its player."),
    OpSpec("puzzle.move", MoveArgs, TurnResult, "agent",
           "Play one turn (up, down, left, right or wait) at `expected_revision`."),
    OpSpec("puzzle.undo", StepArgs, TurnResult, "agent", "Undo the last turn or reset."),
    OpSpec("puzzle.reset", StepArgs, TurnResult, "agent",
           "Back to the level's start (undoable)."),
    OpSpec("puzzle.next", StepArgs, TurnResult, "agent",
           "Go on to the pack's next level, once this one is won."),
    OpSpec("puzzle.view", ViewArgs, RoomView, "spectator",
           "The room: board (objects and text grid), rules, moves, won/lost, mechanics."),
    OpSpec("puzzle.hint", HintArgs, HintResult, "agent",
           "Ask the solver for the moves from here, within a time budget."),
    OpSpec("puzzle.history", HistoryArgs, RoomView, "spectator",
           "The current level as it was after its first `move` moves."),
    OpSpec("puzzle.leaderboard", LeaderboardArgs, LeaderboardResult, "spectator",
           "A level's fewest moves by user, and levels solved per user."),
)
