"""Leaderboards: rows per user and per model, wrong_rate and dead, merged across days."""

from __future__ import annotations

import random

import pytest

from actors.field.leaderboard import (
    MAX_NAMES,
    Boards,
    Ordered,
    Tally,
    boards_of,
    merge_boards,
)


def _t(agent: str, user: str, model: str, forced: int, guess: int, wrong: int, reward: int,
       dead: bool = False, meets: int = 0) -> Tally:
    return Tally(agent, user, model, forced, guess, wrong, meets, reward, dead)


def test_rows_per_user_and_per_model() -> None:
    b = boards_of([
        _t("a1", "ann", "m-x", 90, 5, 5, 120, meets=1),
        _t("a2", "ann", "m-y", 10, 0, 0, 30, dead=True),
        _t("a3", "bob", "m-x", 50, 0, 0, 200),
    ])
    assert [r.key for r in b.users] == ["bob", "ann"]  # by reward
    ann = b.users[1]
    assert (ann.forced, ann.guess, ann.wrong, ann.reward, ann.agents, ann.dead, ann.meets) == (
        100, 5, 5, 150, 2, 1, 1)
    assert ann.wrong_rate == pytest.approx(5 / 110)
    assert ann.models == ("m-x", "m-y") and ann.days == 1
    mx = next(r for r in b.models if r.key == "m-x")
    assert mx.users == ("ann", "bob") and mx.agents == 2 and mx.reward == 320


def test_merge_across_days_sums_and_counts_days() -> None:
    day1 = boards_of([_t("a1", "ann", "m-x", 10, 0, 0, 10)])
    day2 = boards_of([_t("a1", "ann", "m-y", 0, 0, 10, 5, dead=True),
                      _t("a2", "cy", "m-y", 1, 0, 0, 1)])
    m = merge_boards([day1, day2])
    ann = next(r for r in m.users if r.key == "ann")
    assert (ann.days, ann.agents, ann.reward, ann.dead) == (2, 2, 15, 1)
    assert ann.wrong_rate == pytest.approx(0.5)
    assert ann.models == ("m-x", "m-y")
    cy = next(r for r in m.users if r.key == "cy")
    assert cy.days == 1
    assert merge_boards([m, boards_of([])]) == m  # an empty day adds nothing


def test_json_round_trip_and_strictness() -> None:
    b = boards_of([_t("a1", "ann", "m-x", 3, 1, 1, 4)])
    assert Boards.from_json(b.to_json()) == b
    bad = b.to_json()
    bad["users"][0]["extra"] = 1
    with pytest.raises(ValueError):
        Boards.from_json(bad)


def test_a_page_of_an_ordered_board_with_a_day_added_is_that_of_the_merged_board() -> None:
    rng = random.Random(5)
    users = [f"u{i:03d}" for i in range(60)]
    days = [boards_of([_t(f"a{i}", rng.choice(users), f"m{rng.randrange(4)}", 1, 0, 0,
                          rng.randrange(50)) for i in range(40)]) for _ in range(3)]
    board, today = merge_boards(days[:2]), days[2]
    merged = merge_boards([board, today])
    ordered = Ordered(board.users)
    for start, stop in ((0, 10), (5, 25), (30, 200), (0, 1)):
        rows, total = ordered.page(today.users, start, stop)
        assert rows == merged.users[start:stop] and total == len(merged.users)
    assert Ordered(board.users).page((), 0, 200) == (board.users, len(board.users))


def test_a_page_lists_at_most_max_names_names_per_row() -> None:
    many = merge_boards([boards_of([_t(f"a{i}", f"u{i}", "m", 1, 0, 0, 1)
                                    for i in range(MAX_NAMES + 5)])])
    rows, total = Ordered(many.models).page((), 0, 10)
    assert total == 1 and rows[0].users == many.models[0].users[:MAX_NAMES]
