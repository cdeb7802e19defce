"""A hint's (and an editor solve's) budget is search work, not time: the same board and budget
give the same answer however slowly the search runs, a budget too small for the solution says
`unknown` at exactly its expansions, and only the wall-clock ceiling, a server safeguard,
stops a search on time. A loaded machine is a clock that advances fast: `run_hint` and
`run_solve` are called with it directly, on the real engine."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

import pytest

from actors.puzzle.catalog import bundled
from actors.puzzle.hint import EXPANSIONS_PER_MS, hint
from actors.puzzle.puzzlepack.solving import Progress, SolveJob, run_solve
from actors.puzzle.room import Play
from tests.puzzle.boards import crowd_level, link_of
from tests.puzzle.room_table import Room


def loaded(seconds_per_reading: float) -> Callable[[], float]:
    """A clock for a machine so busy that each reading (one per 64 expansions) comes
    `seconds_per_reading` after the last."""
    return itertools.count(0, seconds_per_reading).__next__


def play_of(level: str, profile: str = "", moves: str = "") -> Play:
    room = Room(level=level, profile=profile)
    if moves:
        room.move(moves)
    assert room.state.play is not None
    return room.state.play


# Each busy clock is some ten times slower than this machine, yet keeps the search under the
# ceiling: brittle's later board takes some 650 expansions, spell's start under keke some 100.
@pytest.mark.parametrize(("level", "profile", "moves", "step"), [
    ("brittle", "", "rr", 0.25),  # a later board: the engine path
    ("spell", "keke", "", 1.0),  # the start under keke: the fast path
], ids=["engine", "fast"])
def test_the_same_hint_on_a_loaded_machine_gives_the_same_answer(level: str, profile: str,
                                                                 moves: str,
                                                                 step: float) -> None:
    play = play_of(level, profile, moves)
    normal = hint(play, 2_000, time.monotonic)
    busy = hint(play, 2_000, loaded(step))
    assert normal.status == "solved" and normal.moves
    assert busy == normal


def test_a_budget_smaller_than_the_search_says_unknown_at_its_expansions() -> None:
    play = play_of("spell")  # its solution takes some 900 expansions from the start
    answers = [hint(play, 100, clock) for clock in (lambda: 0.0, time.monotonic, loaded(0.25))]
    budget = 100 * EXPANSIONS_PER_MS
    assert answers[0].status == "unknown" and answers[0].expanded == budget
    assert answers[0].reason == f"node cap {budget} reached"
    assert answers[1:] == answers[:1] * 2
    assert hint(play, 1_000, lambda: 0.0).status == "solved", "the budget's 2000 suffice"


def test_the_wall_clock_ceiling_still_stops_a_search() -> None:
    crowd = Room(link=link_of(crowd_level())).state.play
    assert crowd is not None
    at_once = hint(crowd, 8_000, loaded(10.0))  # past the ceiling at the first reading
    assert (at_once.status, at_once.expanded, at_once.reason) == (
        "unknown", 0, "time cap 9 s reached")
    starved = hint(crowd, 8_000, loaded(1.0))  # 64 expansions a second: 9 s come first
    assert starved.status == "unknown" and starved.reason == "time cap 9 s reached"
    assert 0 < starved.expanded < 8_000 * EXPANSIONS_PER_MS


def test_an_editor_solve_on_a_loaded_machine_gives_the_same_answer() -> None:
    level = bundled("starter").level("brittle").to_json()
    results, cells = [], []
    for clock in (time.monotonic, loaded(0.25)):
        progress = Progress()
        try:
            results.append(run_solve(SolveJob(level, 2_000, progress.name), clock))
            cells.append(progress.read()[0])
        finally:
            progress.close()
    normal, busy = results
    assert normal.status == "solved" and normal.moves
    assert (busy.status, busy.moves, busy.expanded, busy.reason) == (
        normal.status, normal.moves, normal.expanded, normal.reason)
    assert cells == [normal.expanded] * 2, "the progress cell ends at the expansions made"
