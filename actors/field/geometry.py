"""Mosaic geometry: tile shapes, their lines, and the field manifest.

A field is a G x G canvas of binary cells; cell id = y * G + x. A tile is a union of
rectangles `[lx, ly, w, h]` inside its bounding box at (x0, y0). A line is a maximal
horizontal or vertical run of one tile's cells. Tiles overlap: a shared cell belongs to
every tile covering it; cells no tile covers are holes.

Public API (stable; the fold, referee and observe build on it):

- `valid_line_count(L)`, `m_for(cells)`, `check_shape(w, h, rects)` / `ShapeError`
- `TileShape` — the JSON-able description of one tile (id, x0, y0, w, h, rects)
- `TileGeom` — one tile's precomputed cells and lines (numpy arrays, local cell indices;
  all but the cells are computed once per shape and shared read-only)
- `Manifest` — G, tile shapes, seed tiles and layout facts; `to_json()` / `Manifest.from_json()`
  are deterministic (same manifest -> byte-identical text)
- `Geometry` — built from a manifest: per tile `TileGeom`, neighbours and shared cells, the
  cell -> tiles index (`tiles_of(cell)`), the covered mask and holes; `extend()` for growth.
"""

from __future__ import annotations

import json
from functools import cache, lru_cache
from typing import Any

import attrs
import numpy as np

G_MAX = 1000
# m, the most solutions a tile alone may keep: by cell count (2 up to 64, 3 up to 196, 4 above)
M_BOUNDS = ((64, 2), (196, 3))
M_ABOVE = 4

H, V = 0, 1  # line orientations


class ShapeError(ValueError):
    """A tile shape that cannot carry a valid solution, or lies outside the canvas."""


@cache
def valid_line_count(length: int) -> int:
    """How many distinct valid lines of `length` exist (balanced, no three equal adjacent).

    2, 6, 14, 34, 84, ... for L = 2, 4, 6, 8, 10; 0 for odd or non-positive lengths.
    """
    if length <= 0 or length % 2:
        return 0
    half = length // 2
    # DP over (zeros used, ones used, last value, run length 1|2)
    ways: dict[tuple[int, int, int, int], int] = {(1, 0, 0, 1): 1, (0, 1, 1, 1): 1}
    for _ in range(length - 1):
        nxt: dict[tuple[int, int, int, int], int] = {}
        for (z, o, last, run), n in ways.items():
            for v in (0, 1):
                r = run + 1 if v == last else 1
                nz, no = z + (v == 0), o + (v == 1)
                if r > 2 or nz > half or no > half:
                    continue
                key = (nz, no, v, r)
                nxt[key] = nxt.get(key, 0) + n
        ways = nxt
    return sum(ways.values())


def m_for(cells: int) -> int:
    """The m bound of a tile with `cells` cells: 2 up to 64, 3 up to 196, 4 above."""
    for limit, m in M_BOUNDS:
        if cells <= limit:
            return m
    return M_ABOVE


