"""The generator: a field's tiles, its global solution, the givens, seed tiles, growth.

- `scatter_layout(name, size)` / `generate_scatter(seed, size)`: a whole size x size field
- `generate_chunks(seed, G, chunks, chunk)`: a growing field's first chunks x chunks block
  of `chunk`-sided chunks in the middle of a G x G canvas
- `grow(field)`: one ring of new chunks around the cluster, or None when there is no room

Tiles are filled one at a time, column by column, each with a seeded random solution
that agrees with every cell already fixed (small tiles in sequence avoid the heavy tail
of solving a large grid at once). A slot whose shape has no such solution falls back to
smaller shapes, and is left empty when none fits. Then each new tile gets givens
(`givens.make_givens`); a tile that cannot get them is dropped, and so is every piece of new
tiles cut off from the field's one tile-overlap component (agents cross a field only through
shared cells), until the rest holds.
Existing cells and tile ids never change. Same seed -> byte-identical JSON.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import attrs
import numpy as np

from actors.field.geometry import Geometry, Manifest, TileShape, tile_geom
from actors.field.givens import make_givens
from actors.field.layout import Slot, Wall, rng_for
from actors.field.solve import sample

SEEDS_PER_TILES = 16  # one seed tile per this many tiles of a ring
FILL_NODES = 20_000  # search budget for one tile's fill before trying a smaller shape
PATIENCE = 3  # see givens.py
COUNT_NODES = 300  # see givens.py
REPORTS = 50  # progress reports per stage at most
WALLS = 8  # walls a scatter field tries before giving up

# progress(stage, done, planned): stage "tiles" (slots filled) then "givens"
Progress = Callable[[str, int, int], None]


@attrs.frozen(eq=False)
class Field:
    """A generated field: the public manifest and the secret solution and givens.

    `solution` holds G*G int8 values (-1 for holes); `givens[t]` the ascending global ids
    of tile t's givens.
    """

    manifest: Manifest
    solution: np.ndarray
    givens: tuple[np.ndarray, ...]

    def to_dict(self) -> dict:
        """Manifest, solution rows ('.' for holes) and givens as a JSON-able dict."""
        G = self.manifest.G
        chars = np.array([ord("."), ord("0"), ord("1")], dtype=np.uint8)[self.solution + 1]
        rows = [chars[y * G:(y + 1) * G].tobytes().decode() for y in range(G)]
        return {"manifest": self.manifest.to_dict(), "solution": rows,
                "givens": [g.tolist() for g in self.givens]}

    def to_json(self) -> str:
        """Deterministic JSON text."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: dict) -> Field:
        """Inverse of `to_dict`."""
        manifest = Manifest.from_dict(d["manifest"])
        text = "".join(d["solution"]).encode()
        codes = np.frombuffer(text, dtype=np.uint8)
        solution = np.where(codes == ord("."), -1, codes.astype(np.int16) - ord("0"))
        return cls(manifest, solution.astype(np.int8),
                   tuple(np.asarray(g, dtype=np.int64) for g in d["givens"]))


