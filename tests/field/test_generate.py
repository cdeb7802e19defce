"""Generator invariants over many seeds: valid lines, 2..m ambiguity, alternatives that
differ on shared cells, a closed field, growth that changes nothing, determinism."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from actors.field.fold import SOLVED
from actors.field.generate import (
    Field,
    generate_chunks,
    generate_scatter,
    grow,
    name_seed,
    scatter_layout,
)
from actors.field.geometry import Geometry
from actors.field.propagate import propagate
from actors.field.solve import solutions
from actors.field.territory import frontier
from protocol.ops.field import MIN_SIZE
from tests.field._games import Game

seeds = st.integers(0, 2**63 - 1)


def line_ok(values: list[int]) -> bool:
    """Balanced and no three equal adjacent (written out independently of the engine)."""
    if 2 * sum(values) != len(values):
        return False
    return not any(a == b == c for a, b, c in zip(values, values[1:], values[2:]))


def assert_tile_valid(geo: Geometry, t: int, sol: np.ndarray) -> None:
    tg = geo.tiles[t]
    seen: dict[tuple[int, int], set[tuple[int, ...]]] = {}
    for k in range(len(tg.line_len)):
        values = sol[tg.cells[tg.line(k)]].tolist()
        assert line_ok(values), (t, k, values)
        group = seen.setdefault((int(tg.line_orient[k]), int(tg.line_len[k])), set())
        assert tuple(values) not in group, (t, k)
        group.add(tuple(values))


def assert_field(field: Field, first: int = 0) -> Geometry:
    """Every invariant of the tiles from `first` on."""
    geo = Geometry(field.manifest)
    sol = field.solution
    assert len(field.givens) == len(geo.tiles)
    assert np.array_equal(sol >= 0, geo.covered)
    for t in range(first, len(geo.tiles)):
        tg = geo.tiles[t]
        assert_tile_valid(geo, t, sol)
        local = np.full(tg.n, -1, dtype=np.int8)
        idx = tg.local_of(field.givens[t], geo.G)
        local[idx] = sol[field.givens[t]]
        alts = solutions(tg, local, tg.m + 1)
        assert 2 <= len(alts) <= tg.m, (t, len(alts))
        assert any(np.array_equal(a, sol[tg.cells]) for a in alts)
        shared = geo.shared[t]
        for a, b in combinations(alts, 2):
            assert np.any(a[shared] != b[shared]), t
    return geo


def components(field: Field) -> int:
    """Tile-overlap components, from the tiles' cells alone (not the engine's neighbours)."""
    G = field.manifest.G
    parent = list(range(len(field.manifest.tiles)))

    def find(a: int) -> int:
        while parent[a] != a:
            a = parent[a]
        return a

    first_cover: dict[int, int] = {}
    for t in field.manifest.tiles:
        for lx, ly, w, h in t.rects:
            for y in range(t.y0 + ly, t.y0 + ly + h):
                for x in range(t.x0 + lx, t.x0 + lx + w):
                    other = first_cover.setdefault(y * G + x, t.id)
                    parent[find(t.id)] = find(other)
    return len({find(t) for t in parent})


def check_scatter(seed: int, size: int) -> None:
    field = generate_scatter(seed, size)
    assert len(field.manifest.tiles) >= 2
    assert components(field) == 1  # agents can reach every tile, so territories can merge
    geo = assert_field(field)
    assert field.manifest.seed_tiles and all(
        0 <= t < len(geo.tiles) for t in field.manifest.seed_tiles)


@settings(max_examples=20, deadline=None)
@given(seeds, st.integers(MIN_SIZE, 44))
@example(4236625737729233649, 62)  # its wall once left a 3-tile corner cut off
@example(803465907244432, 20)  # its first wall lost every tile to their givens
def test_scatter_fields_keep_every_invariant(seed, size):
    check_scatter(seed, size)


def test_a_scatter_field_too_small_for_two_tiles_is_refused_by_name():
    with pytest.raises(ValueError, match="holds a 11 x 11 field of two tiles"):
        generate_scatter(1, 11)  # (every wall of 10 or 11 loses its tiles)


@pytest.mark.deep
@settings(max_examples=300, deadline=None)
@given(seeds, st.integers(MIN_SIZE, 100))
def test_scatter_fields_keep_every_invariant_deep(seed, size):
    check_scatter(seed, size)


@settings(max_examples=10, deadline=None)
@given(seeds)
def test_revealing_everything_and_committing_the_solution_solves_every_tile(seed):
    field = generate_scatter(seed, 32)
    geo = Geometry(field.manifest)
    sol = field.solution
    known = np.full(geo.G * geo.G, -1, dtype=np.int8)
    for g in field.givens:
        known[g] = sol[g]
    closure = propagate(geo, lambda c: known[c], lambda t: True, range(len(geo.tiles)))
    assert closure.contradiction is None
    for d in closure.fixed.values():
        assert d.value == sol[d.cell]
        known[d.cell] = d.value
    # commit the rest of the solution: every tile is then complete and valid
    known[geo.covered] = sol[geo.covered]
    for t, tg in enumerate(geo.tiles):
        assert np.all(known[tg.cells] >= 0)
        assert_tile_valid(geo, t, known)
    final = propagate(geo, lambda c: known[c], lambda t: True, range(len(geo.tiles)))
    assert final.contradiction is None and not final.fixed
    # and through the referee: one agent reveals its way across the field (one component)
    # committing the solution, and every tile ends solved, with no wrong cell
    g = Game(field)
    agent = g.join_at(field.manifest.seed_tiles[0])
    for _ in range(2 * len(geo.tiles)):
        if not frontier(g.state, 0):
            break
        cells = g.next_tile(agent)
        if cells:
            assert not g.commit(agent, [[c, g.sol(c)] for c in cells])["rejected"]
    assert np.all(g.state.status.to_array() == SOLVED)
    assert g.state.totals.reward == sum(tg.n for tg in geo.tiles) and g.state.totals.wrong == 0


@settings(max_examples=4, deadline=None)
@given(seeds)
@example(4343377069022185079)  # its ring once left a 3-tile piece cut off
def test_growth_never_changes_an_existing_cell(seed):
    field = generate_chunks(seed, 96, chunks=1, chunk=24)
    assert field.manifest.chunks == ((1, 1),)
    assert components(field) == 1
    # slots start in the middle chunk; a trimmed fallback shape starts 2 cells further right
    assert all(24 <= t.x0 < 50 and 24 <= t.y0 < 48 for t in field.manifest.tiles)
    grown = grow(field)
    assert grown is not None
    n_old = len(field.manifest.tiles)
    assert grown.manifest.tiles[:n_old] == field.manifest.tiles
    assert len(grown.manifest.tiles) > n_old
    old = field.solution >= 0
    assert np.array_equal(grown.solution[old], field.solution[old])
    assert all(np.array_equal(a, b) for a, b in zip(grown.givens, field.givens))
    assert len(grown.manifest.chunks) == 9
    assert components(grown) == 1
    assert grown.manifest.seed_rings[0] == field.manifest.seed_rings[0]
    assert all(t >= n_old for t in grown.manifest.seed_rings[1])
    assert_field(grown, first=n_old)
    geo = Geometry(grown.manifest)
    for t in range(n_old):  # the old tiles keep their lines valid and their ambiguity
        assert_tile_valid(geo, t, grown.solution)


def test_growth_ends_when_there_is_no_room():
    field = generate_chunks(5, 48, chunks=2, chunk=24)
    assert len(field.manifest.chunks) == 4
    assert grow(field) is None


@settings(max_examples=4, deadline=None)
@given(seeds)
def test_same_seed_same_bytes(seed):
    a = generate_scatter(seed, 30).to_json()
    b = generate_scatter(seed, 30).to_json()
    assert a == b
    again = Field.from_dict(json.loads(a))
    assert again.to_json() == a


def test_same_seed_same_bytes_in_fresh_processes():
    """No hash order, cache or leftover state leaks in: two fresh interpreters with different
    hash seeds write the same manifest and solution bytes as this one, growth included."""
    code = ("from actors.field.generate import generate_scatter, generate_chunks, grow\n"
            "print(generate_scatter(77, 40).to_json())\n"
            "print(grow(generate_chunks(77, 96, chunks=1, chunk=24)).to_json())\n")
    here = (generate_scatter(77, 40).to_json() + "\n"
            + grow(generate_chunks(77, 96, chunks=1, chunk=24)).to_json() + "\n")
    root = Path(__file__).resolve().parents[2]
    for hash_seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, check=True,
                             capture_output=True, text=True).stdout
        assert out == here


def test_scatter_layout_is_named():
    a = scatter_layout("health", 30)
    assert a.to_json() == scatter_layout("health", 30).to_json()
    assert a.to_json() != scatter_layout("other", 30).to_json()
    assert dict(a.manifest.params)["seed"] == name_seed("health")
