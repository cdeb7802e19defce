"""The fold state as a store snapshot (actors/field/snapshot.py): a state restored from its
JSON text equals the one it was taken from, and from there the referee decides every later
command exactly as on the replayed field, and every observation and the spectator view read
the same, on scatter fields and across a growth; a large canvas makes a small snapshot."""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.field import referee
from actors.field.events import Accepted, CommitEvent, GameRules, GrowEvent, ManifestEvent, is_noop
from actors.field.fold import State, apply_event, new_state
from actors.field.generate import Field, generate_chunks, grow
from actors.field.geometry import Manifest, TileShape
from actors.field.live import view_of
from actors.field.observe import observe
from actors.field.snapshot import pack, state_from_json, state_to_json, unpack
from tests.field._games import Game, Refused, play_random, scatter


def _restored(s: State) -> State:
    """`s` through its snapshot's JSON text, as the store keeps it."""
    return state_from_json(json.loads(json.dumps(state_to_json(s))))


def _answers(s: State) -> tuple:
    """What the field shows: the spectator view, each agent's observation, the whole map,
    and where the next join would sit."""
    seat = referee.join(s, np.random.default_rng(7), name="n", model="m", user="u",
                        harness="h", t=0)
    return (view_of(s, "g", "ready"), [observe(s, a.id) for a in s.agents],
            observe(s, None, [0, 0, s.manifest.G, s.manifest.G]), seat)


class _Steps:
    """Every command play_random sent, with the revision and time it was decided at."""

    def __init__(self) -> None:
        self.steps: list[tuple] = []

    def __call__(self, g: Game, kind: str, agent: str, arg, outcome) -> None:
        rev = g.state.revision if isinstance(outcome, Refused) else outcome.rev - 1
        self.steps.append((rev, g.t, kind, agent, arg, outcome))


def _decide(s: State, truth: Field, t: int, kind: str, agent: str, arg):
    """The referee's decision on `s`, as `Game` asks for it."""
    if kind == "reveal":
        return referee.reveal(s, truth, agent=agent, tile=arg, t=t, expected_revision=s.revision)
    if kind == "commit":
        return referee.commit(s, truth, agent=agent, cells=arg, intent="test", t=t,
                              expected_revision=s.revision)
    return referee.retract(s, agent=agent, cells=arg, t=t, expected_revision=s.revision)


def _plays_on_alike(g: Game, steps: _Steps, k: int) -> None:
    """Restore the state at revision `k` from its snapshot, then send it every command sent
    from revision k on: each decision, state and answer is the replayed field's."""
    states = [new_state()]
    for ev in g.events:
        states.append(apply_event(states[-1], ev))
    s = _restored(states[k])
    assert s == states[k] and state_to_json(s) == state_to_json(states[k])
    assert _answers(s) == _answers(states[k])
    later = [step for step in steps.steps if step[0] >= k]
    assert later and later[0][0] == k
    for rev, t, kind, agent, arg, outcome in later:
        assert s.revision == rev
        decided = _decide(s, g.truth, t, kind, agent, arg)
        if isinstance(outcome, Refused):
            assert decided == outcome.refusal
            continue
        assert decided == outcome
        if not is_noop(decided):
            s = apply_event(s, decided)
            assert s == states[s.revision]
    assert s == g.state and _answers(s) == _answers(g.state)


@settings(max_examples=4, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_a_restored_field_decides_and_shows_what_the_replayed_one_does(seed: int,
                                                                      fog: bool) -> None:
    g = Game(scatter("referee", 60), rules=GameRules(fog=fog), seed=seed)
    steps = _Steps()
    play_random(g, np.random.default_rng(seed), steps=150, agents=3, on_step=steps)
    first = 1 + 3  # the manifest and the joins (decided before the steps)
    assert len(g.events) > first + 20
    points = np.random.default_rng(seed).choice(np.arange(first, len(g.events)), 3, False)
    for k in sorted(points.tolist()):
        _plays_on_alike(g, steps, k)


@cache
def _small_chunks() -> Field:
    return generate_chunks(3, 96, chunks=1, chunk=24)


def test_a_restored_field_that_grew_reads_the_grown_geometry() -> None:
    g = Game(_small_chunks(), seed=5)
    steps = _Steps()
    play_random(g, np.random.default_rng(5), steps=60, agents=2, on_step=steps)
    grown = grow(g.truth, g.state.geo)
    s = g.state
    g.truth = grown
    g._fold(GrowEvent(rev=s.revision + 1, t=g.tick(), tiles=grown.manifest.tiles[len(s.geo.tiles):],
                      seed_ring=grown.manifest.seed_rings[-1]))
    k = g.state.revision
    play_random(g, np.random.default_rng(6), steps=60, agents=1, on_step=steps)
    assert len(g.state.geo.tiles) > len(s.geo.tiles) and g.state.grown == (k,)
    restored = _restored(g.state)
    assert restored.geo.neighbours == g.state.geo.neighbours
    assert restored.geo.holes == g.state.geo.holes
    assert np.array_equal(restored.boxes, g.state.boxes)
    # from the growth on (the join of the second play is decided before its steps)
    _plays_on_alike(g, steps, k + 1)


def test_a_large_canvas_makes_a_small_snapshot() -> None:
    tiles = tuple(TileShape(k, 480 + 6 * (k % 2), 480 + 6 * (k // 2), 8, 8, ((0, 0, 8, 8),))
                  for k in range(4))
    s = apply_event(new_state(), ManifestEvent(rev=1, t=0, rules=GameRules(), manifest=Manifest(
        G=1000, tiles=tiles, seed_rings=((0,),), layout="chunks")))
    s = apply_event(s, referee.join(s, np.random.default_rng(1), name="p", model="m", user="u",
                                    harness="h", t=0))
    cells = tiles[0].y0 * 1000 + tiles[0].x0 + np.arange(8)
    s = apply_event(s, CommitEvent(rev=3, t=5, agent="a1", intent="", accepted=tuple(
        Accepted(int(c), int(c) % 2, "guess") for c in cells)))
    text = json.dumps(state_to_json(s))
    # under a hundredth of the 6 MB of values its three per-cell stores hold
    assert len(text) < 60_000, len(text)
    assert _restored(s) == s and _restored(s).values.take(cells).tolist() == [0, 1] * 4


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32])
def test_packed_arrays_come_back_exactly(dtype: type) -> None:
    info = np.iinfo(dtype)
    a = np.array([info.min, -1 if info.min else 0, 0, 1, info.max, 7], dtype=dtype)
    back = unpack(json.loads(json.dumps(pack(a))))
    assert back.dtype == a.dtype and np.array_equal(back, a) and not back.flags.writeable
