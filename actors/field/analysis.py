"""Per-agent analysis: how an agent expands (its strategy), its reveals, its reach.

Strategy, defined on reveals. A reveal is *informative* when the agent could choose:
its group's frontier held at least two hidden tiles. Each informative reveal is checked
against three criteria (any number may hold):

- `bfs`: the tile is among the frontier's hidden tiles nearest the agent's seed tile
  (BFS distance over the tile-neighbour graph), expanding ring by ring;
- `dfs`: the tile touches the tile the agent solved last, pushing on from its newest gain;
- `greedy`: the tile has the largest share of already known cells among the frontier's
  hidden tiles, going where the most is given away.

An agent's strategy is `none` below MIN_INFORMATIVE informative reveals; otherwise the
criterion met by the largest share of them (ties in the order bfs, dfs, greedy) when that
share is at least STRATEGY_SHARE, else `mixed`. The referee classifies each reveal as it
decides it (`classify_reveal`), the reveal event carries the result, and the fold counts it.
"""

from __future__ import annotations

from typing import Literal

import attrs
import numpy as np

from actors.field.fold import HIDDEN, State
from actors.field.health import Health, health_of
from actors.field.leaderboard import Tally
from actors.field.territory import distances, frontier

Strategy = Literal["bfs", "dfs", "greedy", "mixed", "none"]
CRITERIA = ("bfs", "dfs", "greedy")
MIN_INFORMATIVE = 3
STRATEGY_SHARE = 0.6


@attrs.frozen
class AgentAnalysis:
    """One agent's play, summarised."""

    agent: str
    strategy: Strategy
    counts: dict[str, int]  # bfs, dfs, greedy, informative, reveals
    last_solved: int | None
    last_solved_dist: int | None  # BFS distance of last_solved from the seed tile
    reach: int  # the largest BFS distance from the seed tile of a tile it solved
    health: Health


def classify_reveal(s: State, i: int, tile: int) -> tuple[str, ...]:
    """The criteria agent index i's reveal of `tile` meets; () when it was no choice."""
    options = [t for t in frontier(s, i) if s.status[t] == HIDDEN]
    if len(options) < 2 or tile not in options:
        return ()
    met: list[str] = []
    dist = distances(s, s.agents[i].seed_tile, options)
    far = len(s.geo.tiles)  # unreachable tiles rank last
    if dist.get(tile, far) == min(dist.get(t, far) for t in options):
        met.append("bfs")
    last = s.stats[i].last_solved
    if last is not None and tile in s.geo.neighbours[last]:
        met.append("dfs")
    share = {t: float(np.mean(s.values.take(s.geo.tiles[t].cells) >= 0)) for t in options}
    if share[tile] == max(share.values()):
        met.append("greedy")
    return tuple(met) if met else ("none",)


def strategy_of(steps: tuple[int, int, int, int]) -> Strategy:
    """The strategy named by the counts (bfs, dfs, greedy, informative reveals)."""
    informative = steps[3]
    if informative < MIN_INFORMATIVE:
        return "none"
    best = max(range(3), key=lambda k: (steps[k], -k))
    return CRITERIA[best] if steps[best] / informative >= STRATEGY_SHARE else "mixed"


def analyse(s: State, i: int) -> AgentAnalysis:
    """Agent index i's analysis at state `s`."""
    st = s.stats[i]
    seed = s.agents[i].seed_tile
    dist = distances(s, seed, st.solved_tiles)
    last = st.last_solved
    return AgentAnalysis(
        agent=s.agents[i].id,
        strategy=strategy_of(st.steps),
        counts={"bfs": st.steps[0], "dfs": st.steps[1], "greedy": st.steps[2],
                "informative": st.steps[3], "reveals": st.reveals},
        last_solved=last,
        last_solved_dist=dist.get(last) if last is not None else None,
        reach=max(dist.values(), default=0),
        health=health_of(st.health),
    )


def tallies(s: State) -> list[Tally]:
    """One leaderboard tally per agent of the field."""
    return [Tally(agent=a.id, user=a.user, model=a.model, forced=st.forced, guess=st.guess,
                  wrong=st.wrong, meets=st.meets, reward=st.reward,
                  dead=st.health.died_at is not None)
            for a, st in zip(s.agents, s.stats, strict=True)]
