"""Contacts under the keke profile: every pair on a cell, counted against the turn's work."""

from __future__ import annotations

from actors.puzzle.board import Limits
from actors.puzzle.game import Game, create_game
from tests.puzzle.boards import lines_run, make_level, refused


def crowd(pairs: int, limits: Limits | None = None) -> Game:
    """`pairs` babas (YOU) and as many skulls (DEFEAT) on one cell, under keke."""
    extra = [{"id": f"{noun}{i}", "noun": noun, "x": 2, "y": 2}
             for noun in ("baba", "skull") for i in range(pairs)]
    return create_game(make_level(["B=YQ=D", "......", "......"], profile="keke",
                                  extra=extra), limits=limits)


def test_a_crowded_cell_past_the_work_cap_is_refused_and_changes_nothing() -> None:
    game = crowd(100, Limits(work=5000))  # 10,000 (baba, skull) pairs
    state = game.get_state()
    assert refused(game.step("wait")) == "complexity_blocked"
    assert game.get_state() == state and game.history == ()
    assert len(crowd(100).step("wait")["destroyed"]) == 200


def test_destroying_pairs_costs_in_proportion_to_them() -> None:
    """Each pair scanned the board, and each splice that missed searched the list from its
    end: twice the crowd (four times the pairs) took 7.5 times the lines."""
    def wait(pairs: int) -> int:
        game = crowd(pairs)
        return lines_run(lambda: game.step("wait"))

    assert wait(40) < 5 * wait(20)
