"""`puzzle.hint`: the solver from a room's current board, within a time budget.

This is the pure function the room's effect runs off the actor's task (the solver takes
seconds; the host's `offload`, `actors/puzzle/actor.py`, comes with the live room). Time is a
parameter: the caller passes the clock the budget is counted on.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from actors.world import Refusal
from protocol.ops.puzzle import HintResult, PuzzleCode

from .room import Play
from .solve import BLOCKED, SOLVED, UNSOLVABLE, Caps, solve
from .turn import refusal
from .words import MOVE_LETTERS

_STATUS = {SOLVED: "solved", UNSOLVABLE: "unsolvable", BLOCKED: "unknown"}
HINT_MAX_BYTES = 128 * 2**20  # the search's estimated memory: a hint is one room's request


def hint(play: Play, budget_ms: int, clock: Callable[[], float]) -> HintResult | Refusal:
    """The moves that win from `play`'s board (`solved`), `unsolvable` when nothing reachable
    wins, or `unknown` when `budget_ms` of `clock` (or `HINT_MAX_BYTES`) ran out first; a won
    level is refused."""
    if play.won:
        return refusal(PuzzleCode.GAME_OVER)
    level = attrs.evolve(play.level, profile=play.ctx.profile.name)
    board = None if play.at_start() else play.board  # the start may use the fast path
    result = solve(level, clock=clock, caps=Caps(max_seconds=budget_ms / 1000,
                                                      max_bytes=HINT_MAX_BYTES), board=board)
    moves = result.moves
    return HintResult(status=_STATUS[result.status], moves=moves,
                      next=MOVE_LETTERS[moves[0]] if moves else "", expanded=result.expanded,
                      reason=result.reason)
