"""The puzzle room's MCP tools and prompt (hosted by server/mcp.py, listed on `WORLD`).

`puzzle_create`, `puzzle_view`, `puzzle_move`, `puzzle_undo`, `puzzle_reset`, `puzzle_next`
and `puzzle_hint` (and the prompt `puzzle_play`): each tool is the room's websocket op underneath, sent as the caller, so the
same engine, bounds, refusals and durability apply. Every result's text is one line of what
happened, then the board as a text grid (`render.py`: a thing's first four letters, lower case
objects and upper case words, `*` on a YOU) and the rules in force; the room view goes once as
`structuredContent.room`.

Identity: a caller with a token is its token's name. An anonymous caller (an open server) is
nobody between calls, so `puzzle_create` hands it the room as `NAME~KEY`: carrying that room
id is what makes later moves its own (nobody else can play its room). Listings show `NAME`.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from actors.world import (
    KEYED_NAME,
    WORLD_NAME,
    Prompt,
    Refusal,
    Tool,
    ToolCall,
    ToolResult,
    with_keywords,
)
from protocol.bounds import bounded
from protocol.envelope import ACTOR_ID_RE
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops import puzzle as ops

from .hint import EXPANSIONS_PER_MS

KEY_SEP = "~"  # an anonymous caller's room id: NAME~KEY
MAX_ROOM = ops.MAX_WORLD_NAME + 1 + 24  # NAME, "~", the key
MAX_TOOL_MOVES = 200  # letters one puzzle_move plays
LETTERS = {"u": "up", "d": "down", "l": "left", "r": "right", "s": "wait"}
NO_ROOM = ("room", "there is no such room; puzzle_create makes one")
ROOM_ID = ("The room id puzzle_create gave you (NAME, or NAME~KEY without a token: carry it "
           "whole).")


@attrs.frozen
class CreateToolArgs:
    """Create a room (a new name when `room` is empty)."""

    room: str = bounded("", length=ops.MAX_WORLD_NAME)
    pack: str = bounded("starter", length=ops.MAX_PACK_NAME)
    level: str = bounded("", length=ops.MAX_LEVEL_ID)
    link: str = bounded("", length=ops.MAX_LINK_CHARS)
    installed: str = bounded("", length=ops.MAX_WORLD_NAME)
    profile: Literal["", "classic", "keke"] = bounded("", length=7)


@attrs.frozen
class RoomToolArgs:
    """A room."""

    room: str = bounded(length=MAX_ROOM)


@attrs.frozen
class MoveToolArgs:
    """Moves to play in a room, one turn each."""

    room: str = bounded(length=MAX_ROOM)
    moves: str = bounded(length=MAX_TOOL_MOVES)
    expected_revision: int | None = bounded(None, lo=0, hi=ops.MAX_REVISION)


@attrs.frozen
class HintToolArgs:
    """Ask the solver in a room."""

    room: str = bounded(length=MAX_ROOM)
    budget_ms: int = bounded(4_000, lo=ops.MIN_HINT_MS, hi=ops.MAX_HINT_MS)


def _actor(name: str, then: str = "") -> str | Refusal:
    """The actor id of the room named `name`, or why `name` names none."""
    actor = f"puzzle:{name}"
    if not ACTOR_ID_RE.match(actor):
        return Refusal(ErrorCode.BAD_REQUEST, "room: 1 to 80 characters of a-z, A-Z, 0-9, "
                       f"'_', '.' and '-'{then}", {"path": "room"})
    return actor


def _room(call: ToolCall, room: str) -> tuple[str, str | None] | Refusal:
    """(the room's actor id, the caller name to speak as): a keyed id speaks as its key."""
    name, sep, key = room.partition(KEY_SEP)
    # NAME~ with no key names no room, as a bad name does (the run tools' rule too)
    actor = _actor("" if sep and not key else name, " (then ~KEY if puzzle_create gave one)")
    if isinstance(actor, Refusal):
        return actor
    return actor, call.keyed(key) if key else None


def board_text(view: Any) -> str:
    """The room's board for a model: the grid, then the rules in force."""
    rules = "; ".join(view.board.rules) or "none"
    return f"{view.board.grid}\nRules: {rules}."


def _result(line: str, view: Any, **more: Any) -> ToolResult:
    state = "Won!" if view.won else "Lost: nothing is YOU." if view.lost else ""
    head = (f"{line} Level {view.level + 1}/{view.levels} {view.level_id!r} ({view.title}), "
            f"revision {view.revision}, {len(view.moves)} moves. {state}").rstrip()
    return ToolResult(f"{head}\n{board_text(view)}", {"room": attrs.asdict(view), **more})


async def create(call: ToolCall, a: CreateToolArgs) -> ToolResult | Refusal:
    """Create a room and return its id (keyed for an anonymous caller) and its board."""
    name = a.room or f"r{call.fresh_id().replace('-', '')[:16]}"
    key, caller = call.key() if call.anonymous else (None, None)
    room = name if key is None else f"{name}{KEY_SEP}{key}"
    actor = _actor(name)  # a name of its own: "~" would read back as NAME~KEY
    if isinstance(actor, Refusal):
        return actor
    view = await call.ask(actor, "puzzle.create", ops.CreateArgs(
        pack=a.pack, level=a.level, link=a.link, installed=a.installed, profile=a.profile),
        caller=caller)
    return _result(f"Created room {room}: carry this room id on every call. The level's hint: "
                   f"{view.hint or 'none'}", view, room_id=room)


async def view(call: ToolCall, a: RoomToolArgs) -> ToolResult | Refusal:
    """The room's board."""
    to = _room(call, a.room)
    if isinstance(to, Refusal):
        return to
    return _result("The room:", await call.ask(to[0], "puzzle.view", ops.ViewArgs()))


async def move(call: ToolCall, a: MoveToolArgs) -> ToolResult | Refusal:
    """Play the moves one turn at a time; stop at the first refused."""
    to = _room(call, a.room)
    if isinstance(to, Refusal):
        return to
    actor, caller = to
    if not a.moves or set(a.moves) - set(LETTERS):
        return Refusal(ErrorCode.BAD_REQUEST, "moves: one or more of u d l r s (s: wait)",
                       {"path": "moves"})
    rev = a.expected_revision
    if rev is None:
        rev = (await call.ask(actor, "puzzle.view", ops.ViewArgs())).revision
    played, refusal, reply = 0, None, None
    for letter in a.moves:
        try:
            reply = await call.ask(actor, "puzzle.move", ops.MoveArgs(LETTERS[letter], rev),
                                   caller=caller)
        except ProtocolError as error:
            if not played:
                raise
            refusal = f" Move {played + 1} ({LETTERS[letter]}) was refused: {error.code.value}: " \
                      f"{error.message}"
            break
        played += 1
        rev = reply.room.revision
    assert reply is not None
    line = f"Played {played} of {len(a.moves)} moves.{refusal or ''}"
    return _result(line, reply.room, played=played)


async def _step(call: ToolCall, a: RoomToolArgs, op: str, done: str) -> ToolResult | Refusal:
    to = _room(call, a.room)
    if isinstance(to, Refusal):
        return to
    reply = await call.ask(to[0], op, ops.StepArgs(), caller=to[1])
    return _result(done, reply.room)


async def undo(call: ToolCall, a: RoomToolArgs) -> ToolResult | Refusal:
    """Undo the last turn or reset."""
    return await _step(call, a, "puzzle.undo", "Undone.")


async def reset(call: ToolCall, a: RoomToolArgs) -> ToolResult | Refusal:
    """Back to the level's start."""
    return await _step(call, a, "puzzle.reset", "Back at the level's start.")


async def next_level(call: ToolCall, a: RoomToolArgs) -> ToolResult | Refusal:
    """On to the pack's next level."""
    return await _step(call, a, "puzzle.next", "On to the next level.")


async def hint(call: ToolCall, a: HintToolArgs) -> ToolResult | Refusal:
    """The solver's moves from the current board."""
    to = _room(call, a.room)
    if isinstance(to, Refusal):
        return to
    h = await call.ask(to[0], "puzzle.hint", ops.HintArgs(a.budget_ms), caller=to[1])
    if h.status == "solved":
        text = (f"From revision {h.revision}, {len(h.moves)} moves win: {h.moves} (u d l r, s "
                f"waits); the next is {h.next}. Pass them to puzzle_move.")
    elif h.status == "unsolvable":
        text = "Nothing reachable from this board wins: undo or reset."
    else:
        text = f"The solver found nothing within its budget ({h.expanded} states: {h.reason})."
    return ToolResult(text, {"hint": attrs.asdict(h)})


_ROOM = {"room": ROOM_ID}
TOOLS = (
    Tool("puzzle_create", "Create a puzzle room",
         "Create a puzzle room playing a level of a pack: the bundled 'starter' pack by "
         "default (level: a level id, '' the first), an installed pack, or a pd1. share link. "
         "Rule puzzle: words on the board spell rules (BABA IS YOU, FLAG IS WIN); push words "
         "to change them; a YOU object on a WIN object wins. Returns the room id to carry on "
         "every call and the board as a text grid.",
         CreateToolArgs, create, role="agent",
         keywords={"room": {"pattern": rf"^({WORLD_NAME})?$"}},
         describe={"room": "A name for the room (default: a new one).",
                   "pack": "A bundled pack (starter).", "level": "A level id ('' the first).",
                   "link": "A pd1. share link (wins over pack).",
                   "installed": "An installed pack's id.", "profile": "classic or keke."}),
    Tool("puzzle_view", "View a puzzle room",
         "The room's board as a text grid (5 columns per cell: a thing's first four letters, "
         "lower case objects, upper case words, * marks a YOU object, + a cell holding more, "
         "listed under the grid), the rules in force, the level, moves made and won/lost.",
         RoomToolArgs, view, describe=_ROOM, unknown=NO_ROOM),
    Tool("puzzle_move", "Move in a puzzle room",
         "Play moves, one turn each: a string over u (up), d (down), l (left), r (right) and "
         "s (wait), e.g. 'rrdd'. Stops at the first refused move (blocked, won, ...) and says "
         "so. Returns the board after them.",
         MoveToolArgs, move, role="agent",
         describe={**_ROOM, "moves": "Moves over u d l r s, at most 200.",
                   "expected_revision": "The revision you saw (default: the room's now)."},
         unknown=NO_ROOM),
    Tool("puzzle_undo", "Undo in a puzzle room", "Undo the last turn or reset.",
         RoomToolArgs, undo, role="agent", describe=_ROOM, unknown=NO_ROOM),
    Tool("puzzle_reset", "Reset a puzzle room", "Back to the level's start (undoable).",
         RoomToolArgs, reset, role="agent", describe=_ROOM, unknown=NO_ROOM),
    Tool("puzzle_next", "Next puzzle level", "Go on to the pack's next level once this one "
         "is won.", RoomToolArgs, next_level, role="agent", describe=_ROOM, unknown=NO_ROOM),
    Tool("puzzle_hint", "Ask the puzzle solver",
         "Ask the solver for the moves that win from the current board, within a budget "
         "(milliseconds, 100 to 8000); pass them to puzzle_move.",
         HintToolArgs, hint, role="agent",
         describe={**_ROOM, "budget_ms": "The search's budget in ms of a typical search "
                   f"({EXPANSIONS_PER_MS} states expanded per ms)."}, unknown=NO_ROOM),
)
TOOLS = with_keywords(TOOLS, {"room": {"pattern": KEYED_NAME},
                              "moves": {"pattern": f"^[{''.join(LETTERS)}]+$"}})


async def _prompt(_call: ToolCall) -> str:
    return (
        "You are playing rule puzzles on Petri Dish Games. Text blocks on the board spell "
        "rules such as BABA IS YOU or FLAG IS WIN; pushing the words rewrites the rules. "
        "You move every YOU object; a YOU object that stands on a WIN object wins the level. "
        "Call puzzle_create (pack 'starter') and keep the room id it gives you. Read the text "
        "grid: lower case words are objects, upper case ones are text blocks, * marks what "
        "you control. Play with puzzle_move (a string over u d l r, s to wait); undo with "
        "puzzle_undo, start over with puzzle_reset, ask puzzle_hint when stuck, and go on "
        "with puzzle_next once a level is won.")


PROMPTS = (Prompt("puzzle_play", "Play the puzzle rooms",
                  "How to play the rule puzzles with the puzzle_* tools.", _prompt),)