def _mask(w: int, h: int, rects: tuple[tuple[int, int, int, int], ...]) -> np.ndarray:
    mask = np.zeros((h, w), dtype=bool)
    for lx, ly, rw, rh in rects:
        mask[ly:ly + rh, lx:lx + rw] = True
    return mask


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, start, length) of every maximal run of True along the rows of a 2-d mask."""
    padded = np.zeros((mask.shape[0], mask.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    d = np.diff(padded, axis=1)
    rows, starts = np.nonzero(d == 1)
    _, ends = np.nonzero(d == -1)
    return rows, starts, ends - starts


def _check_lines(mask: np.ndarray) -> None:
    for orient, grid in ((H, mask), (V, mask.T)):
        name = "horizontal" if orient == H else "vertical"
        lengths = _runs(grid)[2]
        odd = lengths[lengths % 2 == 1]
        if odd.size:
            raise ShapeError(f"a {name} line of odd length {int(odd[0])}")
        for length, n in zip(*np.unique(lengths, return_counts=True)):
            if n > valid_line_count(int(length)):
                raise ShapeError(f"{n} {name} lines of length {length}, but only "
                                 f"{valid_line_count(int(length))} valid lines of that "
                                 "length exist")


def check_shape(w: int, h: int, rects: tuple[tuple[int, int, int, int], ...]) -> None:
    """Raise `ShapeError` unless the shape's lines are all even and not too many per length.

    Rects must lie inside the w x h box, the box must be tight (every row and column used),
    every line even (>= 2), and per orientation no more lines of a length L than
    `valid_line_count(L)` — otherwise the tile could have no solution.
    """
    _checked_mask(w, h, rects)


def _checked_mask(w: int, h: int, rects: tuple[tuple[int, int, int, int], ...]) -> np.ndarray:
    if w < 2 or h < 2 or not rects:
        raise ShapeError(f"tile box {w}x{h} with {len(rects)} rects is too small")
    for r in rects:
        lx, ly, rw, rh = r
        if rw < 1 or rh < 1 or lx < 0 or ly < 0 or lx + rw > w or ly + rh > h:
            raise ShapeError(f"rect {list(r)} lies outside the {w}x{h} box")
    mask = _mask(w, h, rects)
    if not mask.any(axis=1).all() or not mask.any(axis=0).all():
        raise ShapeError(f"the {w}x{h} box is not tight around its rects")
    _check_lines(mask)
    return mask


@attrs.frozen
class TileShape:
    """One tile as the manifest states it: bounding box at (x0, y0) and local rects."""

    id: int
    x0: int
    y0: int
    w: int
    h: int
    rects: tuple[tuple[int, int, int, int], ...]

    def to_json(self) -> dict:
        """The tile as a JSON-able dict."""
        return {"id": self.id, "x0": self.x0, "y0": self.y0, "w": self.w, "h": self.h,
                "rects": [list(r) for r in self.rects]}

    @classmethod
    def from_json(cls, d: dict) -> TileShape:
        """Inverse of `to_json`."""
        return cls(int(d["id"]), int(d["x0"]), int(d["y0"]), int(d["w"]), int(d["h"]),
                   tuple(tuple(int(v) for v in r) for r in d["rects"]))


@attrs.frozen(eq=False)
class TileGeom:
    """A tile's cells and lines, precomputed. Local cell index i refers to `cells[i]`.

    - `cells`: global cell ids, ascending (row-major inside the tile)
    - `local`: h x w int32 map from box position to local index, -1 outside the tile
    - lines in CSR form: line k holds local cells `line_cells[line_ptr[k]:line_ptr[k+1]]`
      in order along the line; `line_orient[k]` is H or V; `line_len[k]` its length;
      `line_group[k]` numbers the (orientation, length) classes whose lines must differ
    - `cell_line[i] = (horizontal line, vertical line)`, `cell_pos[i]` the positions in them

    Every array but `cells` is read-only: tiles of one shape share them.
    """

    shape: TileShape
    cells: np.ndarray
    local: np.ndarray
    line_ptr: np.ndarray
    line_cells: np.ndarray
    line_orient: np.ndarray
    line_len: np.ndarray
    line_group: np.ndarray
    cell_line: np.ndarray
    cell_pos: np.ndarray
    m: int

    @property
    def id(self) -> int:
        """The tile id."""
        return self.shape.id

    @property
    def n(self) -> int:
        """Number of cells."""
        return int(self.cells.size)

    def line(self, k: int) -> np.ndarray:
        """Local cell indices of line k, in order along the line."""
        return self.line_cells[self.line_ptr[k]:self.line_ptr[k + 1]]

    def local_of(self, cells: np.ndarray, G: int) -> np.ndarray:
        """Local indices of global `cells` (which must lie in the tile)."""
        ys, xs = np.divmod(np.asarray(cells, dtype=np.int64), G)
        return self.local[ys - self.shape.y0, xs - self.shape.x0]


def tile_geom(shape: TileShape, G: int) -> TileGeom:
    """Precompute one tile's cells and lines; raises `ShapeError` for a bad shape.

    All but the cells depend on the shape alone: they are computed once per (w, h, rects)
    and shared by every tile of that shape, on any canvas.
    """
    ly, lx, lines = _shape_lines(shape.w, shape.h, shape.rects)
    if shape.x0 < 0 or shape.y0 < 0 or shape.x0 + shape.w > G or shape.y0 + shape.h > G:
        raise ShapeError(f"tile {shape.id} at ({shape.x0}, {shape.y0}) size "
                         f"{shape.w}x{shape.h} leaves the {G}x{G} canvas")
    return TileGeom(shape=shape, cells=(ly + shape.y0) * G + (lx + shape.x0), **lines)


# Shapes whose lines are kept (least recently used out): walls of any size and seed draw
# from 234 (layout.py); the bound keeps other manifests' shapes from piling up.
SHAPE_CACHE = 1024


@lru_cache(maxsize=SHAPE_CACHE)
def _shape_lines(w: int, h: int, rects: tuple[tuple[int, int, int, int], ...]
                 ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """(row, column) in the box of each local cell, and `TileGeom`'s shape-only fields."""
    ly, lx = np.nonzero(_checked_mask(w, h, rects))  # row-major order
    n = ly.size
    local = np.full((h, w), -1, dtype=np.int32)
    local[ly, lx] = np.arange(n, dtype=np.int32)
    members, orient, lengths = [], [], []
    cell_line = np.zeros((n, 2), dtype=np.int32)
    cell_pos = np.zeros((n, 2), dtype=np.int32)
    first = 0  # id of the orientation's first line
    for o, grid in ((H, local), (V, local.T)):
        rows, starts, runs = _runs(grid >= 0)
        line = np.repeat(np.arange(runs.size, dtype=np.int32), runs)
        pos = (np.arange(line.size) - np.repeat(np.cumsum(runs) - runs, runs)).astype(np.int32)
        idx = grid[np.repeat(rows, runs), np.repeat(starts, runs) + pos]
        cell_line[idx, o] = line + first
        cell_pos[idx, o] = pos
        members.append(idx)
        orient.append(np.full(runs.size, o, dtype=np.int32))
        lengths.append(runs.astype(np.int32))
        first += runs.size
    line_orient = np.concatenate(orient)
    line_len = np.concatenate(lengths)
    # lines of one (orientation, length) class must differ: number the classes
    _, line_group = np.unique(line_orient * (2 * G_MAX + 2) + line_len, return_inverse=True)
    lines = {
        "local": local, "line_ptr": np.concatenate(([0], np.cumsum(line_len))).astype(np.int32),
        "line_cells": np.concatenate(members).astype(np.int32), "line_orient": line_orient,
        "line_len": line_len, "line_group": line_group.astype(np.int32).reshape(-1),
        "cell_line": cell_line, "cell_pos": cell_pos}
    ly, lx = ly.astype(np.int64, copy=False), lx.astype(np.int64, copy=False)
    for a in (ly, lx, *lines.values()):
        a.flags.writeable = False
    return ly, lx, {**lines, "m": m_for(n)}


