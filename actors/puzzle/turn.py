"""The turn: one action applied to a settled `Board`, walking the profile's plan.

Classic plan: beforeMovement, players, rules, automata, afterMovement, rules, afterTransforms,
beforeContacts, contacts, afterContacts, victory, settled. (Keke's differs, and differs again for
a level with mechanics; see profiles.py.)
Mechanic hooks run at the lifecycle phases in mechanic-id order on a private working copy; the
new mechanic values are committed only at `settled`, and nothing is committed at all when the
turn is rejected (a `Refusal`: bad action, nothing can move, no change, or a complexity cap), so
a rejected turn leaves the caller's board untouched. When a direction moves no controllable entity (every
YOU blocked), no mechanic phase runs after `beforeMovement` (whose only effect, blocking cells,
is what blocked them) and nothing of the mechanics commits; the rest of the turn (MOVE objects)
is played, and a turn that then changes nothing is rejected as `no_change`. This is the only transition path: `game.step` and the
solver both call `advance` (the solver with `record=False`, which skips building event data).
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from actors.world import Refusal
from protocol.ops.puzzle import PuzzleCode
from protocol.text import folding_stored

from .board import Board, Context
from .contacts import contacts, has_you, victory
from .diagnostics import Diagnostic, LevelError
from .layer import IN_LAYER, OFF_NOUN, OFF_PHYS, UNREAD, drop_gone, mark_read, reset
from .movement import move_layered, move_stacked
from .ruleset import FLOAT, MOVE, YOU, RuleSet
from .words import (
    DIRECTIONS,
    FACING_CODE,
    NOUNS,
    REVERSE,
    TEXT_BASE,
    WAIT,
    kind_name,
    text_kind,
)


class ComplexityBlocked(Exception):
    """A turn exceeded a complexity cap (`board.Limits`)."""


@attrs.frozen
class Outcome:
    """What `advance` returns: the new board (the old one when rejected, with the `refusal`)
    and, when recording, the turn record."""

    board: Board
    refusal: Refusal | None
    won: bool
    lost: bool
    record: dict[str, Any] | None = None

    @property
    def accepted(self) -> bool:
        """Whether the turn was taken."""
        return self.refusal is None


class Work:
    """The mutable working copy of one turn; also the `TurnView` mechanic hooks act through."""

    def __init__(self, ctx: Context, board: Board, record: bool) -> None:
        self.ctx = ctx
        self.ids = ctx.ids
        self.objs = list(map(list, board.objects))
        self.mech = list(board.mechanics)
        self.rules: RuleSet = board.rules or ctx.rules(board.objects)
        self.blocked: set[tuple[int, int]] = set()
        self.moved: set[int] = set()
        self.moved_text: set[int] = set()  # text moved or removed since the rules were read
        self.relocated = 0  # moves made so far this turn
        self.ghost_gone = False  # movement overwrote the map entry of an object off both lists
        # Keke's object layer as a cell -> object map, kept across the turn's movement steps;
        # None means "rebuild it from the board flags" (after a destruction).
        self.layer: dict[tuple[int, int], list[int]] | None = None
        # A stored turn or start is played again as its day accepted it: a cap raised since
        # (contact pairs, rules passes and transforms count since session 19) refuses none.
        self.budget = math.inf if folding_stored() else ctx.limits.work
        self.record = record
        self.destroyed: list[dict[str, Any]] = []
        self.reported: set[int] = set()  # ids already in `destroyed`
        self.transforms: dict[int, list[int]] = {}  # id code -> [kind before, kind now]
        self.events: list[dict[str, Any]] = []
        # (id code, from x, from y, to x, to y, facing) per move or turn, when recording
        self.trail: list[tuple[int, int, int, int, int, int]] = []

    # ------------------------------------------------ the TurnView interface of mechanic hooks
    def position(self, idx: int) -> tuple[int, int] | None:
        """Where object `idx` is now, or None once destroyed."""
        for o in self.objs:
            if o[0] == idx:
                return o[2], o[3]
        return None

    def occupants(self, x: int, y: int) -> list[list[int]]:
        """The objects on cell (x, y), in board order."""
        return [o for o in self.objs if o[2] == x and o[3] == y]

    def floats(self, kind: int) -> bool:
        """True when objects of `kind` are FLOAT under the current rules."""
        return bool(self.rules.masks[kind] & FLOAT)

    def block(self, x: int, y: int) -> None:
        """Make cell (x, y) impassable for the rest of this turn's movement."""
        self.blocked.add((x, y))

    def destroy(self, obj: list[int], cause: str) -> None:
        """Remove `obj` from the board."""
        self.destroy_all([(obj, cause)])

    def destroy_all(self, dead: list[tuple[list[int], str]]) -> None:
        """Remove each object of `dead` from the board, with its cause, in one pass over it."""
        if not dead:
            return
        gone = {id(o) for o, _ in dead}
        self.objs = [o for o in self.objs if id(o) not in gone]
        self.layer = None
        for obj, cause in dead:
            if obj[1] >= TEXT_BASE:
                self.moved_text.add(obj[0])
            self.note_destroyed(obj, cause)

    def note_destroyed(self, obj: list[int], cause: str) -> None:
        """Report `obj` in this turn's `destroyed` (once)."""
        if self.record and obj[0] not in self.reported:
            self.reported.add(obj[0])
            self.destroyed.append({"id": self.ids[obj[0]], "noun": kind_name(obj[1]),
                                   "at": [obj[2], obj[3]], "cause": cause})

    def report(self, event: dict[str, Any]) -> None:
        """Add a mechanic transition record to this turn's events."""
        self.events.append(event)

    # ------------------------------------------------ helpers of the steps
    def spend(self, units: int = 1) -> None:
        """Count `units` of work (movement, contact pairs, rules passes, transforms) against
        the complexity cap."""
        self.budget -= units
        if self.budget < 0:
            raise ComplexityBlocked(f"takes more than the engine's {self.ctx.limits.work} "
                                    "units of work")

    def relocate(self, obj: list[int], x: int, y: int, facing: int) -> None:
        """Move `obj` to (x, y) facing `facing`."""
        self.relocated += 1
        if self.record:
            self.trail.append((obj[0], obj[2], obj[3], x, y, facing))
        obj[2], obj[3], obj[4] = x, y, facing
        if obj[1] >= TEXT_BASE:
            self.moved_text.add(obj[0])

    def turn_round(self, obj: list[int]) -> None:
        """A blocked MOVE object turns to face the other way."""
        obj[4] = REVERSE[obj[4]]
        if self.record:
            self.trail.append((obj[0], obj[2], obj[3], obj[2], obj[3], obj[4]))

    def reread(self) -> None:
        """Re-read the rules from the text now on the board."""
        self.rules = self.ctx.rules(self.objs)
        if len(self.rules.sentences) > self.ctx.limits.sentences:
            raise ComplexityBlocked(f"reads {len(self.rules.sentences)} rule sentences; the "
                                    f"engine plays at most {self.ctx.limits.sentences}")


