"""Analysis: the strategy definition, reveal classification against a brute force, per-agent
figures and the tallies the leaderboards read."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from actors.field.analysis import analyse, classify_reveal, strategy_of, tallies
from actors.field.events import RevealEvent
from actors.field.fold import HIDDEN, State
from actors.field.leaderboard import boards_of
from actors.field.territory import frontier
from tests.field._games import Game, play_random, scatter


@pytest.mark.parametrize(("steps", "expect"), [
    ((0, 0, 0, 0), "none"),
    ((2, 2, 2, 2), "none"),  # fewer than three informative reveals
    ((6, 1, 2, 10), "bfs"),
    ((1, 7, 7, 10), "dfs"),  # ties go to the earlier criterion
    ((1, 2, 6, 10), "greedy"),
    ((5, 5, 5, 10), "mixed"),  # nothing reaches 60%
])
def test_strategy_definition(steps: tuple[int, int, int, int], expect: str) -> None:
    assert strategy_of(steps) == expect


def _bfs(s: State, source: int) -> dict[int, int]:
    dist, queue = {source: 0}, deque([source])
    while queue:
        t = queue.popleft()
        for n in s.geo.neighbours[t]:
            if n not in dist:
                dist[n] = dist[t] + 1
                queue.append(n)
    return dist


def _brute_step(s: State, i: int, tile: int) -> tuple[str, ...]:
    options = [t for t in frontier(s, i) if s.status[t] == HIDDEN]
    if len(options) < 2:
        return ()
    dist = _bfs(s, s.agents[i].seed_tile)
    far = 10**9
    share = {t: np.mean([s.values[c] >= 0 for c in s.geo.tiles[t].cells.tolist()])
             for t in options}
    last = s.stats[i].last_solved
    met = tuple(name for name, ok in (
        ("bfs", dist.get(tile, far) == min(dist.get(t, far) for t in options)),
        ("dfs", last is not None and tile in s.geo.neighbours[last]),
        ("greedy", share[tile] == max(share.values()))) if ok)
    return met or ("none",)


def test_reveal_steps_and_figures_agree_with_a_brute_force() -> None:
    g = Game(scatter("referee", 60), seed=4)
    before = [g.state]
    seen = []

    def on_step(g: Game, kind: str, agent: str, arg, outcome) -> None:
        if isinstance(outcome, RevealEvent) and g.events[-1] is outcome:
            s = before[0]
            i = s.agent_index(agent)
            assert outcome.step == _brute_step(s, i, arg) == classify_reveal(s, i, arg)
            seen.append(outcome.step)
        before[0] = g.state

    play_random(g, np.random.default_rng(4), steps=150, agents=2, wrong_p=0.0,
                on_step=on_step)
    assert any(step and step != ("none",) for step in seen)
    s = g.state
    for i, a in enumerate(s.agents):
        an = analyse(s, i)
        st = s.stats[i]
        reveals = [ev for ev in g.events if isinstance(ev, RevealEvent) and ev.agent == a.id]
        assert an.counts["reveals"] == len(reveals) == st.reveals
        assert an.counts["informative"] == sum(bool(ev.step) for ev in reveals)
        for k, name in enumerate(("bfs", "dfs", "greedy")):
            assert an.counts[name] == sum(name in ev.step for ev in reveals) == st.steps[k]
        assert an.strategy == strategy_of(st.steps)
        dist = _bfs(s, a.seed_tile)
        assert an.last_solved == st.last_solved
        if st.last_solved is not None:
            assert an.last_solved_dist == dist[st.last_solved]
        assert an.reach == max((dist[t] for t in st.solved_tiles), default=0)


def test_tallies_feed_the_boards() -> None:
    g = Game(scatter("referee", 60), seed=8)
    play_random(g, np.random.default_rng(8), steps=60, agents=3)
    s = g.state
    rows = tallies(s)
    assert [t.agent for t in rows] == [a.id for a in s.agents]
    assert sum(t.reward for t in rows) == s.totals.reward
    assert sum(t.forced + t.guess for t in rows) == s.totals.forced + s.totals.guess
    board = boards_of(rows)
    assert sum(r.agents for r in board.users) == len(s.agents)
    assert sum(r.wrong for r in board.models) == s.totals.wrong