@attrs.frozen
class Manifest:
    """What a field is: canvas size, tile shapes, seed tiles and the layout that made it.

    `seed_rings[r]` lists the seed tiles of growth ring r (ring 0 = the initial field);
    `seed_tiles` is their concatenation. `layout` and `params` record how the field was
    generated (for growth and for people reading the file); `chunks` lists the chunks
    (i, j) a growing field has generated. Tile ids are 0..len(tiles)-1.
    """

    G: int
    tiles: tuple[TileShape, ...]
    seed_rings: tuple[tuple[int, ...], ...] = ()
    layout: str = "scatter"
    params: tuple[tuple[str, int | str], ...] = ()
    chunks: tuple[tuple[int, int], ...] = ()

    @property
    def seed_tiles(self) -> tuple[int, ...]:
        """All seed tiles, ring by ring."""
        return tuple(t for ring in self.seed_rings for t in ring)

    def to_dict(self) -> dict:
        """The manifest as a JSON-able dict."""
        return {"G": self.G, "layout": self.layout, "params": dict(self.params),
                "tiles": [t.to_json() for t in self.tiles],
                "seed_rings": [list(r) for r in self.seed_rings],
                "seed_tiles": list(self.seed_tiles), "chunks": [list(c) for c in self.chunks]}

    def to_json(self) -> str:
        """Deterministic JSON text (sorted keys, compact separators)."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: dict) -> Manifest:
        """Inverse of `to_dict`; tile ids must run 0..n-1 in order."""
        tiles = tuple(TileShape.from_json(t) for t in d["tiles"])
        for i, t in enumerate(tiles):
            if t.id != i:
                raise ShapeError(f"tile ids must run 0..n-1 in order; tile #{i} has id {t.id}")
        return cls(G=int(d["G"]), tiles=tiles,
                   seed_rings=tuple(tuple(int(t) for t in r) for r in d.get("seed_rings", [])),
                   layout=str(d.get("layout", "scatter")),
                   params=tuple(sorted(d.get("params", {}).items())),
                   chunks=tuple((int(i), int(j)) for i, j in d.get("chunks", [])))

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        """Parse `to_json` output."""
        return cls.from_dict(json.loads(text))


class Geometry:
    """Everything derived from a manifest, built once and shared read-only.

    - `tiles[t]`: `TileGeom`; `neighbours[t]`: sorted tile ids sharing a cell with t
    - `shared[t]`: bool per local cell, True where another tile covers it too
    - `tiles_of(cell)`: the tiles covering a global cell (CSR `cell_ptr` / `cell_tiles`)
    - `covered`: bool per global cell; `holes`: number of uncovered cells inside the
      bounding box of all tiles (the rest of a large canvas is unallocated space)
    """

    def __init__(self, manifest: Manifest, _reuse: tuple[TileGeom, ...] = ()):
        G = manifest.G
        if not 2 <= G <= G_MAX:
            raise ShapeError(f"G must be in 2..{G_MAX}, not {G}")
        self.manifest = manifest
        self.G = G
        self.tiles: tuple[TileGeom, ...] = _reuse + tuple(
            tile_geom(s, G) for s in manifest.tiles[len(_reuse):])
        self._index()
        self._listings: list[dict[str, object] | None] = [None] * len(self.tiles)

    def listing(self, t: int) -> dict[str, object]:
        """The part of tile t's public listing that never changes (id, box, rects, cells,
        m, neighbours), built on first use and shared: its values are tuples and ints, so
        no caller can change it; copy it to add more."""
        view = self._listings[t]
        if view is None:
            tg = self.tiles[t]
            sh = tg.shape
            view = self._listings[t] = {
                "id": t, "x0": sh.x0, "y0": sh.y0, "w": sh.w, "h": sh.h, "rects": sh.rects,
                "cells": tg.n, "m": tg.m, "neighbours": self.neighbours[t]}
        return view

    def _index(self) -> None:
        G = self.G
        n_tiles = len(self.tiles)
        sizes = np.fromiter((t.n for t in self.tiles), dtype=np.int64, count=n_tiles)
        flat = (np.concatenate([t.cells for t in self.tiles]) if n_tiles
                else np.zeros(0, dtype=np.int64))
        owner = np.repeat(np.arange(n_tiles, dtype=np.int32), sizes)
        order = np.argsort(flat, kind="stable")
        flat, owner = flat[order], owner[order]
        counts = np.bincount(flat, minlength=G * G)
        self.cell_ptr = np.zeros(G * G + 1, dtype=np.int32)
        np.cumsum(counts, out=self.cell_ptr[1:])
        self.cell_tiles = owner
        self.covered = counts > 0
        # neighbour pairs: owners of the same cell, k apart in the cell-sorted order
        a_parts, b_parts = [], []
        for k in range(1, int(counts.max(initial=1))):
            same = flat[k:] == flat[:-k]
            a_parts.append(owner[:-k][same])
            b_parts.append(owner[k:][same])
        a = np.concatenate(a_parts) if a_parts else np.zeros(0, dtype=np.int64)
        b = np.concatenate(b_parts) if b_parts else np.zeros(0, dtype=np.int64)
        lo, hi = np.minimum(a, b).astype(np.int64), np.maximum(a, b).astype(np.int64)
        keys = np.unique(lo * n_tiles + hi)
        lo, hi = np.divmod(keys, max(n_tiles, 1))
        both = np.concatenate([lo, hi])
        other = np.concatenate([hi, lo])
        order2 = np.lexsort((other, both))
        both, other = both[order2], other[order2]
        bounds = np.searchsorted(both, np.arange(n_tiles + 1))
        self.neighbours: tuple[tuple[int, ...], ...] = tuple(
            tuple(int(v) for v in other[bounds[t]:bounds[t + 1]]) for t in range(n_tiles))
        self.shared: tuple[np.ndarray, ...] = tuple(counts[t.cells] > 1 for t in self.tiles)
        if n_tiles:
            ys, xs = np.divmod(flat, G)
            box = (int(ys.max()) - int(ys.min()) + 1) * (int(xs.max()) - int(xs.min()) + 1)
            self.holes = box - int(self.covered.sum())
        else:
            self.holes = 0

    def tiles_of(self, cell: int) -> np.ndarray:
        """Ids of the tiles covering global `cell` (empty for a hole)."""
        return self.cell_tiles[self.cell_ptr[cell]:self.cell_ptr[cell + 1]]

    def is_hole(self, cell: int) -> bool:
        """True when no tile covers `cell` (or it lies outside the canvas)."""
        return not (0 <= cell < self.G * self.G) or not self.covered[cell]

    def shared_cells(self, a: int, b: int) -> np.ndarray:
        """Global ids of the cells tiles a and b both cover (ascending)."""
        return np.intersect1d(self.tiles[a].cells, self.tiles[b].cells, assume_unique=True)

    def extend(self, manifest: Manifest) -> Geometry:
        """Geometry of a grown manifest whose first tiles are this one's (ids continue)."""
        old = self.manifest.tiles
        if manifest.G != self.G or manifest.tiles[:len(old)] != old:
            raise ShapeError("a grown manifest must keep G and every existing tile")
        return Geometry(manifest, _reuse=self.tiles)
