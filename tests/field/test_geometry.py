"""Geometry: line counts, m, shape checks, lines of a tile, the manifest and its index."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.field.geometry import (
    Geometry,
    Manifest,
    ShapeError,
    TileShape,
    check_shape,
    m_for,
    tile_geom,
    valid_line_count,
)


def brute_valid_lines(length: int) -> int:
    """Count balanced lines without three equal adjacent by enumeration."""
    n = 0
    for bits in itertools.product((0, 1), repeat=length):
        if sum(bits) * 2 != length:
            continue
        if any(bits[i] == bits[i + 1] == bits[i + 2] for i in range(length - 2)):
            continue
        n += 1
    return n


def test_valid_line_counts_match_enumeration():
    assert [valid_line_count(L) for L in (2, 4, 6, 8, 10)] == [2, 6, 14, 34, 84]
    for L in range(1, 15):
        assert valid_line_count(L) == brute_valid_lines(L), L


@pytest.mark.parametrize(("cells", "m"), [(4, 2), (64, 2), (65, 3), (196, 3), (197, 4)])
def test_m_bounds(cells, m):
    assert m_for(cells) == m


def test_plus_of_two_12x4_bars_is_rejected():
    with pytest.raises(ShapeError, match=r"^8 horizontal lines of length 4, but only 6 valid"):
        check_shape(12, 12, ((0, 4, 12, 4), (4, 0, 4, 12)))


@pytest.mark.parametrize(("w", "h", "rects", "message"), [
    (5, 4, ((0, 0, 5, 4),), r"^a horizontal line of odd length 5$"),
    (4, 4, ((0, 0, 4, 4), (1, 0, 4, 1)), r"^rect \[1, 0, 4, 1\] lies outside the 4x4 box$"),
    (6, 6, ((0, 0, 4, 4),), r"^the 6x6 box is not tight around its rects$"),
    (4, 8, ((0, 0, 4, 8),), r"^8 horizontal lines of length 4, but only 6 valid"),
])
def test_bad_shapes(w, h, rects, message):
    with pytest.raises(ShapeError, match=message):
        check_shape(w, h, rects)


def brute_lines(mask: np.ndarray) -> set[tuple[int, tuple[tuple[int, int], ...]]]:
    """Maximal runs of a mask as (orientation, ((x, y), ...)) found cell by cell."""
    out = set()
    for orient, grid in ((0, mask), (1, mask.T)):  # rows of the transpose are the columns
        for r in range(grid.shape[0]):
            c = 0
            while c < grid.shape[1]:
                if grid[r, c]:
                    run = []
                    while c < grid.shape[1] and grid[r, c]:
                        run.append((c, r) if orient == 0 else (r, c))
                        c += 1
                    out.add((orient, tuple(run)))
                c += 1
    return out


rect_st = st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(1, 4),
                    st.integers(1, 4)).map(lambda r: (2 * r[0], 2 * r[1], 2 * r[2], 2 * r[3]))


@settings(max_examples=60, deadline=None)
@given(st.lists(rect_st, min_size=1, max_size=3))
def test_lines_are_the_maximal_runs(rects):
    w = max(r[0] + r[2] for r in rects)
    h = max(r[1] + r[3] for r in rects)
    shape = TileShape(0, 3, 2, w, h, tuple(rects))
    try:
        t = tile_geom(shape, 30)
    except ShapeError:
        return  # rejected shapes are checked in test_bad_shapes
    mask = t.local >= 0
    G = 30
    got = set()
    for k in range(len(t.line_len)):
        cells = t.cells[t.line(k)]
        got.add((int(t.line_orient[k]), tuple((int(c % G) - 3, int(c // G) - 2) for c in cells)))
        assert t.line_len[k] % 2 == 0
    assert got == brute_lines(mask)
    # every cell sits in exactly one line per orientation, at its position
    for i in range(t.n):
        for o in (0, 1):
            assert t.line(int(t.cell_line[i, o]))[t.cell_pos[i, o]] == i
    assert np.all(np.diff(t.cells) > 0)
    assert t.m == m_for(t.n)


def two_tiles() -> Manifest:
    a = TileShape(0, 0, 0, 8, 8, ((0, 2, 8, 4), (2, 0, 4, 8)))  # a plus
    b = TileShape(1, 6, 0, 6, 6, ((0, 0, 6, 6),))
    c = TileShape(2, 0, 10, 4, 4, ((0, 0, 4, 4),))
    return Manifest(14, (a, b, c), seed_rings=((0, 2),))


def test_geometry_index_neighbours_shared_holes():
    geo = Geometry(two_tiles())
    assert geo.neighbours == ((1,), (0,), ())
    shared = geo.shared_cells(0, 1)
    expected = sorted(y * 14 + x for y in range(2, 6) for x in (6, 7))
    assert shared.tolist() == expected
    assert geo.shared[0].sum() == len(expected) and geo.shared[2].sum() == 0
    assert geo.tiles_of(2 * 14 + 6).tolist() == [0, 1]
    assert geo.tiles_of(0).tolist() == []
    assert geo.is_hole(0) and not geo.is_hole(2) and geo.is_hole(-1) and geo.is_hole(196)
    covered = 48 + 36 - len(expected) + 16
    assert geo.holes == 12 * 14 - covered  # the tiles' bounding box is 12 wide, 14 tall
    assert int(geo.covered.sum()) == covered


def test_manifest_json_is_deterministic_and_round_trips():
    m = two_tiles()
    text = m.to_json()
    assert Manifest.from_json(text) == m
    assert Manifest.from_json(text).to_json() == text
    assert m.seed_tiles == (0, 2)


def test_manifest_rejects_bad_ids_and_geometry_rejects_bad_tiles():
    d = two_tiles().to_dict()
    d["tiles"][1]["id"] = 5
    with pytest.raises(ShapeError, match=r"^tile ids must run 0..n-1 in order; tile #1 has id 5$"):
        Manifest.from_dict(d)
    off = Manifest(10, (TileShape(0, 6, 0, 6, 6, ((0, 0, 6, 6),)),))
    with pytest.raises(ShapeError, match=r"^tile 0 at \(6, 0\) size 6x6 leaves the 10x10 canvas$"):
        Geometry(off)


def test_extend_keeps_tiles_and_adds_neighbours():
    m = two_tiles()
    geo = Geometry(m)
    d = TileShape(3, 2, 6, 4, 6, ((0, 0, 4, 6),))  # overlaps tile 2 and the plus's foot
    grown = geo.extend(Manifest(14, m.tiles + (d,)))
    assert grown.tiles[:3] == geo.tiles
    assert grown.neighbours[3] == (0, 2)
    assert 3 in grown.neighbours[2]
    moved = Manifest(14, (m.tiles[1], m.tiles[0]))
    with pytest.raises(ShapeError, match=r"^a grown manifest must keep G and every existing tile$"):
        geo.extend(moved)


def test_tiles_of_one_shape_share_its_lines_read_only_and_keep_their_own_cells():
    rects = ((0, 2, 8, 4), (2, 0, 4, 8))  # a plus
    a = tile_geom(TileShape(0, 0, 0, 8, 8, rects), 14)
    b = tile_geom(TileShape(3, 30, 12, 8, 8, rects), 40)
    shared = ("local", "line_ptr", "line_cells", "line_orient", "line_len", "line_group",
              "cell_line", "cell_pos")
    for name in shared:  # computed once for the shape, whatever the canvas and place
        assert getattr(b, name) is getattr(a, name), name
        with pytest.raises(ValueError, match=r"read-only"):
            getattr(b, name).flat[0] = 7
    ly, lx = np.nonzero(a.local >= 0)
    assert a.cells.tolist() == (ly * 14 + lx).tolist()
    assert b.cells.tolist() == ((ly + 12) * 40 + lx + 30).tolist()
    b.cells[0] = -1  # each tile's cells are its own
    assert a.cells[0] == 2 and b.m == a.m == m_for(48)
    with pytest.raises(ShapeError, match=r"^tile 4 at \(34, 0\) size 8x8 leaves the 40x40 "):
        tile_geom(TileShape(4, 34, 0, 8, 8, rects), 40)
