"""The referee's propagation: the corpus closure, each rule, spreading, bifurcation."""

from __future__ import annotations

import numpy as np
import pytest

from actors.field.geometry import Geometry, Manifest, TileShape
from actors.field.propagate import propagate
from tests.conftest import shared_path


def rect_geo(w: int, h: int) -> Geometry:
    return Geometry(Manifest(max(w, h), (TileShape(0, 0, 0, w, h, ((0, 0, w, h),)),)))


def cells_of(text: str) -> np.ndarray:
    return np.array([-1 if ch == "." else int(ch) for ch in text], dtype=np.int8)


def close(geo: Geometry, vals: np.ndarray, depth: int = 0, tiles=(0,)):
    return propagate(geo, lambda cells: vals[cells], lambda t: True, tiles, depth)


def read(name: str) -> list[list[str]]:
    path = shared_path("takuzu-corpus", name)
    return [ln.split() for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]


def test_depth0_closure_matches_the_corpus_and_the_solutions():
    puzzles = read("tatham-unruly-unique.txt")
    reference = read("tatham-unruly-unique.depth0.txt")
    assert len(puzzles) == len(reference) == 1000
    geos: dict[tuple[int, int], Geometry] = {}
    for (w, h, _, puzzle, solution), (_, empty, forced, closed) in zip(puzzles, reference):
        w, h = int(w), int(h)
        geo = geos.setdefault((w, h), rect_geo(w, h))
        closure = close(geo, cells_of(puzzle))
        assert closure.contradiction is None
        out = list(puzzle)
        for d in closure.fixed.values():
            assert str(d.value) == solution[d.cell]
            assert puzzle[d.cell] == "."
            out[d.cell] = str(d.value)
        assert len(closure.fixed) == int(forced)
        assert "".join(out) == closed
        assert puzzle.count(".") == int(empty)


@pytest.mark.parametrize(("row0", "cell", "value", "rules"), [
    ("00....", 2, 1, ("run",)),      # the two before
    ("..11..", 1, 0, ("run",)),      # the two after
    ("1.1...", 1, 0, ("run",)),      # one on each side
    ("01.0.0", 2, 1, ("balance",)),  # the line already holds three 0s
    ("0.0.0.", 1, 1, ("run", "balance")),
])
def test_each_rule_names_itself(row0, cell, value, rules):
    vals = cells_of(row0 + "." * 30)
    d = close(rect_geo(6, 6), vals).fixed[cell]
    assert (d.value, d.rules, d.tile) == (value, rules, 0)


def test_unique_with_two_blanks():
    # row 1 "01.." with 1 at x=2 would be completed by balance into row 0 "0110"
    vals = cells_of("0110" + "01.." + "." * 8)
    fixed = close(rect_geo(4, 4), vals).fixed
    assert (fixed[6].value, fixed[6].rules) == (0, ("unique",))
    assert (fixed[7].value, fixed[7].rules) == (1, ("balance",))


def test_unique_in_a_column():
    # column 1 reads 0,1,.,. and column 0 is 0,1,1,0: a 1 at (1, 2) would repeat it
    vals = cells_of("00.." + "11.." + "1..." + "0...")
    fixed = close(rect_geo(4, 4), vals).fixed
    assert (fixed[9].value, fixed[9].rules) == (0, ("unique",))


def test_broken_cells_are_a_contradiction():
    assert close(rect_geo(4, 4), cells_of("000" + "." * 13)).contradiction == 0


def overlapping() -> Geometry:
    """Three tiles in a row: 0 and 1 share columns 4-5, 1 and 2 share columns 8-9."""
    tiles = tuple(TileShape(i, 4 * i, 0, 6, 4, ((0, 0, 6, 4),)) for i in range(3))
    return Geometry(Manifest(14, tiles))


def test_fixed_shared_cells_wake_only_revealed_neighbours():
    geo = overlapping()
    G = geo.G
    vals = np.full(G * G, -1, dtype=np.int8)
    # tile 0's row 0 "0 0 1 0 . ." holds three 0s: its shared cells x=4, 5 become 1
    for x, v in enumerate((0, 0, 1, 0)):
        vals[x] = v
    closure = propagate(geo, lambda c: vals[c], lambda t: t in (0, 1), [0])
    assert vals[4] == -1 and closure.fixed[4].value == 1 and closure.fixed[5].value == 1
    assert closure.fixed[4].tile == 0
    assert set(closure.touched) == {0, 1}  # tile 1 was woken; tile 2 is hidden
    hidden = propagate(geo, lambda c: vals[c], lambda t: t == 0, [0])
    assert set(hidden.touched) == {0}
    untouched = propagate(geo, lambda c: vals[c], lambda t: True, [2])
    assert untouched.touched == (2,) and not untouched.fixed


def test_depth1_closes_normal_puzzles_that_depth0_cannot():
    rows = [r for r in read("tatham-unruly-unique.txt") if r[2] == "Normal" and r[0] == "6"][:5]
    geo = rect_geo(6, 6)
    for _, _, _, puzzle, solution in rows:
        vals = cells_of(puzzle)
        shallow = close(geo, vals)
        deep = close(geo, vals, depth=1)
        assert len(shallow.fixed) < puzzle.count(".")
        assert len(deep.fixed) == puzzle.count(".")
        assert all(str(d.value) == solution[d.cell] for d in deep.fixed.values())
        assert any("branch" in d.rules for d in deep.fixed.values())
