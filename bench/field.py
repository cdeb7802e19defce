"""`python -m bench field`: the mosaic engine's generator and propagation speed.

Figures are CPU seconds of this one process (`process_time`: numba runs on one core, and
on a shared machine wall time mostly measures the neighbours); `*_wall_*` figures give
wall-clock time next to them. Numba kernels are warmed up first.

* `tiles_per_s_8x8`, `tiles_per_s_12x12`: standalone rectangular tiles made from scratch —
  a seeded random solution plus givens (2..m solutions, alternatives differing on the
  cells an ear-shaped overlap would share); goal >= 200/s for ~64 cells
* `scatter_100_s`: a 100 x 100 scatter field (median of 3 seeds); goal < 2 s
* `grow_ring_1000_s`: the first growth ring around a 3 x 3 chunk start on a G = 1000 canvas
* `propagate_ms_per_tile_median`: tile by tile over the 100 x 100 field, reveal (givens
  known), propagate from the tile, commit its solution; the time of each propagate call
  divided by the tiles it touched, median; goal < 0.2 ms
* `full_1000_*` (skipped with `--quick`): a G = 1000 chunked field grown ring by ring until
  no room is left: tiles, seconds, and memory (process RSS growth, and the bytes of the
  field's and geometry's numpy arrays)
* `bench/_field_play.py` (fold throughput, commit cost G=1000 vs G=100, commit cost over a
  wide revealed reach), merged when present.
"""

from __future__ import annotations

import gc
import importlib.util
import statistics
import sys
import time

import numpy as np


def _log(msg: str) -> None:
    print(f"field: {msg}", file=sys.stderr)


def _tiles_per_s(side: int, n: int) -> float:
    from actors.field.generate import COUNT_NODES, PATIENCE
    from actors.field.geometry import Geometry, Manifest, TileShape
    from actors.field.givens import make_givens
    from actors.field.layout import rng_for
    from actors.field.solve import sample

    shape = TileShape(0, 0, 0, side, side, ((0, 0, side, side),))
    t = Geometry(Manifest(side, (shape,))).tiles[0]
    shared = np.zeros(t.n, dtype=bool)
    shared[t.local[1:-1, :2].ravel()] = True  # an incoming ear and an outgoing one
    shared[t.local[1:-1, -2:].ravel()] = True
    empty = np.full(t.n, -1, dtype=np.int8)
    made = 0
    t0 = time.process_time()
    for k in range(n):
        rng = rng_for(side, 9, k)
        sol = sample(t, empty, rng.integers(0, 2, t.n, dtype=np.int8))
        if sol is not None and make_givens(t, sol, shared, rng, PATIENCE,
                                           COUNT_NODES) is not None:
            made += 1
    return made / (time.process_time() - t0)


def _propagation(field) -> dict:
    from actors.field.geometry import Geometry
    from actors.field.propagate import propagate

    geo = Geometry(field.manifest)
    known = np.full(geo.G * geo.G, -1, dtype=np.int8)
    revealed = np.zeros(len(geo.tiles), dtype=bool)
    per_tile, per_batch, touched = [], [], []
    for t, tg in enumerate(geo.tiles):
        revealed[t] = True
        known[field.givens[t]] = field.solution[field.givens[t]]
        t0 = time.process_time()
        closure = propagate(geo, known.take, revealed.__getitem__, [t])
        dt = time.process_time() - t0
        per_batch.append(dt)
        per_tile.append(dt / max(1, len(closure.touched)))
        touched.append(len(closure.touched))
        known[tg.cells] = field.solution[tg.cells]  # the agent commits the tile
    return {"propagate_ms_per_tile_median": round(statistics.median(per_tile) * 1e3, 4),
            "propagate_ms_per_batch_median": round(statistics.median(per_batch) * 1e3, 4),
            "propagate_touched_median": statistics.median(touched),
            "propagate_goal_ms_per_tile": 0.2}