def _transform_kind(kind: int, target: int) -> int | None:
    """The kind an object of `kind` becomes under `X IS target` (None: not possible)."""
    if target == len(NOUNS):  # X IS TEXT
        return None if kind >= TEXT_BASE else text_kind(NOUNS[kind])
    return target


def transform(work: Work) -> bool:
    """Apply the transforms in force once; True when any object changed. Each scan of the
    board counts against the turn's work."""
    rules = work.rules
    if not rules.transforms:
        return False
    changed: list[tuple[list[int], int]] = []
    if work.ctx.profile.transforms_in_rule_order:
        # Keke's changeSprite: each object on the noun's list is replaced by a new one at the
        # end of the board, facing right, taking its map entry; one spliced off the phys list
        # already makes a new one that is off it too (the splice takes the new last element).
        for src, dst in rules.transforms:
            work.spend(len(work.objs))
            hit = [(o, new) for o in work.objs if _noun(o[1]) == src and not o[5] & OFF_NOUN
                   and (new := _transform_kind(o[1], dst)) is not None]
            if hit:
                gone = {id(o) for o, _ in hit}
                work.objs = [o for o in work.objs if id(o) not in gone] + [
                    [o[0], new, o[2], o[3], 0, o[5] & (IN_LAYER | OFF_PHYS)] for o, new in hit]
                changed += hit
    else:
        work.spend(len(work.objs))
        first: dict[int, int] = {}  # the first transform of each noun is the one that applies
        for src, dst in rules.transforms:
            first.setdefault(src, dst)
        for o in work.objs:
            dst = first.get(_noun(o[1]), -1)
            if dst >= 0 and (new := _transform_kind(o[1], dst)) is not None:
                changed.append((list(o), new))
                o[1] = new
    if work.record:  # one entry per object: its kind before the first, after the last
        for o, new in changed:
            work.transforms.setdefault(o[0], [o[1], new])[1] = new
    return bool(changed)


