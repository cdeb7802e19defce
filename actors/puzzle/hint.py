"""`puzzle.hint`: the solver from a room's current board, within a time budget.

A hint is searched off the room's task, possibly in a worker process, so what it needs
travels as plain data: `hint_job` takes it from the room's play (the level's JSON under the
profile played, the state codec's key of the board), and `run_hint` rebuilds the board from
it and searches. Time is a parameter: the caller passes the clock the budget is counted on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from actors.world import Refusal
from protocol.ops.puzzle import HintResult, PuzzleCode

from .board import Context
from .codec import create_codec
from .level import parse_level
from .room import Play
from .solve import BLOCKED, SOLVED, UNSOLVABLE, Caps, solve
from .turn import refusal
from .words import MOVE_LETTERS

STATUS = {SOLVED: "solved", UNSOLVABLE: "unsolvable", BLOCKED: "unknown"}
HINT_MAX_BYTES = 128 * 2**20  # the search's estimated memory: a hint is one room's request


@attrs.frozen
class HintJob:
    """One hint search as plain data: the level's JSON (its profile the one played), the
    codec key of the board to search from (None: the level's start, where the `keke` fast
    path applies), the budget, and the room's revision the board is at."""

    level: dict[str, Any]
    key: bytes | None
    budget_ms: int
    revision: int


def hint_job(play: Play, budget_ms: int, revision: int) -> HintJob | Refusal:
    """The search for a hint from `play`'s board; a won level is refused."""
    if play.won:
        return refusal(PuzzleCode.GAME_OVER)
    level = attrs.evolve(play.level, profile=play.ctx.profile.name).to_json()
    key = None if play.at_start() else play.codec.encode(play.board)
    return HintJob(level, key, budget_ms, revision)


def run_hint(job: HintJob, clock: Callable[[], float]) -> HintResult:
    """The moves that win from the job's board (`solved`), `unsolvable` when nothing
    reachable wins, or `unknown` when `budget_ms` of `clock` (or `HINT_MAX_BYTES`) ran out
    first."""
    level = parse_level(job.level)
    board = None if job.key is None else create_codec(Context(level)).decode(job.key)
    result = solve(level, clock=clock, caps=Caps(max_seconds=job.budget_ms / 1000,
                                                 max_bytes=HINT_MAX_BYTES), board=board)
    moves = result.moves
    return HintResult(status=STATUS[result.status], moves=moves,
                      next=MOVE_LETTERS[moves[0]] if moves else "", expanded=result.expanded,
                      reason=result.reason, revision=job.revision)


def hint(play: Play, budget_ms: int, clock: Callable[[], float],
         revision: int = 0) -> HintResult | Refusal:
    """`hint_job` then `run_hint`, in one go (tests, the CLI)."""
    job = hint_job(play, budget_ms, revision)
    return job if isinstance(job, Refusal) else run_hint(job, clock)
