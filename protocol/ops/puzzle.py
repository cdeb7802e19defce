"""Ops of the puzzle's three world kinds, and the puzzle's world error codes (docs/puzzle.md).

* Rooms, `puzzle:<room id>`: one player's play of a pack. `puzzle.create` (agent) makes it
  from a bundled pack's level, an installed pack or a data-only share link; the caller who
  created it is its player, the only one who may write (`move`, `undo`, `reset`, `next`,
  `select`, `hint`); anyone may read (`view`, `history`, `leaderboard`). `puzzle.hint` runs
  the solver off the room's task.
* The board, `puzzleboard:main`: the leaderboards over every room (wins the rooms tell it,
  each verified by replay). Reads only.
* Packs, `puzzlepack:<pack id>`: a pack of one's own (the editor saves levels into it) or an
  installed one (created from a share link). `check` and `solve` validate and solve a level
  being edited.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

import attrs

from protocol.bounds import bounded, items
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
    SEARCHING = "searching"  # a hint or solve of this room or pack is still being searched


MAX_REVISION = 2**53 - 1  # exact in a JavaScript client
MAX_LINK_CHARS = 65_536  # = actors.puzzle.share.MAX_LINK_CHARS
MAX_PACK_NAME = 100  # = actors.puzzle.pack.MAX_NAME_CHARS
MAX_LEVEL_ID = 64
MAX_MOVES = 2_000  # moves of one level's play (the undo depth too)
# A search's budget stays under the server's 10 s ask timeout (a later answer is dropped).
MIN_HINT_MS, MAX_HINT_MS = 100, 8_000
MAX_LEVEL_KEY = MAX_LEVEL_ID + 17  # leaderboard.level_key: "<id>@<16 hex digits>"
MAX_BOARD_ROWS = 100
MAX_WORLD_NAME = 80  # the name after `kind:` (protocol/envelope.py ACTOR_ID_RE)
MAX_LEVEL_FIELDS = 16  # a level JSON object's keys; the 64 KiB frame bounds the rest
_REVISION = {"lo": 0, "hi": MAX_REVISION}


@attrs.frozen
class CreateArgs:
    """A room playing `level` (an id; "" is the first) of the bundled pack `pack`, of the
    installed pack `puzzlepack:<installed>`, or of the pack in the share `link` (the first of
    link, installed, pack that is given wins), under `profile` ("" keeps the level's)."""

    pack: str = bounded("starter", length=MAX_PACK_NAME)
    level: str = bounded("", length=MAX_LEVEL_ID)
    link: str = bounded("", length=MAX_LINK_CHARS)
    installed: str = bounded("", length=MAX_WORLD_NAME)
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
class SelectArgs:
    """Go to the pack's level `level` (an id), at the room's revision `expected_revision`."""

    level: str = bounded(length=MAX_LEVEL_ID)
    expected_revision: int | None = bounded(None, **_REVISION)


@attrs.frozen
class ViewArgs:
    """No arguments."""


@attrs.frozen
class HintArgs:
    """Ask the solver, from the current board, with a budget in milliseconds of a typical
    search (counted in states expanded, so the answer does not depend on the server's load:
    docs/puzzle.md)."""

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
    same as a text grid for agents, the rules in force and the ids of the YOU objects."""

    width: int
    height: int
    objects: list[dict[str, Any]]
    grid: str
    rules: list[str]
    you: list[str]


@attrs.frozen
class LinkResult:
    """Data-only share links (`pd1.`): of the level being played (a one-level pack) and of
    the room's whole pack."""

    level: str
    pack: str


@attrs.frozen
class LevelEntry:
    """One level of a pack: its id and title."""

    id: str
    title: str


@attrs.frozen
class RoomView:
    """The room: its level (index in the pack, id, title, hint, leaderboard key), the board,
    the moves made (`udlrs` letters), won/lost, the mechanics' state, the player, the
    revision, the pack's levels and which of them the player solved."""

    revision: int
    player: str
    pack: str
    profile: str
    level: int
    levels: int
    level_id: str
    title: str
    hint: str
    key: str
    board: Board
    moves: str
    won: bool
    lost: bool
    mechanics: dict[str, dict[str, Any]]
    solved: list[str]
    pack_levels: list[LevelEntry]


@attrs.frozen
class TurnResult:
    """A write's outcome: the room after it, and what the turn did (the engine's turn record:
    moves, automata, transforms, destroyed, mechanics, rules_changed; empty for others)."""

    room: RoomView
    turn: dict[str, Any]


@attrs.frozen
class HintResult:
    """`solved` with the moves from the board at `revision` (`next` is the first),
    `unsolvable` (nothing reachable wins), or `unknown` (a cap ended the search first: the
    budget's expansions, the search memory or the server's time ceiling, as `reason` says);
    `expanded` states searched."""

    status: Literal["solved", "unsolvable", "unknown"]
    moves: str
    next: str
    expanded: int
    reason: str
    revision: int


@attrs.frozen
class Best:
    """One user's fewest-moves win of a level."""

    user: str
    moves: int


@attrs.frozen
class Solved:
    """How many levels one user solved."""

    user: str
    levels: int


@attrs.frozen
class LeaderboardResult:
    """The board over every room (`puzzleboard:main`) for this room's level: its fewest moves
    by user, and per user the levels of this room's pack solved (best first, at most
    `MAX_BOARD_ROWS` each; only wins whose moves replay to a win count)."""

    level_id: str
    key: str
    fewest: list[Best]
    solved: list[Solved]


# ------------------------------------------------------------------ puzzleboard:main


@attrs.frozen
class BoardLevelArgs:
    """One level's board by its key (`RoomView.key`), its best `limit` rows."""

    key: str = bounded(length=MAX_LEVEL_KEY)
    limit: int = bounded(20, lo=1, hi=MAX_BOARD_ROWS)


@attrs.frozen
class BoardLevel:
    """A level's fewest moves by user, best first (empty before anyone won it)."""

    key: str
    level_id: str
    title: str
    pack: str
    fewest: list[Best]


@attrs.frozen
class BoardUsersArgs:
    """Levels solved per user, counting only the levels `keys` ([]: every level)."""

    keys: list[str] = bounded(factory=list, length=256, each=items(length=MAX_LEVEL_KEY))
    limit: int = bounded(20, lo=1, hi=MAX_BOARD_ROWS)


@attrs.frozen
class BoardUsers:
    """Users by levels solved, most first (ties by name), and how many levels were counted."""

    levels: int
    solved: list[Solved]


# ------------------------------------------------------------------ puzzlepack:<pack id>


@attrs.frozen
class PackCreateArgs:
    """A pack of your own named `name`, empty; or the pack of a share `link`, installed
    (named `name`, or the link's own name when "")."""

    name: str = bounded("", length=MAX_PACK_NAME)
    profile: Literal["classic", "keke"] = bounded("classic", length=7)
    link: str = bounded("", length=MAX_LINK_CHARS)


@attrs.frozen
class SaveArgs:
    """Save `level` (level JSON, docs/puzzle.md "Level format") into the pack: it replaces
    the level with its id, or is added at the end."""

    level: dict[str, Any] = bounded(length=MAX_LEVEL_FIELDS)
    expected_revision: int | None = bounded(None, **_REVISION)


@attrs.frozen
class RemoveArgs:
    """Take the level `level` (an id) out of the pack."""

    level: str = bounded(length=MAX_LEVEL_ID)
    expected_revision: int | None = bounded(None, **_REVISION)


@attrs.frozen
class PackLevelArgs:
    """One level of the pack, by id."""

    level: str = bounded(length=MAX_LEVEL_ID)


@attrs.frozen
class CheckArgs:
    """A level to validate (level JSON)."""

    level: dict[str, Any] = bounded(length=MAX_LEVEL_FIELDS)


@attrs.frozen
class SolveArgs:
    """A level to solve (level JSON) within `budget_ms`, counted as a hint's."""

    level: dict[str, Any] = bounded(length=MAX_LEVEL_FIELDS)
    budget_ms: int = bounded(5_000, lo=MIN_HINT_MS, hi=MAX_HINT_MS)


@attrs.frozen
class PackLevelInfo:
    """A level of a pack at a glance."""

    id: str
    title: str
    width: int
    height: int
    things: int
    solution: int  # moves of its recorded solution, 0 when it has none


@attrs.frozen
class PackView:
    """A pack: its owner, name, profile, levels and share link ("" while it is empty)."""

    revision: int
    owner: str
    name: str
    profile: str
    levels: list[PackLevelInfo]
    link: str


@attrs.frozen
class PackLevel:
    """A level's JSON as the pack holds it, and the share link of that one level."""

    level: dict[str, Any]
    link: str


@attrs.frozen
class Problem:
    """One diagnostic: where in the level (`objects[3].noun`) and what is wrong."""

    path: str
    message: str


@attrs.frozen
class CheckResult:
    """Whether the level is valid for a room, every problem with its path, and when valid
    the rules its board starts with."""

    ok: bool
    diagnostics: list[Problem]
    rules: list[str]


@attrs.frozen
class SolveResult:
    """The solver's verdict on a level from its start (moves replayed in the engine when
    `solved`); `unknown` when a cap ended the search first, as a hint's (`reason`)."""

    status: Literal["solved", "unsolvable", "unknown"]
    moves: str
    expanded: int
    seconds: float
    reason: str


OPS = (
    OpSpec("puzzle.create", CreateArgs, RoomView, "agent",
           "Create this room from a bundled pack's level, an installed pack or a share link; "
           "you are its player."),
    OpSpec("puzzle.move", MoveArgs, TurnResult, "agent",
           "Play one turn (up, down, left, right or wait) at `expected_revision`."),
    OpSpec("puzzle.undo", StepArgs, TurnResult, "agent", "Undo the last turn or reset."),
    OpSpec("puzzle.reset", StepArgs, TurnResult, "agent",
           "Back to the level's start (undoable)."),
    OpSpec("puzzle.next", StepArgs, TurnResult, "agent",
           "Go on to the pack's next level, once this one is won."),
    OpSpec("puzzle.select", SelectArgs, TurnResult, "agent",
           "Go to any level of the pack (level select)."),
    OpSpec("puzzle.view", ViewArgs, RoomView, "spectator",
           "The room: board (objects and text grid), rules, moves, won/lost, mechanics."),
    OpSpec("puzzle.hint", HintArgs, HintResult, "agent",
           "Ask the solver for the moves from here, within a budget of search work."),
    OpSpec("puzzle.history", HistoryArgs, RoomView, "spectator",
           "The current level as it was after its first `move` moves."),
    OpSpec("puzzle.link", ViewArgs, LinkResult, "spectator",
           "Share links of the level being played and of the room's pack."),
    OpSpec("puzzle.leaderboard", LeaderboardArgs, LeaderboardResult, "spectator",
           "A level's fewest moves by user, and levels of the pack solved per user, over "
           "every room."),
)

BOARD_OPS = (
    OpSpec("puzzleboard.level", BoardLevelArgs, BoardLevel, "spectator",
           "One level's fewest moves by user over every room.", "puzzleboard:main"),
    OpSpec("puzzleboard.users", BoardUsersArgs, BoardUsers, "spectator",
           "Levels solved per user over every room.", "puzzleboard:main"),
)

PACK_OPS = (
    OpSpec("puzzlepack.create", PackCreateArgs, PackView, "agent",
           "Create a pack of your own, or install one from a share link; you own it."),
    OpSpec("puzzlepack.save", SaveArgs, PackView, "agent",
           "Save a level into your pack (validated; it replaces the level with its id)."),
    OpSpec("puzzlepack.remove", RemoveArgs, PackView, "agent",
           "Take a level out of your pack."),
    OpSpec("puzzlepack.view", ViewArgs, PackView, "spectator",
           "The pack: owner, name, levels and its share link."),
    OpSpec("puzzlepack.level", PackLevelArgs, PackLevel, "spectator",
           "One level's JSON and its share link."),
    OpSpec("puzzlepack.check", CheckArgs, CheckResult, "spectator",
           "Validate a level: the engine's diagnostics, each with its path in the level."),
    OpSpec("puzzlepack.solve", SolveArgs, SolveResult, "agent",
           "Solve a level from its start within a budget (progress in the pack's pushes)."),
)
