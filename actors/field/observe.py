"""What an agent (or a spectator) is shown of a field: tiles, earned values, frontier, health.

- `{agent}`: the group's territory, every tile whose bounding box comes within
  OBSERVE_RADIUS cells (Chebyshev, box to box) of a territory tile's box, and the
  frontier. The map is public: hidden tiles are listed with shape, cell count and m;
  only givens and values are earned, so `known` holds the known cells of the listed
  revealed and solved tiles. The result carries the agent's health and, at warning or
  death, a note.
- `{rect}`: the tiles whose bounding box meets the rectangle.
- neither: every tile, only on fields up to MAX_FULL_G cells a side (the seed's 120).

Under fog a hidden tile is listed only once the caller's group reaches it (see
territory.py); without an agent, fog lists no hidden tile. A listing longer than
MAX_OBSERVE_TILES is cut (`truncated`): frontier tiles first, then revealed ones, then
the rest nearest the agent's seed tile (or the rectangle's centre).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from actors.field.fold import HIDDEN, REVEALED, STATUS_NAMES, State
from actors.field.health import health_note, health_of
from actors.field.referee import not_joined
from actors.field.territory import frontier, reached, territory
from actors.world import Refusal

OBSERVE_RADIUS = 24
MAX_OBSERVE_TILES = 600
MAX_FULL_G = 120  # full listings: the seed's "only on fields up to 120 cells a side"


def observe(s: State, agent: str | None = None,
            rect: tuple[int, int, int, int] | list[int] | None = None) -> dict[str, Any] | Refusal:
    """The observation for `agent` and/or `rect` (see the module doc) as a JSON value."""
    if s.geo is None:
        return Refusal("bad_request", "the field has no manifest yet")
    i = None
    if agent is not None:
        i = s.agent_index(agent)
        if i is None:
            return not_joined(agent)
    boxes = s.boxes
    n = len(boxes)
    if rect is not None:
        box = _rect(s, rect)
        if isinstance(box, Refusal):
            return box
        listed = np.flatnonzero(_meets(boxes, np.array([box]), 0))
        centre = (box[0] + box[2] / 2, box[1] + box[3] / 2)
    elif i is not None:
        terr = territory(s, i)
        listed = np.union1d(np.flatnonzero(_meets(boxes, boxes[terr], OBSERVE_RADIUS)),
                            frontier(s, i))
        seed = boxes[s.agents[i].seed_tile]
        centre = (seed[0] + seed[2] / 2, seed[1] + seed[3] / 2)
    else:
        if s.manifest.G > MAX_FULL_G:
            return Refusal("too_large", f"full listings exist only on fields up to {MAX_FULL_G} "
                           "cells a side; observe {agent} or {rect}")
        listed = np.arange(n)
        centre = (s.manifest.G / 2, s.manifest.G / 2)
    status = s.status.take(listed) if len(listed) else np.zeros(0, np.int8)
    front = frontier(s, i) if i is not None else []
    if s.rules.fog:
        reach = reached(s, i) if i is not None else set()
        keep = (status != HIDDEN) | np.isin(listed, sorted(reach))
        listed, status = listed[keep], status[keep]
    listed, status, truncated = _cut(s, listed, status, set(front), centre)
    out: dict[str, Any] = {
        "revision": s.revision, "G": s.manifest.G, "fog": s.rules.fog, "ended": s.ended,
        "tiles": [_tile_view(s, int(t), int(st)) for t, st in zip(listed, status, strict=True)],
        "known": _known(s, listed[status != HIDDEN]),
        "tiles_total": n, "holes": s.geo.holes,
        "agents": [{"id": a.id, "name": a.name, "group": s.agents[s.groups.find(j)].id,
                    "seed_tile": a.seed_tile, "health": health_of(s.stats[j].health).to_json()}
                   for j, a in enumerate(s.agents)],
        "totals": attrs.asdict(s.totals),
    }
    if i is not None:
        h = health_of(s.stats[i].health)
        out.update(agent=agent, frontier=front, territory=territory(s, i), health=h.to_json())
        note = health_note(h)
        if note is not None:
            out["note"] = note
    if truncated:
        out["truncated"] = True
    out.update(grown=len(s.grown), field=field_settings(s))
    return out


def field_settings(s: State) -> dict[str, Any]:
    """The settings the field was started with: kind (scatter or field), canvas side,
    chunk side, seed, growth (`{every_minutes}` or None), fog, guess policy, depth."""
    m = s.manifest
    params = dict(m.params)
    every = params.get("grow_every")
    out: dict[str, Any] = {
        "kind": "scatter" if m.layout == "scatter" else "field", "G": m.G,
        "seed": params.get("seed"),
        "grow": None if not every else {"every_minutes": float(every) / 60},
        "fog": s.rules.fog, "guess": s.rules.guess, "depth": s.rules.depth}
    if "chunk" in params:
        out["chunk"] = params["chunk"]
    return out


def _rect(s: State, rect: object) -> np.ndarray | Refusal:
    G = s.manifest.G
    ok = isinstance(rect, list | tuple) and len(rect) == 4 and all(
        isinstance(v, int) and not isinstance(v, bool) for v in rect)
    if not ok or rect[2] < 1 or rect[3] < 1 or not (0 <= rect[0] < G and 0 <= rect[1] < G):
        return Refusal("bad_request", f"args.rect: [x, y, w, h] with x, y in 0..{G - 1} and "
                       "w, h >= 1", {"path": "args.rect"})
    # Clipped to the canvas: what a rectangle costs is bounded by the field, not the ask.
    x, y, w, h = rect
    return np.array([x, y, min(w, G - x), min(h, G - y)], dtype=np.int64)


def _meets(boxes: np.ndarray, targets: np.ndarray, radius: int) -> np.ndarray:
    """Per tile box: whether it comes within `radius` (Chebyshev) of any target box.

    The union of the grown targets is painted on a mask cropped to their extent, and
    each box is tested with a summed-area table, so the cost follows the listing region
    and the tile count, not a tile-by-target product.
    """
    if not len(targets) or not len(boxes):
        return np.zeros(len(boxes), dtype=bool)
    gx0, gy0 = targets[:, 0] - radius, targets[:, 1] - radius
    gx1, gy1 = targets[:, 0] + targets[:, 2] + radius, targets[:, 1] + targets[:, 3] + radius
    ox, oy = int(gx0.min()), int(gy0.min())
    mask = np.zeros((int(gy1.max()) - oy, int(gx1.max()) - ox), dtype=np.int32)
    for x0, y0, x1, y1 in zip((gx0 - ox).tolist(), (gy0 - oy).tolist(),
                              (gx1 - ox).tolist(), (gy1 - oy).tolist(), strict=True):
        mask[y0:y1, x0:x1] = 1
    sat = np.zeros((mask.shape[0] + 1, mask.shape[1] + 1), dtype=np.int64)
    sat[1:, 1:] = mask.cumsum(0).cumsum(1)
    h, w = mask.shape
    x0 = np.clip(boxes[:, 0] - ox, 0, w)
    y0 = np.clip(boxes[:, 1] - oy, 0, h)
    x1 = np.clip(boxes[:, 0] + boxes[:, 2] - ox, 0, w)
    y1 = np.clip(boxes[:, 1] + boxes[:, 3] - oy, 0, h)
    return (sat[y1, x1] - sat[y0, x1] - sat[y1, x0] + sat[y0, x0]) > 0


def _cut(s: State, listed: np.ndarray, status: np.ndarray, front: set[int],
         centre: tuple[float, float]) -> tuple[np.ndarray, np.ndarray, bool]:
    if len(listed) <= MAX_OBSERVE_TILES:
        return listed, status, False
    b = s.boxes[listed]
    dist = np.hypot(b[:, 0] + b[:, 2] / 2 - centre[0], b[:, 1] + b[:, 3] / 2 - centre[1])
    rank = np.where(np.isin(listed, sorted(front)), 0, np.where(status == REVEALED, 1, 2))
    keep = np.sort(np.lexsort((listed, dist, rank))[:MAX_OBSERVE_TILES])
    return listed[keep], status[keep], True


def _tile_view(s: State, t: int, status: int) -> dict[str, Any]:
    view = dict(s.geo.listing(t))
    solver = s.solver[t]
    view["status"] = STATUS_NAMES[status]
    view["agent"] = s.agents[solver].id if solver >= 0 else None
    return view


def _known(s: State, tiles: np.ndarray) -> list[list[int]]:
    """[cell, value] for every known cell of the given (revealed or solved) tiles."""
    if not len(tiles):
        return []
    cells = np.unique(np.concatenate([s.geo.tiles[int(t)].cells for t in tiles]))
    vals = s.values.take(cells)
    ok = vals >= 0
    return np.stack([cells[ok], vals[ok].astype(np.int64)], axis=1).tolist()
