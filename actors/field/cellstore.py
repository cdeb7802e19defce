"""A persistent chunked array: the field's per-cell (and per-tile) state.

A store of `size` values is a tuple of read-only numpy chunks of CHUNK values.
An update copies only the chunks it touches and shares the rest with the store
it came from, so every earlier state keeps its own values (spectators scrub
history) and a commit costs the chunks it touches, not the canvas: a G = 1000
field is 245 chunks, and a batch inside one tile touches one or two.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import numpy as np

CHUNK_BITS = 12
CHUNK = 1 << CHUNK_BITS  # values per chunk
_MASK = CHUNK - 1


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@attrs.frozen(eq=False)
class CellStore:
    """`size` values of one numpy dtype; never mutated, updated by copy-on-write."""

    size: int
    fill: int
    chunks: tuple[np.ndarray, ...] = attrs.field(repr=False)

    @classmethod
    def new(cls, size: int, dtype: type | np.dtype, fill: int = 0) -> CellStore:
        """A store of `size` copies of `fill`; all chunks share one read-only block."""
        if size < 0:
            raise ValueError(f"size must be >= 0, got {size}")
        n = (size + _MASK) >> CHUNK_BITS
        block = _frozen(np.full(CHUNK, fill, dtype=dtype))
        return cls(size, fill, (block,) * n)

    @classmethod
    def of(cls, values: np.ndarray, fill: int) -> CellStore:
        """A store holding `values` (its dtype); chunks of nothing but `fill` share one
        block, as in a store that `new` made and `set` never touched there."""
        size = len(values)
        n = (size + _MASK) >> CHUNK_BITS
        padded = np.full(n * CHUNK, fill, dtype=values.dtype)
        padded[:size] = values
        block = _frozen(np.full(CHUNK, fill, dtype=values.dtype))
        return cls(size, fill, tuple(
            block if (part == fill).all() else _frozen(part.copy())
            for part in padded.reshape(n, CHUNK)))

    @property
    def dtype(self) -> np.dtype:
        """The element type."""
        return self.chunks[0].dtype if self.chunks else np.dtype(np.int64)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i: int) -> int:
        if not 0 <= i < self.size:
            raise IndexError(f"index {i} outside 0..{self.size - 1}")
        return int(self.chunks[i >> CHUNK_BITS][i & _MASK])

    def take(self, ids: np.ndarray | list[int]) -> np.ndarray:
        """The values at `ids` (a new writable array, in the order given)."""
        ids = self._check(ids)
        out = np.empty(len(ids), dtype=self.dtype)
        for c, pos in self._groups(ids):
            out[pos] = self.chunks[c][ids[pos] & _MASK]
        return out

    def set(self, ids: np.ndarray | list[int], values: np.ndarray | list[int] | int) -> CellStore:
        """A new store with `values` at `ids`; untouched chunks are shared.

        Ids should be distinct; with repeats the last value given wins.
        """
        ids = self._check(ids)
        if len(ids) == 0:
            return self
        vals = np.broadcast_to(np.asarray(values, dtype=self.dtype), ids.shape)
        chunks = list(self.chunks)
        for c, pos in self._groups(ids):
            block = chunks[c].copy()
            block[ids[pos] & _MASK] = vals[pos]
            chunks[c] = _frozen(block)
        return CellStore(self.size, self.fill, tuple(chunks))

    def extend(self, size: int) -> CellStore:
        """The same values followed by `fill` up to `size` (per-tile stores grow)."""
        if size < self.size:
            raise ValueError(f"cannot shrink a store from {self.size} to {size}")
        grown = CellStore.new(size, self.dtype, self.fill)
        keep = (self.size + _MASK) >> CHUNK_BITS
        if keep and self.size & _MASK:
            # The last partial chunk may hold stale slots past `size`: reset them.
            last = self.chunks[keep - 1].copy()
            last[self.size & _MASK:] = self.fill
            head = (*self.chunks[:keep - 1], _frozen(last))
        else:
            head = self.chunks[:keep]
        return CellStore(size, self.fill, head + grown.chunks[keep:])

    def to_array(self) -> np.ndarray:
        """All values as one new array (for snapshots and brute-force checks)."""
        if not self.chunks:
            return np.empty(0, dtype=self.dtype)
        return np.concatenate(self.chunks)[: self.size]

    def shared_chunks(self, other: CellStore) -> int:
        """How many chunks this store shares (by identity) with `other`."""
        return sum(a is b for a, b in zip(self.chunks, other.chunks, strict=False))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CellStore):
            return NotImplemented
        return self.size == other.size and all(
            a is b or np.array_equal(a, b) for a, b in zip(self.chunks, other.chunks, strict=True)
        )

    __hash__ = None  # type: ignore[assignment]

    # ---------------------------------------------------------------- private

    def _check(self, ids: np.ndarray | list[int]) -> np.ndarray:
        arr = np.asarray(ids, dtype=np.int64).reshape(-1)
        if len(arr) and (arr.min() < 0 or arr.max() >= self.size):
            raise IndexError(f"ids outside 0..{self.size - 1}")
        return arr

    @staticmethod
    def _groups(ids: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
        """(chunk, positions into ids) per touched chunk, positions in input order."""
        if not len(ids):
            return
        chunk_of = ids >> CHUNK_BITS
        lo, hi = int(chunk_of.min()), int(chunk_of.max())
        if lo == hi:
            yield lo, np.arange(len(ids))
        elif hi - lo < 8:
            # a tile spans a few row bands of a wide canvas: a mask per band is cheapest
            for c in range(lo, hi + 1):
                pos = np.flatnonzero(chunk_of == c)
                if len(pos):
                    yield c, pos
        else:
            order = np.argsort(chunk_of, kind="stable")
            starts = np.flatnonzero(np.diff(chunk_of[order])) + 1
            for part in np.split(order, starts):
                yield int(chunk_of[part[0]]), part
