"""The tile counter: complete grids, the letheed and derived corpora, a SAT cross-check."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.field.geometry import Geometry, Manifest, ShapeError, TileShape, tile_geom
from actors.field.solve import count, sample, solutions
from tests.conftest import shared_path


def rect_tile(w: int, h: int):
    return Geometry(Manifest(max(w, h), (TileShape(0, 0, 0, w, h, ((0, 0, w, h),)),))).tiles[0]


def cells_of(text: str) -> np.ndarray:
    return np.array([-1 if ch == "." else int(ch) for ch in text], dtype=np.int8)


def as_text(rows: np.ndarray) -> list[str]:
    return ["".join(map(str, r.tolist())) for r in rows]


@pytest.mark.parametrize(("w", "n"), [(4, 72), (6, 4140)])
def test_complete_grids(w, n):
    t = rect_tile(w, w)
    assert count(t, np.full(w * w, -1), 10_000) == n
    assert count(t, np.full(w * w, -1), 10) == 10  # the cap stops the count


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_letheed_grids_have_exactly_their_listed_solutions(k):
    rows = shared_path("takuzu-corpus", "letheed-takuzu", f"grid{k}").read_text().split()
    listed = shared_path("takuzu-corpus", "letheed-takuzu", f"output{k}").read_text()
    expected = sorted("".join(block.split()) for block in listed.strip().split("\n\n"))
    t = rect_tile(len(rows[0]), len(rows))
    got = as_text(solutions(t, cells_of("".join(rows)), 1000))
    assert got == expected
    assert len(got) == {1: 6, 2: 1, 3: 1, 4: 559}[k]


def test_ambiguous_derived_tiles_have_exactly_their_listed_solutions():
    path = shared_path("takuzu-corpus", "ambiguous-derived.txt")
    lines = [ln.split() for ln in path.read_text().splitlines() if not ln.startswith("#")]
    assert len(lines) == 171
    tiles = {}
    for w, h, n, m, puzzle, *listed in lines:
        t = tiles.setdefault((w, h), rect_tile(int(w), int(h)))
        assert t.m == int(m)
        got = as_text(solutions(t, cells_of(puzzle), int(m) + 1))
        assert got == listed and len(got) == int(n)


def sat_solutions(t, vals: np.ndarray) -> set[str]:
    """Every solution by python-sat: rules as clauses, blocking only the cell variables."""
    from itertools import combinations

    from pysat.card import CardEnc, EncType
    from pysat.solvers import Solver

    n = t.n
    clauses: list[list[int]] = []
    top = n
    lines = [t.line(k).tolist() for k in range(len(t.line_len))]
    for cells in lines:
        v = [c + 1 for c in cells]
        half = len(v) // 2
        enc = CardEnc.equals(lits=v, bound=half, top_id=top, encoding=EncType.seqcounter)
        top = max(top, enc.nv)
        clauses += enc.clauses
        for a, b, c in zip(v, v[1:], v[2:]):
            clauses += [[a, b, c], [-a, -b, -c]]
    for k1, k2 in combinations(range(len(lines)), 2):
        if t.line_group[k1] != t.line_group[k2]:
            continue
        # some position differs: d_i <-> (x != y)
        diffs = []
        for a, b in zip(lines[k1], lines[k2]):
            top += 1
            d, x, y = top, a + 1, b + 1
            clauses += [[-d, x, y], [-d, -x, -y]]
            diffs.append(d)
        clauses.append(diffs)
    for i, v in enumerate(vals.tolist()):
        if v >= 0:
            clauses.append([i + 1 if v else -(i + 1)])
    found = set()
    with Solver(name="cadical153", bootstrap_with=clauses) as s:
        while s.solve():
            model = s.get_model()
            bits = [1 if model[i] > 0 else 0 for i in range(n)]
            found.add("".join(map(str, bits)))
            s.add_clause([-(i + 1) if b else i + 1 for i, b in enumerate(bits)])
    return found


SHAPES = [
    (8, 8, ((0, 2, 8, 4), (2, 0, 4, 8))),              # plus
    (8, 8, ((0, 0, 8, 4), (0, 4, 4, 4))),              # L
    (8, 8, ((0, 0, 8, 4), (2, 4, 4, 4))),              # T
    (6, 6, ((0, 0, 6, 6),)),
    (8, 6, ((0, 0, 6, 6), (6, 1, 2, 4))),              # a brick with an ear
]


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(SHAPES), st.integers(0, 2**32 - 1), st.floats(0.1, 0.5))
def test_counter_agrees_with_sat_on_shaped_tiles(shape, seed, keep):
    w, h, rects = shape
    try:
        t = tile_geom(TileShape(0, 0, 0, w, h, rects), 10)
    except ShapeError:
        pytest.fail(f"{shape} should be a valid shape")
    rng = np.random.default_rng(seed)
    full = sample(t, np.full(t.n, -1, dtype=np.int8), rng.integers(0, 2, t.n, dtype=np.int8))
    assert full is not None
    vals = np.where(rng.random(t.n) < keep, full, -1).astype(np.int8)
    expected = sat_solutions(t, vals)
    assert set(as_text(solutions(t, vals, 100_000))) == expected
    assert count(t, vals, 3) == min(3, len(expected))
