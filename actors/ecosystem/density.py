"""The density fields as spectators get them: downsampled and quantised to bytes.

A 64x64 run has one float32 plane per species plus the resource; spectators get each
plane as `side` x `side` block means (nearest cells when the grid does not divide into
blocks), scaled by the plane's maximum to 0..255, base64-encoded row by row. The
figures are a picture of the state, not part of the replay contract.

A run keeps a `Coarse` picture of every generation (16 x 16, the bytes only: about 1.3 KB
a generation for four species) so a scrubber can show the fields of any generation
without simulating again.
"""

from __future__ import annotations

import base64
from typing import Any

import attrs
import numpy as np

from actors.ecosystem.engine import RunState

SPECTATOR_SIDE = 32
HISTORY_SIDE = 16
LEVELS = 255


def downsample(plane: np.ndarray, side: int = SPECTATOR_SIDE) -> np.ndarray:
    """A square plane reduced (or, when smaller, repeated) to `side` x `side` float64."""
    n = plane.shape[0]
    if n == side:
        return plane.astype(np.float64)
    if n > side and n % side == 0:
        k = n // side
        return plane.astype(np.float64).reshape(side, k, side, k).mean(axis=(1, 3))
    idx = (np.arange(side) * n) // side
    return plane[np.ix_(idx, idx)].astype(np.float64)


def quantise(plane: np.ndarray) -> tuple[float, bytes]:
    """(scale, bytes): each cell as round(255 x value / scale); scale is the maximum."""
    scale = float(plane.max()) if plane.size else 0.0
    if not scale > 0.0:
        return 0.0, bytes(plane.size)
    levels = np.rint(np.clip(plane / scale, 0.0, 1.0) * LEVELS).astype(np.uint8)
    return round(scale, 6), levels.tobytes()


def spectator_side(size: int) -> int:
    """The side spectators get for a grid of `size`: 32, or the grid itself when smaller."""
    return min(SPECTATOR_SIDE, size)


def _encoded(scale: float, data: bytes) -> dict[str, Any]:
    return {"scale": scale, "data": base64.b64encode(data).decode("ascii")}


def density_frame(state: RunState, side: int = SPECTATOR_SIDE) -> dict[str, Any]:
    """`{"generation", "side", "species": {id: {"scale", "data"}}, "resource": {...}}`;
    `data` is base64 of side*side bytes, row-major; a cell's density is byte/255 x scale."""

    def encoded(plane: np.ndarray) -> dict[str, Any]:
        return _encoded(*quantise(downsample(plane, side)))

    return {"generation": state.generation, "side": side,
            "species": {sid: encoded(state.fields.fields[k]) for k, sid in enumerate(state.ids)},
            "resource": encoded(state.fields.resource)}


@attrs.frozen
class Coarse:
    """One generation's planes (species in order, then the resource) at `side`, quantised:
    `scales[k]` and `side * side` bytes of plane k in `data`."""

    generation: int
    side: int
    ids: tuple[str, ...]
    scales: tuple[float, ...]
    data: bytes

    def as_json(self) -> dict[str, Any]:
        """The `density_frame` shape."""
        n = self.side * self.side
        planes = [_encoded(scale, self.data[k * n:(k + 1) * n])
                  for k, scale in enumerate(self.scales)]
        return {"generation": self.generation, "side": self.side,
                "species": dict(zip(self.ids, planes[:-1], strict=True)),
                "resource": planes[-1]}


def coarse(state: RunState, side: int = HISTORY_SIDE) -> Coarse:
    """The coarse picture of the run's latest generation (every plane in one pass)."""
    f = state.fields
    n = state.size
    side = min(side, n)
    planes = np.concatenate([f.fields, f.resource[None]]).astype(np.float64)
    if n != side:
        if n % side == 0:
            k = n // side
            planes = planes.reshape(len(planes), side, k, side, k).mean(axis=(2, 4))
        else:
            idx = (np.arange(side) * n) // side
            planes = planes[:, idx][:, :, idx]
    scales = planes.max(axis=(1, 2))
    safe = np.where(scales > 0.0, scales, 1.0)[:, None, None]
    levels = np.rint(np.clip(planes / safe, 0.0, 1.0) * LEVELS).astype(np.uint8)
    return Coarse(state.generation, side, tuple(state.ids),
                  tuple(round(float(s), 6) if s > 0.0 else 0.0 for s in scales),
                  levels.tobytes())