def name_seed(name: str) -> int:
    """A 64-bit seed from a name (the seed's `scatterLayout(name, size)` fixtures)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")


def scatter_layout(name: str, size: int) -> Field:
    """The scatter field named `name` on a size x size canvas."""
    return generate_scatter(name_seed(name), size)


def generate_scatter(seed: int, size: int, progress: Progress | None = None) -> Field:
    """A whole size x size field: every slot of the wall, seed tiles spread over it.

    A small wall can lose every tile (each tile's givens failing: about one wall in 100 at
    sizes 18 to 20, one in seven at 14, every one at 10 and 11): the next wall then comes
    from a seed derived from `seed`, up to WALLS walls, so the field has at least two
    tiles; ValueError when none has (fields start at protocol.ops.field.MIN_SIZE).
    """
    empty = Field(Manifest(size, (), (), "scatter", (("seed", seed), ("size", size))),
                  np.full(size * size, -1, dtype=np.int8), ())
    for attempt in range(WALLS):
        wall = Wall.of(seed if attempt == 0 else int(rng_for(seed, 7, attempt).integers(2**53)),
                       size)
        field = _add(empty, wall, wall.slots(), Geometry(empty.manifest), progress)
        if len(field.manifest.tiles) >= 2:
            return field
    raise ValueError(f"no wall of seed {seed} holds a {size} x {size} field of two tiles")


def generate_chunks(seed: int, G: int, chunks: int = 3, chunk: int = 40,
                    progress: Progress | None = None) -> Field:
    """A growing field's first chunks x chunks block, in the middle of the G x G canvas."""
    n = G // chunk
    if not 1 <= chunks <= n:
        raise ValueError(f"{chunks} x {chunks} chunks of {chunk} do not fit a {G} canvas")
    start = (n - chunks) // 2
    wall = Wall.of(seed, G)
    empty = Field(Manifest(G, (), (), "chunks", (("chunk", chunk), ("seed", seed))),
                  np.full(G * G, -1, dtype=np.int8), ())
    block = [(i, j) for i in range(start, start + chunks) for j in range(start, start + chunks)]
    return _add_chunks(empty, wall, block, chunk, Geometry(empty.manifest), progress)


def grow(field: Field, geo: Geometry | None = None,
         progress: Progress | None = None) -> Field | None:
    """One ring of new chunks around the cluster; None when the ring adds no tile.

    Existing tiles, ids, solution cells and givens stay as they are; `geo` (the field's
    geometry) saves rebuilding it.
    """
    params = dict(field.manifest.params)
    chunk, seed, G = int(params["chunk"]), int(params["seed"]), field.manifest.G
    n = G // chunk
    have = set(field.manifest.chunks)
    ring = sorted({(i + di, j + dj) for i, j in have for di in (-1, 0, 1) for dj in (-1, 0, 1)
                   if 0 <= i + di < n and 0 <= j + dj < n} - have)
    grown = _add_chunks(field, Wall.of(seed, G), ring, chunk, geo or Geometry(field.manifest),
                        progress)
    return grown if len(grown.manifest.tiles) > len(field.manifest.tiles) else None


def _add_chunks(field: Field, wall: Wall, chunks: list[tuple[int, int]], chunk: int,
                geo: Geometry, progress: Progress | None = None) -> Field:
    """Generate the slots of `chunks` (column by column) and record the chunks."""
    slots = [s for i, j in chunks for s in wall.slots((i * chunk, j * chunk, chunk, chunk))]
    slots.sort(key=lambda s: (s.c, s.r))
    out = _add(field, wall, slots, geo, progress)
    manifest = attrs.evolve(out.manifest,
                            chunks=tuple(sorted(set(field.manifest.chunks) | set(chunks))))
    return attrs.evolve(out, manifest=manifest)


# ---------------------------------------------------------------- the steps


