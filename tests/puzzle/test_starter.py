"""The starter pack (`actors/puzzle/packs/starter.json`): every level replays its recorded
solution to a win, the solver solves every level within its 10 s budget, and together the
levels use every property, operator, TEXT, transforms and every host mechanic."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from actors.puzzle.catalog import bundled
from actors.puzzle.game import create_game, replay
from actors.puzzle.layer import UNREAD
from actors.puzzle.level import Level
from actors.puzzle.mechanics.host import HOST_TYPES
from actors.puzzle.ruleset import PROP_BIT, board_lines, read_sentences
from actors.puzzle.solve import SOLVED, Caps, solve
from actors.puzzle.words import MOVE_LETTERS, OPERATORS, PROPERTIES, TEXT_BASE, TEXT_NOUN

STARTER = bundled("starter")
LEVELS = {lv.id: lv for lv in STARTER.levels}
BUDGET = Caps(max_seconds=10)  # on the CPU clock: never a wall-time assertion


def test_the_pack_has_twenty_levels_or_more_each_with_a_title_a_hint_and_a_solution() -> None:
    assert len(STARTER.levels) >= 20
    for lv in STARTER.levels:
        assert lv.name and lv.hint and lv.solution, lv.id
        assert lv.profile == "classic" and "\n" not in lv.hint


@pytest.mark.parametrize("level_id", LEVELS)
def test_the_recorded_solution_wins_on_its_last_move(level_id: str) -> None:
    lv = LEVELS[level_id]
    assert lv.solution is not None
    assert replay(lv, lv.solution) == {"won": True, "won_at": len(lv.solution), "lost": False,
                                       "steps": len(lv.solution)}


@pytest.mark.parametrize("level_id", LEVELS)
def test_the_solver_solves_it_within_its_budget(level_id: str) -> None:
    lv = LEVELS[level_id]
    result = solve(lv, clock=time.process_time, caps=BUDGET)
    assert result.status == SOLVED, (level_id, result.reason)
    assert replay(lv, result.moves)["won_at"] == len(result.moves)


def features(lv: Level) -> set[str]:
    """What the recorded solution uses: each property some object (not text: text is always
    PUSH) has at some point, `is`,
    `and` (a sentence read from an AND chain), `not` and `text` (in a sentence in force),
    `transform` (some object changed kind) and each mechanic type that reported a transition."""
    assert lv.solution is not None
    game = create_game(lv)
    used: set[str] = set()

    def look() -> None:
        board, ctx = game.board, game.ctx
        masks = ctx.rules(board.objects).masks
        for o in board.objects:
            if o[1] < TEXT_BASE:
                used.update(p for p in PROPERTIES if masks[o[1]] & PROP_BIT[p])
        text = [(o[1], o[2], o[3], o[5] & UNREAD) if ctx.layered else (o[1], o[2], o[3])
                for o in board.objects if o[1] >= TEXT_BASE]
        for subjects, predicates in read_sentences(board_lines(text, ctx.layered)):
            used.add("is")
            if len(subjects) > 1 or len(predicates) > 1:
                used.add("and")
            if any(neg for neg, _ in subjects + predicates):
                used.add("not")
            if any(word == TEXT_NOUN for _, word in subjects + predicates):
                used.add(TEXT_NOUN)

    look()
    for letter in lv.solution:
        record = game.step(MOVE_LETTERS[letter])
        assert isinstance(record, dict)
        if record["transforms"]:
            used.add("transform")
        used.update(m.type for m in lv.mechanics for e in record.get("mechanics", [])
                    if e["mechanic"] == m.id)
        look()
    return used


def test_together_the_levels_use_every_word_property_and_mechanic() -> None:
    """The lists come from the engine's own tables: a new word or mechanic type fails this
    until some level uses it."""
    wanted = {*PROPERTIES, *OPERATORS, TEXT_NOUN, "transform", *HOST_TYPES}
    by_level = {lv.id: features(lv) for lv in STARTER.levels}
    counts = Counter(f for used in by_level.values() for f in used & wanted)
    print(dict(sorted(counts.items())))
    assert sorted(wanted - set(counts)) == []


@pytest.mark.deep
@pytest.mark.parametrize("level_id", LEVELS)
def test_the_recorded_solution_is_a_shortest_one(level_id: str) -> None:
    """Breadth-first search (up to 60 s of CPU each) finds nothing shorter than the record."""
    lv = LEVELS[level_id]
    assert lv.solution is not None
    result = solve(lv, clock=time.process_time, strategy="bfs", caps=Caps(max_seconds=60))
    assert result.status == SOLVED and len(result.moves) == len(lv.solution)
