"""Play-side figures for `python -m bench field` (imported and merged by bench/field.py).

- `fold_throughput(field)`: one agent plays a whole field honestly (reveal the frontier,
  commit each tile's unknown cells); the recorded events are then replayed, and the
  figure is accepted cells folded per second of replay.
- `commit_cost(field, copies)`: the same sequence of commits (the same tiles, the same
  cells) on the field itself and on a G = copies * size canvas filled with copies of it
  (copies = 10 turns a 100 field into a full G = 1000 one); per commit the time of the
  referee's decision plus the fold. Goal: the large field's median within 1.5x of the
  small one's.

- `reach_cost(field)`: the commit cost the exact forced/guess classification pays when a
  group leaves many tiles revealed and unsolved: after some tiles played honestly, every
  hidden frontier tile is revealed and left open, then one-cell commits inside one of them
  are decided (not folded, so each sees the same state); the propagation covers the whole
  linked reach of revealed tiles.

Times are CPU seconds of this process (`process_time`: the machine may be shared); progress
goes to stderr.
"""

from __future__ import annotations

import statistics
import sys
import time

import attrs
import numpy as np

from actors.field import referee
from actors.field.events import GameRules, JoinEvent, ManifestEvent, is_noop
from actors.field.fold import HIDDEN, State, apply_event, new_state, replay
from actors.field.generate import Field
from actors.field.geometry import Manifest, TileShape
from actors.field.territory import frontier


def _start(field: Field, seed_tile: int) -> State:
    s = apply_event(new_state(), ManifestEvent(rev=1, t=0, manifest=field.manifest,
                                               rules=GameRules()))
    return apply_event(s, JoinEvent(rev=2, t=0, agent="a1", name="bench", model="-",
                                    user="bench", harness="bench", seed_tile=seed_tile))


def _play(field: Field, s: State, tiles: int | None, timed: list[float] | None) -> tuple[State, list]:
    """Honest play from `s`: reveal the first frontier tile, commit its unknown cells.

    Stops after `tiles` commits (None: when the frontier is empty). Appends each commit's
    decide + fold time to `timed`.
    """
    events = []
    commits = 0
    while tiles is None or commits < tiles:
        fr = frontier(s, 0)
        if not fr:
            break
        tile = fr[0]
        if s.status[tile] == HIDDEN:
            ev = referee.reveal(s, field, agent="a1", tile=tile, t=0)
            s = apply_event(s, ev)
            events.append(ev)
        cells = s.geo.tiles[tile].cells
        unknown = cells[s.values.take(cells) < 0]
        batch = [[c, int(field.solution[c])] for c in unknown.tolist()]
        t0 = time.process_time()
        ev = referee.commit(s, field, agent="a1", cells=batch, intent="bench", t=0)
        if not is_noop(ev):
            s = apply_event(s, ev)
        if timed is not None:
            timed.append(time.process_time() - t0)
        if not is_noop(ev):
            events.append(ev)
        commits += 1
    return s, events


def fold_throughput(field: Field) -> dict:
    """Accepted cells folded per second when replaying an honest game of the whole field."""
    seed = field.manifest.seed_tiles[0]
    start = _start(field, seed)
    print(f"field play: playing {len(field.manifest.tiles)} tiles", file=sys.stderr)
    final, events = _play(field, start, None, None)
    cells = sum(len(ev.accepted) for ev in events if hasattr(ev, "accepted"))
    t0 = time.process_time()
    again = replay(events, start=start)
    dt = time.process_time() - t0
    if again != final:
        raise RuntimeError("replaying the game's events did not reproduce its final state")
    return {"fold_cells_per_s": round(cells / dt), "fold_events_per_s": round(len(events) / dt),
            "fold_cells": cells, "fold_events": len(events)}


def tiled(field: Field, copies: int) -> tuple[Field, int]:
    """`field` repeated copies x copies times on a larger canvas; and the middle copy's index.

    Copy k holds tile j of the original as tile k * n + j, so copy k's tiles solve exactly
    like the original's.
    """
    m, size = field.manifest, field.manifest.G
    G, n = size * copies, len(field.manifest.tiles)
    tiles, givens, rings = [], [], []
    solution = np.full((G, G), -1, dtype=np.int8)
    small = field.solution.reshape(size, size)
    for k in range(copies * copies):
        ox, oy = (k % copies) * size, (k // copies) * size
        tiles += [TileShape(k * n + t.id, t.x0 + ox, t.y0 + oy, t.w, t.h, t.rects) for t in m.tiles]
        solution[oy:oy + size, ox:ox + size] = small
        givens += [(g // size + oy) * G + g % size + ox for g in field.givens]
        rings += [k * n + t for t in m.seed_tiles]
    manifest = attrs.evolve(m, G=G, tiles=tuple(tiles), seed_rings=(tuple(rings),))
    middle = (copies // 2) * copies + copies // 2
    return Field(Manifest.from_dict(manifest.to_dict()), solution.reshape(-1), tuple(givens)), middle


def commit_cost(field: Field, copies: int = 10, tiles: int = 30, rounds: int = 3) -> dict:
    """Median decide + fold time of the same `tiles` commits on the field and on its tiling.

    One untimed pass warms the kernels and caches; then `rounds` passes alternate
    between the two fields, so drift on a shared machine hits both alike.
    """
    seed = field.manifest.seed_tiles[0]
    print(f"field play: tiling {copies} x {copies} copies", file=sys.stderr)
    big, middle = tiled(field, copies)
    starts = {"small": (field, _start(field, seed)),
              "large": (big, _start(big, middle * len(field.manifest.tiles) + seed))}
    _play(field, starts["small"][1], tiles, None)
    times: dict[str, list[float]] = {"small": [], "large": []}
    for _ in range(rounds):
        for name, (f, s) in starts.items():
            _play(f, s, tiles, times[name])
    small_ms = statistics.median(times["small"]) * 1e3
    big_ms = statistics.median(times["large"]) * 1e3
    return {"commit_ms_median_small": round(small_ms, 3), "commit_ms_median_large": round(big_ms, 3),
            "commit_small_G": field.manifest.G, "commit_large_G": big.manifest.G,
            "commit_large_tiles": len(big.manifest.tiles), "commit_ratio": round(big_ms / small_ms, 3),
            "commit_goal_ratio": 1.5}


def reach_cost(field: Field, solved: int = 20, cells: int = 30) -> dict:
    """Median decide time of one-cell commits when the revealed reach is wide."""
    s, _ = _play(field, _start(field, field.manifest.seed_tiles[0]), solved, None)
    for tile in frontier(s, 0):
        if s.status[tile] == HIDDEN:
            s = apply_event(s, referee.reveal(s, field, agent="a1", tile=tile, t=0))
    open_tiles = [t for t in frontier(s, 0) if s.status[t] != HIDDEN]
    tile = max(open_tiles, key=lambda t: len(referee.revealed_reach(s, {t})))
    reach = len(referee.revealed_reach(s, {tile}))
    unknown = [c for c in s.geo.tiles[tile].cells.tolist() if s.values[c] < 0][:cells]
    times = []
    for c in unknown:
        t0 = time.process_time()
        referee.commit(s, field, agent="a1", cells=[[c, int(field.solution[c])]], intent="b", t=0)
        times.append(time.process_time() - t0)
    ms = statistics.median(times) * 1e3
    return {"reach_commit_ms_median": round(ms, 3), "reach_tiles": reach,
            "reach_ms_per_tile": round(ms / reach, 4)}
