"""The fold: earlier states stay intact, replay (also through JSON) reproduces the final
state exactly, events that cannot follow are refused, growth extends the field."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.field import referee
from actors.field.events import (
    Accepted,
    CommitEvent,
    GameRules,
    GrowEvent,
    JoinEvent,
    ManifestEvent,
    event_from_json,
    event_to_json,
)
from actors.field.fold import HIDDEN, MAP_TILE, FoldError, State, apply_event, new_state, replay
from actors.field.geometry import Manifest, TileShape
from tests.field._games import Game, play_random, scatter

_STORES = ("values", "source", "owner", "status", "revealer", "solver")


def _snapshot(s: State) -> tuple:
    arrays = tuple(getattr(s, name).to_array().copy() for name in _STORES)
    windows = tuple(st.health.outcomes.copy() for st in s.stats)
    return (s.revision, arrays, windows, s.agents, s.stats, s.groups, s.totals,
            s.batch_hist, s.gap_hist, s.dirty)


def _same(a: tuple, b: tuple) -> bool:
    return a[0] == b[0] and all(np.array_equal(x, y) for x, y in zip(a[1], b[1], strict=True)) \
        and all(np.array_equal(x, y) for x, y in zip(a[2], b[2], strict=True)) and a[3:] == b[3:]


@settings(max_examples=4, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_earlier_states_stay_intact_and_replay_reproduces_the_game(seed: int) -> None:
    g = Game(scatter("referee", 60), seed=seed)
    history: list[tuple[State, tuple]] = [(g.state, _snapshot(g.state))]

    def keep(g: Game, *_step) -> None:
        if g.state is not history[-1][0]:
            history.append((g.state, _snapshot(g.state)))

    play_random(g, np.random.default_rng(seed), steps=80, agents=3, on_step=keep)
    assert len(history) > 20  # joins plus folded decisions
    for s, snap in history:  # every state still reads as it did when it was made
        assert _same(_snapshot(s), snap)
    assert replay(g.events) == g.state
    wire = [event_from_json(json.loads(json.dumps(event_to_json(ev)))) for ev in g.events]
    assert wire == g.events
    assert replay(wire) == g.state
    mid = len(g.events) // 2  # replay resumes from any earlier state
    assert replay(g.events[mid:], start=replay(g.events[:mid])) == g.state


def test_events_that_cannot_follow_are_refused() -> None:
    g = Game(scatter("referee", 60))
    a = g.join()
    s = g.state
    with pytest.raises(FoldError, match=r"^event rev 9 cannot follow revision 2$"):
        apply_event(s, CommitEvent(rev=9, t=0, agent=a, intent="", accepted=()))
    with pytest.raises(FoldError, match=r"^unknown agent 'a7'$"):
        apply_event(s, CommitEvent(rev=3, t=0, agent="a7", intent="", accepted=()))
    with pytest.raises(FoldError):
        apply_event(s, JoinEvent(rev=3, t=0, agent="a5", name="x", model="m", user="u",
                                 harness="h", seed_tile=0))
    assert g.state is s and s.revision == 2


def test_a_commit_dirties_the_map_tiles_of_its_cells() -> None:
    g = Game(scatter("referee", 60))
    a = g.join()
    cells = g.next_tile(a)
    g.commit(a, [[c, g.sol(c)] for c in cells[:5]])
    ev = g.events[-1]
    G = g.state.manifest.G
    expect = {(c // G // MAP_TILE) * g.state.map_cols + (c % G) // MAP_TILE
              for c in (x.id for x in ev.accepted)}
    assert expect and expect <= g.state.dirty
    assert g.state.batch_hist[len(ev.accepted).bit_length()] >= 1


def _square(tid: int, x0: int, y0: int) -> TileShape:
    return TileShape(tid, x0, y0, 8, 8, ((0, 0, 8, 8),))


def test_growth_extends_the_field_and_seats_new_agents_on_the_newest_ring() -> None:
    # the fold needs the map, not the solution: a hand-made block of four overlapping tiles
    first = tuple(_square(k, x, y) for k, (x, y) in enumerate([(0, 0), (6, 0), (0, 6), (6, 6)]))
    s = apply_event(new_state(), ManifestEvent(rev=1, t=0, rules=GameRules(), manifest=Manifest(
        G=64, tiles=first, seed_rings=((0, 3),), layout="chunks")))
    rng = np.random.default_rng(5)
    s = apply_event(s, referee.join(s, rng, name="p", model="m", user="u", harness="h", t=0))
    before = s
    moved = tuple(_square(4 + k, t.x0 + 20, t.y0) for k, t in enumerate(first))
    s = apply_event(before, GrowEvent(rev=3, t=0, tiles=moved, seed_ring=(4, 7)))
    assert len(s.geo.tiles) == 8 and s.manifest.seed_rings[-1] == (4, 7)
    assert [s.status[t] for t in range(8)] == [HIDDEN] * 8
    assert s.values == before.values and len(before.geo.tiles) == 4
    assert s.geo.neighbours[4] == (5, 6, 7) and s.dirty and not s.ended
    ev = referee.join(s, rng, name="q", model="m", user="u", harness="h", t=0)
    assert ev.seed_tile in (4, 7)  # the newest ring first
    end = apply_event(s, GrowEvent(rev=4, t=0, tiles=(), seed_ring=()))
    assert end.ended
    refusal = referee.join(end, rng, name="q", model="m", user="u", harness="h", t=0)
    assert isinstance(refusal, referee.Refusal) and refusal.code == "ended"


def test_accepted_cells_keep_their_source_and_owner() -> None:
    g = Game(scatter("referee", 60))
    a = g.join()
    cells = g.next_tile(a)
    g.commit(a, [[c, g.sol(c)] for c in cells])
    ev = g.events[-1]
    assert isinstance(ev, CommitEvent) and ev.accepted
    s = g.state
    for x in ev.accepted:
        assert s.values[x.id] == x.v and s.owner[x.id] == 0
        assert s.source[x.id] == (2 if x.cls == "forced" else 3)
    assert all(isinstance(x, Accepted) for x in ev.accepted)


@pytest.mark.parametrize("bad", [
    {"kind": "teleport", "rev": 1},
    {"kind": "retract", "rev": 2, "t": 0, "agent": "a1", "retracted": [], "ignored": [], "x": 1},
    {"kind": "commit", "rev": 2, "t": 0, "agent": "a1", "intent": "",
     "accepted": [{"id": 1, "v": 1, "class": "sure", "rules": []}]},
    {"kind": "manifest", "rev": 1, "t": 0, "manifest": {"G": 4, "tiles": []},
     "rules": {"guess": "sometimes", "depth": 0, "fog": False}},
])
def test_event_json_is_strict(bad: dict) -> None:
    with pytest.raises(ValueError):
        event_from_json(bad)
