"""A fold `State` as compact JSON and back: what a field's store snapshot holds.

`state_from_json(state_to_json(s)) == s`, and every read of the two states answers the
same (the geometry and tile boxes are derived again from the manifest). Numpy arrays (the
per-cell and per-tile stores, each agent's health ring) are held as base64 text of their
zlib-compressed little-endian bytes: exact, and small where a canvas is mostly unknown
(a 1000 x 1000 field's three per-cell stores are 6 MB of values). Everything else is
plain JSON values.
"""

from __future__ import annotations

import base64
import zlib
from typing import Any

import attrs
import numpy as np

from actors.field.cellstore import CellStore
from actors.field.events import GameRules
from actors.field.fold import AgentInfo, AgentStats, Groups, State, Totals, boxes_of
from actors.field.geometry import Geometry, Manifest
from actors.field.health import HealthWindow

STORES = ("values", "source", "owner", "status", "revealer", "solver")  # CellStore fields
_EMPTY = State()  # each store's fill


def pack(a: np.ndarray) -> list[str]:
    """An integer array as [its dtype's name, base64 text of its compressed
    little-endian bytes]."""
    raw = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
    return [a.dtype.name, base64.b64encode(zlib.compress(raw, 1)).decode("ascii")]


def unpack(packed: list[str]) -> np.ndarray:
    """The array `pack` wrote, as a new read-only array."""
    name, text = packed
    dtype = np.dtype(name)
    raw = zlib.decompress(base64.b64decode(text, validate=True))
    a = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype)
    a.flags.writeable = False
    return a


def state_to_json(s: State) -> dict[str, Any]:
    """The state as a JSON value (see the module doc)."""
    return {
        "revision": s.revision, "ended": s.ended, "grown": list(s.grown),
        "manifest": None if s.manifest is None else s.manifest.to_dict(),
        "rules": attrs.asdict(s.rules),
        **{name: pack(getattr(s, name).to_array()) for name in STORES},
        "agents": [attrs.astuple(a) for a in s.agents],
        "stats": [_stats_to_json(st) for st in s.stats],
        "groups": [list(s.groups.parent), list(s.groups.size)],
        "totals": attrs.asdict(s.totals),
        "batch_hist": list(s.batch_hist), "gap_hist": list(s.gap_hist),
        "dirty": sorted(s.dirty),
    }


def state_from_json(d: dict[str, Any]) -> State:
    """Inverse of `state_to_json` (KeyError, TypeError or ValueError on a value it is not)."""
    manifest = None if d["manifest"] is None else Manifest.from_dict(d["manifest"])
    geo = None if manifest is None else Geometry(manifest)
    stores = {}
    for name in STORES:
        stores[name] = CellStore.of(unpack(d[name]), getattr(_EMPTY, name).fill)
    agents = tuple(AgentInfo(*a) for a in d["agents"])
    parent, size = d["groups"]
    return State(
        revision=d["revision"], manifest=manifest, geo=geo,
        boxes=_EMPTY.boxes if geo is None else boxes_of(geo), rules=GameRules(**d["rules"]),
        ended=d["ended"], grown=tuple(d["grown"]), **stores, agents=agents,
        ids={a.id: i for i, a in enumerate(agents)},
        stats=tuple(_stats_from_json(st) for st in d["stats"]),
        groups=Groups(tuple(parent), tuple(size)), totals=Totals(**d["totals"]),
        batch_hist=tuple(d["batch_hist"]), gap_hist=tuple(d["gap_hist"]),
        dirty=frozenset(d["dirty"]))


def _stats_to_json(st: AgentStats) -> dict[str, Any]:
    out = attrs.asdict(st, recurse=False, filter=lambda f, _v: f.name != "health",
                       value_serializer=lambda _i, _f, v: list(v) if isinstance(v, tuple) else v)
    w = st.health
    out["health"] = [pack(w.outcomes), w.pos, w.fill, w.wrong, w.died_at]
    return out


def _stats_from_json(d: dict[str, Any]) -> AgentStats:
    ring, pos, fill, wrong, died_at = d["health"]
    window = HealthWindow(unpack(ring), pos, fill, wrong, died_at)
    return AgentStats(**{k: tuple(v) if isinstance(v, list) else v
                         for k, v in d.items() if k != "health"}, health=window)


_EMPTY_RING = AgentStats().health.outcomes
