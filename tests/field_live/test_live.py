"""The pure side of live fields: names, start plans, coalescing, history, boards, growth."""

from __future__ import annotations

from datetime import date

import numpy as np
import pytest

from actors.field import live
from actors.field.events import ManifestEvent
from actors.field.fold import apply_event, replay
from actors.field.leaderboard import Tally, boards_of
from tests.field._games import Game, play_random, scatter_seed


def test_daily_names() -> None:
    assert live.daily_id(date(2026, 1, 2)) == "day-2026-01-02"
    assert live.daily_date("day-2026-01-02") == date(2026, 1, 2)
    assert live.daily_date("day-2026-13-02") is None
    assert live.daily_date("mine") is None
    assert live.yesterday(date(2026, 3, 1)) == date(2026, 2, 28)
    assert live.GAME_ID_RE.match("a" * 80) and not live.GAME_ID_RE.match("a" * 81)


def test_start_plans() -> None:
    plan = live.plan_start(1, 30, 1000, 3, 40, "accept", 0, None, None)
    assert (plan.layout, plan.size, plan.rules.fog, plan.grow_every) == ("scatter", 30, False, None)
    grow = live.plan_start(1, None, 200, 1, 40, "reject", 1, 60.0, None)
    assert (grow.layout, grow.rules.fog, grow.rules.guess) == ("chunks", True, "reject")
    daily = live.daily_plan(date(2026, 1, 2))
    assert daily.grow_every == live.DAILY_GROW_S and daily.rules.fog
    for args, path in [((1, 5, 1000, 3, 40, "accept", 0, None, None), "args.size"),
                       ((1, None, 1000, 3, 40, "accept", 3, None, None), "args.depth"),
                       ((1, 30, 1000, 3, 40, "accept", 0, 60.0, None), "args.size"),
                       ((1, None, 100, 3, 40, "accept", 0, 60.0, None), "args.chunks"),
                       ((1, None, 100, 1, 10, "accept", 0, 60.0, None), "args.chunk"),
                       ((1, None, 100, 1, 40, "accept", 0, 0.5, None), "args.grow.every_s"),
                       ((-1, 30, 1000, 3, 40, "accept", 0, None, None), "args.seed")]:
        with pytest.raises(live.StartError) as err:
            live.plan_start(*args)
        assert err.value.path == path


def test_history_matches_replay(monkeypatch) -> None:
    monkeypatch.setattr(live, "CHECKPOINT_EVERY", 8)
    monkeypatch.setattr(live, "MAX_CHECKPOINTS", 4)
    g = Game(scatter_seed(3, 60))
    play_random(g, np.random.default_rng(1), 200, 3)
    h = live.History()
    s = replay([])
    for ev in g.events:
        s = apply_event(s, ev)
        h.add(ev, s)
    assert len(g.events) > 8 * 8
    assert len(h.checkpoints) - len(h.layouts) <= 4 and 0 in h.checkpoints  # thinned
    # the manifest's state is kept past the thinning: history never folds it again
    assert isinstance(g.events[0], ManifestEvent) and h.layouts == {1} <= set(h.checkpoints)
    # thinned evenly (the spacing doubles): no revision is a long replay from its checkpoint
    revs = sorted(h.checkpoints)
    longest = max(b - a for a, b in zip(revs, [*revs[1:], len(g.events)]))
    assert longest <= 2 * len(g.events) / 4, revs
    for rev in (0, 1, 7, 8, 9, 33, len(g.events) - 1, len(g.events)):
        assert h.state_at(rev) == replay(g.events[:rev])
    with pytest.raises(ValueError, match=r"^revision -1 is not in 0\.\."):
        h.state_at(-1)
    view = live.view_of(h.state_at(len(g.events)), "g", "ready")
    cells = view["cells"]
    assert len(cells["rows"]) == cells["h"] and all(len(r) == cells["w"] for r in cells["rows"])
    assert len(view["tile_status"]) == len(view["manifest"]["tiles"])


def test_a_history_started_later_reads_from_there_and_takes_in_the_earlier(monkeypatch) -> None:
    monkeypatch.setattr(live, "CHECKPOINT_EVERY", 8)
    monkeypatch.setattr(live, "MAX_CHECKPOINTS", 4)
    g = Game(scatter_seed(3, 60))
    play_random(g, np.random.default_rng(1), 200, 3)
    states = [replay([])]
    for ev in g.events:
        states.append(apply_event(states[-1], ev))
    first = 37  # as a snapshot load starts it: at a state off the spacing
    later, earlier = live.History(states[first]), live.History()
    for rev, ev in enumerate(g.events, start=1):
        (earlier if rev <= first else later).add(ev, states[rev])
    assert len(g.events) > first + 8 * 8 and later.every > 8  # thinned
    assert first in later.checkpoints
    for rev in range(first, len(g.events) + 1):
        assert later.state_at(rev) == states[rev]
    with pytest.raises(ValueError, match=rf"^revision {first - 1} is not in {first}\.\."):
        later.state_at(first - 1)
    with pytest.raises(ValueError, match=r"^a history of revisions 0\.\.0 does not end at 37$"):
        later.prepend(live.History())
    later.prepend(earlier)
    assert later.first == 0 and len(later.checkpoints) - len(later.layouts) <= 4
    assert all(later.state_at(rev) == states[rev] for rev in range(len(g.events) + 1))