def _array_bytes(field, geo) -> int:
    total = field.solution.nbytes + sum(g.nbytes for g in field.givens)
    total += geo.cell_ptr.nbytes + geo.cell_tiles.nbytes + geo.covered.nbytes
    total += sum(s.nbytes for s in geo.shared)
    for t in geo.tiles:
        total += sum(getattr(t, f).nbytes for f in ("cells", "local", "line_ptr", "line_cells",
                                                  "line_orient", "line_len", "line_group",
                                                  "cell_line", "cell_pos"))
    return total


def _full_1000(seed: int) -> dict:
    import psutil

    from actors.field.generate import generate_chunks, grow
    from actors.field.geometry import Geometry

    gc.collect()
    rss0 = psutil.Process().memory_info().rss
    t0, w0 = time.process_time(), time.perf_counter()
    field = generate_chunks(seed, 1000, 3, 40)
    geo = Geometry(field.manifest)
    rings = 0
    while True:
        grown = grow(field, geo)
        if grown is None:
            break
        field, rings = grown, rings + 1
        geo = geo.extend(field.manifest)
        _log(f"full 1000: ring {rings}, {len(field.manifest.tiles)} tiles")
    dt, wall = time.process_time() - t0, time.perf_counter() - w0
    gc.collect()
    rss = psutil.Process().memory_info().rss - rss0
    return {"full_1000_tiles": len(field.manifest.tiles), "full_1000_rings": rings,
            "full_1000_s": round(dt, 1), "full_1000_wall_s": round(wall, 1),
            "full_1000_rss_mb": round(rss / 2**20, 1),
            "full_1000_array_mb": round(_array_bytes(field, geo) / 2**20, 1)}


def main(argv: list[str]) -> dict:
    """Run the field benchmark; `--quick` skips the full G = 1000 field."""
    from actors.field.generate import generate_chunks, generate_scatter, grow

    quick = "--quick" in argv
    _log("warming the numba kernels")
    generate_scatter(0, 24)
    out: dict = {"machine_note": "one process; the machine may be shared"}
    out["tiles_per_s_8x8"] = round(_tiles_per_s(8, 300), 1)
    out["tiles_per_s_12x12"] = round(_tiles_per_s(12, 40), 1)
    out["tiles_goal_per_s_64_cells"] = 200
    _log(f"tiles: {out['tiles_per_s_8x8']}/s 8x8, {out['tiles_per_s_12x12']}/s 12x12")
    times, walls, fields = [], [], []
    for seed in (1, 2, 3):
        t0, w0 = time.process_time(), time.perf_counter()
        fields.append(generate_scatter(seed, 100))
        times.append(time.process_time() - t0)
        walls.append(time.perf_counter() - w0)
    out["scatter_100_s"] = round(statistics.median(times), 3)
    out["scatter_100_wall_s"] = round(statistics.median(walls), 3)
    out["scatter_100_tiles"] = len(fields[1].manifest.tiles)
    out["scatter_goal_s"] = 2.0
    _log(f"scatter 100: {out['scatter_100_s']} s")
    start = generate_chunks(7, 1000, 3, 40)
    t0, w0 = time.process_time(), time.perf_counter()
    ring = grow(start)
    out["grow_ring_1000_s"] = round(time.process_time() - t0, 3)
    out["grow_ring_1000_wall_s"] = round(time.perf_counter() - w0, 3)
    out["grow_ring_1000_new_tiles"] = len(ring.manifest.tiles) - len(start.manifest.tiles)
    _log(f"grow ring: {out['grow_ring_1000_s']} s")
    out.update(_propagation(fields[1]))
    if not quick:
        out.update(_full_1000(7))
    if importlib.util.find_spec("bench._field_play") is not None:
        from bench import _field_play

        _log("play figures from bench/_field_play.py")
        out.update(_field_play.fold_throughput(fields[1]))
        out.update(_field_play.commit_cost(fields[1]))
        out.update(_field_play.reach_cost(fields[1]))
    return out