def _reporter(progress: Progress | None, stage: str, planned: int) -> Callable[[int], None]:
    """`report(done)`, calling `progress` about REPORTS times over the stage (and at its end)."""
    step = max(1, planned // REPORTS)

    def report(done: int) -> None:
        if progress is not None and (done % step == 0 or done == planned):
            progress(stage, done, planned)

    return report


def _add(field: Field, wall: Wall, slots: list[Slot], geo: Geometry,
         progress: Progress | None = None) -> Field:
    """Fill `slots` against the field's cells, give the new tiles givens, seat seeds;
    `progress` hears how far each stage got."""
    G, seed = field.manifest.G, wall.seed
    old = field.manifest.tiles
    solution = field.solution.copy()
    placed: list[tuple[Slot, TileShape]] = []
    filled = _reporter(progress, "tiles", len(slots))
    filled(0)
    for done, slot in enumerate(slots, 1):
        for dx, w, h, rects in slot.shapes:
            shape = TileShape(len(old) + len(placed), slot.x + dx, slot.y, w, h, rects)
            tg = tile_geom(shape, G)
            flip = rng_for(seed, 4, slot.c, slot.r).integers(0, 2, tg.n, dtype=np.int8)
            sol = sample(tg, solution[tg.cells], flip, FILL_NODES)
            if sol is not None:
                solution[tg.cells] = sol
                placed.append((slot, shape))
                break
        filled(done)
    givens: dict[tuple[int, int, bytes], np.ndarray | None] = {}
    # Only the first pass reports: a pass after dropped tiles reuses the givens found.
    given = _reporter(progress, "givens", len(placed))
    while True:
        shapes = tuple(attrs.evolve(s, id=len(old) + k) for k, (_, s) in enumerate(placed))
        manifest = attrs.evolve(field.manifest, tiles=old + shapes)
        new_geo = geo.extend(manifest)
        new_givens, failed = [], []
        for k, (slot, _) in enumerate(placed):
            t = len(old) + k
            tg, shared = new_geo.tiles[t], new_geo.shared[t]
            key = (slot.c, slot.r, shared.tobytes())
            if key not in givens:
                givens[key] = make_givens(tg, solution[tg.cells], shared,
                                          rng_for(seed, 5, slot.c, slot.r), PATIENCE,
                                          COUNT_NODES)
            local = givens[key]
            if local is None:
                failed.append(k)
            else:
                new_givens.append(tg.cells[local])
            given(k + 1)
        given = _reporter(None, "givens", 0)
        if not failed:
            # a piece cut off from the rest (a fallback shape without its tabs, a slot left
            # empty) would be a field agents can never cross: drop it like a failed tile
            failed = _cut_off(new_geo, len(old))
            if not failed:
                break
        placed = [p for k, p in enumerate(placed) if k not in set(failed)]
    covered = new_geo.covered
    solution[~covered] = -1
    ring = _seed_tiles(new_geo, range(len(old), len(old) + len(placed)), seed,
                       len(manifest.seed_rings))
    manifest = attrs.evolve(manifest, seed_rings=manifest.seed_rings + ((ring,) if ring else ()))
    return Field(manifest, solution, field.givens + tuple(new_givens))


def _cut_off(geo: Geometry, first: int) -> list[int]:
    """Positions (tile id - first) of the new tiles outside the field's one component.

    With old tiles (ids < first, one component by construction) a new piece stays when it
    overlaps one of them; on an empty field the largest piece stays (the lowest id on ties).
    """
    n = len(geo.tiles)
    label = [-1] * (n - first)
    pieces: list[list[int]] = []
    anchored: list[bool] = []
    for start in range(first, n):
        if label[start - first] >= 0:
            continue
        piece, stack, joined = [start], [start], False
        label[start - first] = len(pieces)
        while stack:
            for u in geo.neighbours[stack.pop()]:
                if u < first:
                    joined = True
                elif label[u - first] < 0:
                    label[u - first] = len(pieces)
                    piece.append(u)
                    stack.append(u)
        pieces.append(piece)
        anchored.append(joined)
    if first == 0 and pieces:
        best = max(range(len(pieces)), key=lambda p: (len(pieces[p]), -p))
        anchored[best] = True
    return sorted(t - first for p, piece in enumerate(pieces) if not anchored[p] for t in piece)


def _seed_tiles(geo: Geometry, tiles: range, seed: int, ring: int) -> tuple[int, ...]:
    """Seed tiles spread over `tiles`: a seeded first pick, then farthest-point picks."""
    ids = np.asarray(list(tiles), dtype=np.int64)
    if ids.size == 0:
        return ()
    centres = np.array([(t.shape.x0 + t.shape.w / 2, t.shape.y0 + t.shape.h / 2)
                        for t in (geo.tiles[i] for i in ids)])
    k = max(1, round(ids.size / SEEDS_PER_TILES))
    first = int(rng_for(seed, 6, ring).integers(ids.size))
    picks = [first]
    dist = np.hypot(*(centres - centres[first]).T)
    while len(picks) < k:
        nxt = int(np.argmax(dist))
        picks.append(nxt)
        dist = np.minimum(dist, np.hypot(*(centres - centres[nxt]).T))
    return tuple(sorted(int(ids[p]) for p in picks))