def _noun(kind: int) -> int:
    return len(NOUNS) if kind >= TEXT_BASE else kind


def _made_text(changed: bool, work: Work, before: int) -> bool:
    return changed and sum(o[1] >= TEXT_BASE for o in work.objs) != before


def rules_step(work: Work) -> None:
    """Re-read the rules and transform: every rules step (classic), or once per word that
    moved (Keke's interpretRules, each reading its object map and ending in a `layer.reset`)."""
    if work.ctx.profile.reparse_every_turn:
        if work.ctx.layered:  # a hybrid profile (layered map, classic reading): read it all
            for o in work.objs:
                o[5] &= ~UNREAD
            work.reread()
            if transform(work):
                work.reread()
            reset(work)
            return
        # Rules are a function of the text: re-read only when some text moved or went.
        if work.moved_text:
            work.moved_text.clear()
            work.reread()
        text = sum(o[1] >= TEXT_BASE for o in work.objs) if work.rules.transforms else 0
        if transform(work) and _made_text(True, work, text):
            work.reread()
        return
    passes = len(work.moved_text)
    work.moved_text.clear()
    for i in range(passes):
        work.spend(len(work.objs))  # marking, reading and re-placing look at every thing
        before, text = work.rules, sum(o[1] >= TEXT_BASE for o in work.objs)
        mark_read(work)
        work.reread()
        changed = transform(work)
        if _made_text(changed, work, text):  # X IS TEXT / TEXT IS X: not in Keke
            mark_read(work)
            work.reread()
        reset(work)
        # From the second reading on, one that changes nothing leaves the map as the one before
        # did, so every later one reads the same. (The first reads the map as movement left it.)
        if i and not changed and work.rules.sentences == before.sentences:
            break


def settle_initial(ctx: Context, objects: tuple[Any, ...]) -> Board:
    """The board a level starts from: authored objects with one rules pass applied, mechanics
    initialized from that board. Raises `LevelError` when that pass is over a complexity cap
    (`board.Limits`): no turn could be played from it."""
    work = Work(ctx, Board(tuple((*o, 0) for o in objects)), record=False)
    try:
        work.reread()
        if transform(work):
            work.reread()
    except ComplexityBlocked as err:
        raise LevelError([Diagnostic("text", f"the start {err}")]) from None
    if ctx.layered:
        reset(work)
    values = tuple(host.initial(settings, work) for _, host, settings in ctx.mechanics)
    return Board(tuple(tuple(o) for o in work.objs), values, work.rules)


def parse_action(action: str) -> int | None:
    """Facing code of a direction, None for a wait; raises ValueError on anything else."""
    if action == WAIT:
        return None
    if action in FACING_CODE:
        return FACING_CODE[action]
    raise ValueError(action)