def _bounded(monkeypatch, events: int, cells: int = 65536) -> None:
    monkeypatch.setattr(live, "CHECKPOINT_EVERY", 8)
    monkeypatch.setattr(live, "MAX_CHECKPOINTS", 4)
    monkeypatch.setattr(live, "MAX_HELD_EVENTS", events)
    monkeypatch.setattr(live, "MAX_HELD_CELLS", cells)


def _played() -> tuple[list, list]:
    """A field's events played by three agents, and its state at each revision."""
    g = Game(scatter_seed(3, 60))
    play_random(g, np.random.default_rng(1), 200, 3)
    states = [replay([])]
    for ev in g.events:
        states.append(apply_event(states[-1], ev))
    return g.events, states


def _answers_every_revision(h: live.History, events: list, states: list) -> None:
    """Each revision from `h.first` equals the replay: off the held events when `held`,
    else (LookupError) folded from its checkpoint over the events after it, as the actor
    folds the stored ones."""
    for rev in range(h.first, len(events) + 1):
        base = h.base(rev)
        assert base <= rev and rev - base <= max(h.every, 1)
        if h.held(rev):
            assert h.state_at(rev) == states[rev]
        else:
            with pytest.raises(LookupError, match=rf"^the events after revision {base} are "
                                                  r"not held; fold the stored ones$"):
                h.state_at(rev)
            assert replay(events[base:rev], h.checkpoints[base]) == states[rev]


@pytest.mark.parametrize(("events", "cells"), [(20, 65536), (4096, 300)])
def test_a_history_holds_only_its_latest_events(monkeypatch, events: int, cells: int) -> None:
    _bounded(monkeypatch, events, cells)
    played, states = _played()
    h = live.History()
    for rev, ev in enumerate(played, start=1):
        h.add(ev, states[rev])
        assert len(h.events) <= events and h.held_from + len(h.events) == h.revision == rev
        assert h.cells == sum(map(live._cells, h.events)) <= cells
    assert 1 < len(h.events) < len(played) / 5 and h.events == played[-len(h.events):]
    assert h.held(1) and not h.held(2)  # (the manifest's state is kept)
    _answers_every_revision(h, played, states)


@pytest.mark.parametrize("held", [20, 400])
def test_a_history_started_later_takes_in_no_more_events_than_it_holds(monkeypatch,
                                                                        held: int) -> None:
    _bounded(monkeypatch, held)
    played, states = _played()
    first = 37
    later, earlier = live.History(states[first]), live.History()
    for rev, ev in enumerate(played, start=1):
        (earlier if rev <= first else later).add(ev, states[rev])
    later.prepend(earlier)
    assert later.first == 0 and len(later.events) == min(held, len(played))
    assert later.events == played[len(played) - len(later.events):]
    _answers_every_revision(later, played, states)


def test_alltime_merges_each_day_once() -> None:
    board = boards_of([Tally("a1", "ann", "m", 10, 1, 0, 0, 30, False)])
    one = live.merge_day(live.AllTime(), "2026-01-01", board)
    assert live.merge_day(one, "2026-01-01", board) is one
    two = live.merge_day(one, "2026-01-02", board)
    assert two.days == ("2026-01-01", "2026-01-02") and two.boards.users[0].reward == 60
    assert live.AllTime.from_json(two.to_json()) == two
    rows = live.AllTimeRows(two)
    merged, totals, days = rows.with_today("2026-01-03", board, 0, 10)
    assert days[-1] == "2026-01-03" and merged.users[0].reward == 90 and totals == (1, 1)
    assert rows.with_today("2026-01-02", board, 0, 10) == (two.boards, (1, 1), list(two.days))
    assert rows.with_today(None, board, 0, 10)[0].users[0].reward == 90  # a started field


def test_growth_due() -> None:
    g = Game(scatter_seed(3, 30))
    assert live.growth_due(g.state) is None
    agent = g.join()
    while True:
        try:
            cells = g.next_tile(agent)
        except AssertionError:
            break
        g.commit(agent, [[c, g.sol(c)] for c in cells])
        if live.growth_due(g.state) == "all_solved":
            break
    assert live.growth_due(g.state) in ("all_solved", "most_revealed")
