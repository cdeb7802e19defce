"""`puzzle.hint`: the solver from a room's current board, within a budget of search work.

A hint is searched off the room's task, possibly in a worker process, so what it needs
travels as plain data: `hint_job` takes it from the room's play (the level's JSON under the
profile played, the state codec's key of the board), and `run_hint` rebuilds the board from
it and searches.

The budget (`budget_ms`, the client's argument) is counted in states expanded, not time:
`EXPANSIONS_PER_MS` of them per millisecond, so an answer depends on the board and the
budget alone, never on how busy the machine is. Time only bounds how long a search may hold
the server's offload worker (`HINT_CEILING_S` on the clock the caller passes).
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
# States expanded per millisecond of budget: what this server's solver expands in one CPU
# millisecond, on average over the starter pack (engine model, 2.1) and Keke's full_biy set
# (fast model, 2.0); a level's own rate runs from 0.3 to 8 (docs/puzzle.md).
EXPANSIONS_PER_MS = 2
# The wall-clock safeguard, whatever the budget: past the server's 10 s ask timeout nobody
# waits for the answer, so a search on a pathological level or a starved machine stops here.
HINT_CEILING_S = 9.0


def search_caps(budget_ms: int) -> Caps:
    """The caps of a hint's or an editor solve's search with `budget_ms` of budget."""
    return Caps(max_expanded=budget_ms * EXPANSIONS_PER_MS, max_seconds=HINT_CEILING_S,
                max_bytes=HINT_MAX_BYTES)


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
    reachable wins, or `unknown` when the budget's expansions (or `HINT_MAX_BYTES`) ran out
    first, or `HINT_CEILING_S` of `clock` passed (the reason names the cap)."""
    level = parse_level(job.level)
    board = None if job.key is None else create_codec(Context(level)).decode(job.key)
    result = solve(level, clock=clock, caps=search_caps(job.budget_ms), board=board)
    moves = result.moves
    return HintResult(status=STATUS[result.status], moves=moves,
                      next=MOVE_LETTERS[moves[0]] if moves else "", expanded=result.expanded,
                      reason=result.reason, revision=job.revision)


def hint(play: Play, budget_ms: int, clock: Callable[[], float],
         revision: int = 0) -> HintResult | Refusal:
    """`hint_job` then `run_hint`, in one go (tests, the CLI)."""
    job = hint_job(play, budget_ms, revision)
    return job if isinstance(job, Refusal) else run_hint(job, clock)