def advance(ctx: Context, board: Board, action: str, record: bool = True) -> Outcome:
    """Play one action ("up", "down", "left", "right" or "wait") from a settled board."""
    try:
        direction = parse_action(action)
    except ValueError:
        return _reject(board, PuzzleCode.BAD_ACTION)
    work = Work(ctx, board, record)
    masks = work.rules.masks
    if direction is not None and not (work.rules.present & (YOU | MOVE) and any(
            masks[o[1]] & (YOU | MOVE) and not o[5] & OFF_NOUN for o in work.objs)):
        return _reject(board, PuzzleCode.NOTHING_CAN_MOVE)
    rules_before = work.rules
    move = move_layered if ctx.profile.collision == "layered" else move_stacked
    players_trail = 0
    phases: list[str] = []
    won = False
    frozen = False  # a direction that moved no controllable entity: no mechanic runs on
    try:
        for step in ctx.profile.plan_for(bool(ctx.mechanics)):
            if step == "players":
                if direction is not None:
                    move(work, direction)
                    # The seed: on an input where nothing controllable can move, no mutating
                    # mechanic phase commits state or emits a transition. (A player step moves
                    # something only when some YOU moves.) The rest of the turn is played.
                    if not work.relocated and ctx.mechanics:
                        frozen = True
                        work.mech, work.events = list(board.mechanics), []
                players_trail = len(work.trail)
            elif step == "automata":
                move(work, None)
            elif step == "rules":
                rules_step(work)
            elif step == "contacts":
                contacts(work)
            elif step == "victory":
                if work.moved_text:
                    # Text destroyed after the last reading (a contact, a mechanic): the settled
                    # rules are what the remaining text spells, as a restore of the board reads.
                    work.reread()
                won = victory(work)
            elif not frozen:
                _run_phase(work, step)
                phases.append(step)
    except ComplexityBlocked:
        return _reject(board, PuzzleCode.COMPLEXITY_BLOCKED)
    if work.ghost_gone:
        drop_gone(work)  # a ghost map entry that movement overwrote
    new = Board(tuple(map(tuple, work.objs)), tuple(work.mech), work.rules)
    if new == board:
        return _reject(board, PuzzleCode.NO_CHANGE)
    lost = not won and not has_you(work)
    rec = None
    if record:
        rec = _record(work, action, players_trail, rules_before, phases, won, lost)
    return Outcome(new, None, won, lost, rec)


def _run_phase(work: Work, phase: str) -> None:
    for i, (mid, host, settings) in enumerate(work.ctx.mechanics):
        if phase in host.phases:
            work.mech[i] = host.run(phase, mid, settings, work.mech[i], work)


def _paths(trail: list[tuple[int, int, int, int, int, int]]
           ) -> dict[int, list[int]]:
    """Per object, in first-move order: [from x, from y, to x, to y, facing]."""
    paths: dict[int, list[int]] = {}
    for idx, fx, fy, tx, ty, facing in trail:
        path = paths.get(idx)
        if path is None:
            paths[idx] = [fx, fy, tx, ty, facing]
        else:
            path[2:] = [tx, ty, facing]
    return paths


def _record(work: Work, action: str, players_trail: int, rules_before: RuleSet,
            phases: list[str], won: bool, lost: bool) -> dict[str, Any]:
    ids = work.ids
    moves = [{"id": ids[i], "from": p[:2], "to": p[2:4]}
             for i, p in _paths(work.trail[:players_trail]).items() if p[:2] != p[2:4]]
    automata = [{"id": ids[i], "from": p[:2], "to": p[2:4], "facing": DIRECTIONS[p[4]]}
                for i, p in _paths(work.trail[players_trail:]).items()]
    result: dict[str, Any] = {
        "accepted": True, "action": action, "moves": moves,
        "rules": list(work.rules.sentences),
        "rules_changed": work.rules.sentences != rules_before.sentences,
        "transforms": [{"id": ids[i], "from": kind_name(a), "to": kind_name(b)}
                       for i, (a, b) in work.transforms.items()],
        "destroyed": work.destroyed, "automata": automata,
        "won": won, "lost": lost,
    }
    if work.ctx.trace_phases:
        result["phases"] = phases
    if work.events:
        result["mechanics"] = work.events
    return result


def _reject(board: Board, code: PuzzleCode) -> Outcome:
    return Outcome(board, refusal(code), False, False)


def refusal(code: PuzzleCode) -> Refusal:
    """The engine's refusal for `code`, with its fixed message."""
    return Refusal(code, MESSAGES[code])


MESSAGES: dict[PuzzleCode, str] = {
    PuzzleCode.BAD_ACTION: "The action must be one of up, down, left, right or wait.",
    PuzzleCode.NOTHING_CAN_MOVE: "Nothing on the board is YOU or MOVE, so a direction does nothing.",
    PuzzleCode.NO_CHANGE: "The turn would change nothing, so it was not taken.",
    PuzzleCode.COMPLEXITY_BLOCKED:
        "The turn exceeded the engine's complexity cap and was not taken.",
    PuzzleCode.GAME_OVER: "The level is already won; undo or reset to play on.",
    PuzzleCode.NOTHING_TO_UNDO: "There is nothing to undo.",
}
