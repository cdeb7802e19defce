"""The referee's propagation, exactly as the rules text defines it.

Public signature (the referee classifies accepted cells `forced|guess` with it):

    propagate(geo, known, revealed, tiles, depth=0) -> Closure

- `known(cells: np.ndarray[int64]) -> np.ndarray[int8]`: the values the referee knows
  (-1 unknown) for global cell ids — givens of revealed tiles, shared cells, accepted commits
- `revealed(tile_id) -> bool`: only revealed tiles are evaluated
- `tiles`: where to start; a cell fixed in one tile wakes every other revealed tile covering
  it, so the cost follows the tiles touched, never the field. A revealed tile neither
  started nor woken is not evaluated, so its own deductions are missed: the referee starts
  from a batch's whole revealed reach (`referee.revealed_reach`)
- `Closure.fixed`: cell -> `Deduction(cell, value, rules, tile)` in the order cells were fixed;
  `rules` names the rules that excluded the other value (`run`, `balance`, `unique`, or
  `branch` for bifurcation); `Closure.contradiction` is the tile that ran out of values
  (never on a correct field), `Closure.touched` the tiles evaluated.

Per empty cell and candidate value v, on each of the cell's two lines, v is excluded when
(run) it makes three equal in a row in any of the three positions; (balance) the line
already holds len/2 cells of v; (unique) the line is complete but this cell, or but this
cell and one more blank, and with v it would equal another complete line of the same
orientation and length in the same tile. A cell with exactly one admissible value is
fixed; every line a fixed cell touches is looked at again, until nothing changes. Bifurcation (assume a value,
propagate, a contradiction excludes it) runs only to `depth`, default 0. The tiers are
listed once in `RULES`, cheapest first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

import attrs
import numpy as np
from numba import njit

from actors.field.geometry import Geometry, TileGeom

RULES = ("run", "balance", "unique")  # bit 1, 2, 4 in the kernel; cheapest first
BRANCH = "branch"
RUN, BALANCE, UNIQUE = 1, 2, 4
INVALID = -2  # the cells given to the kernel already break a rule
CONTRADICTION = -1  # some empty cell has no admissible value

Known = Callable[[np.ndarray], np.ndarray]


@attrs.frozen
class Deduction:
    """One cell the propagation fixed: its value, the rules that excluded the other, where."""

    cell: int
    value: int
    rules: tuple[str, ...]
    tile: int


@attrs.frozen
class Closure:
    """The result of `propagate`: fixed cells in order, a contradiction if any, tiles seen."""

    fixed: dict[int, Deduction]
    contradiction: int | None
    touched: tuple[int, ...]


def rule_names(bits: int) -> tuple[str, ...]:
    """The rule names of a kernel reason bitmask."""
    return tuple(name for i, name in enumerate(RULES) if bits & (1 << i))


_NAMES = tuple(rule_names(bits) for bits in range(1 << len(RULES)))


# ---------------------------------------------------------------- numba kernels


@njit(cache=True)
def excluded(vals, i, v, line_ptr, line_cells, line_len, line_group, cell_line, cell_pos,
             cnt):
    """Reason bits (RUN|BALANCE|UNIQUE) that exclude value v at local cell i."""
    bits = 0
    for o in range(2):
        k = cell_line[i, o]
        p = cell_pos[i, o]
        base = line_ptr[k]
        L = line_len[k]
        # run: the two before, the two after, one on each side
        prev1 = p >= 1 and vals[line_cells[base + p - 1]] == v
        next1 = p + 1 < L and vals[line_cells[base + p + 1]] == v
        prev2 = p >= 2 and vals[line_cells[base + p - 2]] == v
        next2 = p + 2 < L and vals[line_cells[base + p + 2]] == v
        if (prev1 and prev2) or (next1 and next2) or (prev1 and next1):
            bits |= RUN
        if cnt[k, v] >= L // 2:
            bits |= BALANCE
        blanks = L - cnt[k, 0] - cnt[k, 1]
        if blanks <= 2:
            g = line_group[k]
            for k2 in range(line_len.size):
                if k2 == k or line_group[k2] != g or cnt[k2, 0] + cnt[k2, 1] != L:
                    continue
                b2 = line_ptr[k2]
                if vals[line_cells[b2 + p]] != v:
                    continue
                same = True
                for q in range(L):
                    a = vals[line_cells[base + q]]
                    if q != p and a >= 0 and a != vals[line_cells[b2 + q]]:
                        same = False
                        break
                if same:
                    bits |= UNIQUE
                    break
    return bits


@njit(cache=True)
def line_counts(vals, line_ptr, line_cells, line_len):
    """Per line, how many 0s and 1s it holds."""
    n_lines = line_len.size
    cnt = np.zeros((n_lines, 2), dtype=np.int32)
    for k in range(n_lines):
        for q in range(line_ptr[k], line_ptr[k + 1]):
            a = vals[line_cells[q]]
            if a >= 0:
                cnt[k, a] += 1
    return cnt


@njit(cache=True)
def consistent(vals, line_ptr, line_cells, line_len, line_group, cnt):
    """True when the known cells break no rule (balance, runs, equal complete lines)."""
    n_lines = line_len.size
    for k in range(n_lines):
        L = line_len[k]
        if cnt[k, 0] > L // 2 or cnt[k, 1] > L // 2:
            return False
        base = line_ptr[k]
        for q in range(2, L):
            a = vals[line_cells[base + q]]
            if a >= 0 and vals[line_cells[base + q - 1]] == a \
                    and vals[line_cells[base + q - 2]] == a:
                return False
        if cnt[k, 0] + cnt[k, 1] == L:
            for k2 in range(k + 1, n_lines):
                if line_group[k2] != line_group[k] or cnt[k2, 0] + cnt[k2, 1] != L:
                    continue
                b2 = line_ptr[k2]
                same = True
                for q in range(L):
                    if vals[line_cells[base + q]] != vals[line_cells[b2 + q]]:
                        same = False
                        break
                if same:
                    return False
    return True


@njit(cache=True)
def fix_point(vals, line_ptr, line_cells, line_len, line_group, cell_line, cell_pos,
              why, order, start):
    """Depth-0 closure of one tile in place.

    Returns the number of cells fixed (their local ids in `order`, reason bits in `why`),
    CONTRADICTION when an empty cell has no admissible value, or INVALID when the given
    cells already break a rule. `start` < 0 checks the cells and looks at every line;
    `start` = i says vals was a closure before cell i was set (by a search), so only what
    cell i touches is looked at (and nothing is checked). Lines wait in a queue: a fixed cell
    re-queues its two lines, a line that becomes complete re-queues its (orientation,
    length) class for the unique rule, so only what can change is looked at again.
    """
    cnt = line_counts(vals, line_ptr, line_cells, line_len)
    n_lines = line_len.size
    queue = np.arange(n_lines, dtype=np.int32)
    queued = np.ones(n_lines, dtype=np.bool_)
    head = 0
    size = n_lines
    if start >= 0:
        queued[:] = False
        size = 0
        size = _wake(start, cnt, line_len, line_group, cell_line, queue, queued, head, 0)
    elif not consistent(vals, line_ptr, line_cells, line_len, line_group, cnt):
        return INVALID
    nfixed = 0
    while size > 0:
        k = queue[head]
        head = (head + 1) % n_lines
        size -= 1
        queued[k] = False
        for q in range(line_ptr[k], line_ptr[k + 1]):
            i = line_cells[q]
            if vals[i] >= 0:
                continue
            e0 = excluded(vals, i, 0, line_ptr, line_cells, line_len, line_group,
                          cell_line, cell_pos, cnt)
            e1 = excluded(vals, i, 1, line_ptr, line_cells, line_len, line_group,
                          cell_line, cell_pos, cnt)
            if e0 and e1:
                return CONTRADICTION
            if not (e0 or e1):
                continue
            v = 1 if e0 else 0
            vals[i] = v
            why[i] = e0 if e0 else e1
            order[nfixed] = i
            nfixed += 1
            cnt[cell_line[i, 0], v] += 1
            cnt[cell_line[i, 1], v] += 1
            size = _wake(i, cnt, line_len, line_group, cell_line, queue, queued, head, size)
    return nfixed


@njit(cache=True)
def _wake(i, cnt, line_len, line_group, cell_line, queue, queued, head, size):
    """Queue the two lines of cell i, and a completed line's whole class; returns size."""
    n_lines = line_len.size
    for o in range(2):
        k2 = cell_line[i, o]
        complete = cnt[k2, 0] + cnt[k2, 1] == line_len[k2]
        for k3 in range(n_lines):
            wake = k3 == k2 or (complete and line_group[k3] == line_group[k2])
            if wake and not queued[k3]:
                queue[(head + size) % n_lines] = k3
                size += 1
                queued[k3] = True
    return size


def tile_fix_point(t: TileGeom, vals: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """Run `fix_point` on one tile's local values (modified in place).

    Returns (status, order of fixed local cells, reason bits per local cell).
    """
    why = np.zeros(t.n, dtype=np.int8)
    order = np.zeros(t.n, dtype=np.int32)
    status = fix_point(vals, t.line_ptr, t.line_cells, t.line_len, t.line_group,
                       t.cell_line, t.cell_pos, why, order, -1)
    return int(status), order[:max(status, 0)], why


# ---------------------------------------------------------------- the field closure


def propagate(geo: Geometry, known: Known, revealed: Callable[[int], bool],
              tiles: Iterable[int], depth: int = 0) -> Closure:
    """The referee's closure of the known cells from `tiles` outward (see the module doc)."""
    fixed: dict[int, Deduction] = {}
    touched: list[int] = []
    bad = _spread(geo, known, revealed, tiles, fixed, touched)
    if bad is None and depth > 0:
        bad = _branch(geo, known, revealed, fixed, touched, depth)
    return Closure(fixed=fixed, contradiction=bad, touched=tuple(dict.fromkeys(touched)))


def _values(geo: Geometry, known: Known, t: int, fixed: dict[int, Deduction]) -> np.ndarray:
    return _overlay(known, fixed)(geo.tiles[t].cells)


def _spread(geo: Geometry, known: Known, revealed: Callable[[int], bool],
            tiles: Iterable[int], fixed: dict[int, Deduction], touched: list[int]) -> int | None:
    """Depth-0 worklist over revealed tiles; returns a contradicting tile or None."""
    queue = deque(t for t in dict.fromkeys(int(t) for t in tiles) if revealed(t))
    queued = set(queue)
    while queue:
        t = queue.popleft()
        queued.discard(t)
        touched.append(t)
        tg = geo.tiles[t]
        status, order, why = tile_fix_point(tg, vals := _values(geo, known, t, fixed))
        if status < 0:
            return t
        shared = geo.shared[t][order].tolist()
        for c, v, bits, sh in zip(tg.cells[order].tolist(), vals[order].tolist(),
                                  why[order].tolist(), shared):
            fixed[c] = Deduction(c, v, _NAMES[bits], t)
            if not sh:
                continue
            for other in geo.tiles_of(c).tolist():
                if other != t and other not in queued and revealed(other):
                    queue.append(other)
                    queued.add(other)
    return None


def _branch(geo: Geometry, known: Known, revealed: Callable[[int], bool],
            fixed: dict[int, Deduction], touched: list[int], depth: int) -> int | None:
    """Bifurcation: a value whose assumption leads to a contradiction (at depth - 1) is
    excluded; the other is fixed with rule `branch` and depth 0 spreads it again."""
    progress = True
    while progress:
        progress = False
        for t in list(dict.fromkeys(touched)):
            tg = geo.tiles[t]
            vals = _values(geo, known, t, fixed)
            for i in np.flatnonzero(vals < 0).tolist():
                c = int(tg.cells[i])
                if c in fixed:
                    continue
                for v in (0, 1):
                    trial = dict(fixed)
                    trial[c] = Deduction(c, v, (), t)
                    sub = propagate(geo, _overlay(known, trial), revealed,
                                    geo.tiles_of(c).tolist(), depth - 1)
                    if sub.contradiction is not None:
                        fixed[c] = Deduction(c, 1 - v, (BRANCH,), t)
                        bad = _spread(geo, known, revealed, geo.tiles_of(c).tolist(),
                                      fixed, touched)
                        if bad is not None:
                            return bad
                        progress = True
                        break
    return None


def _overlay(known: Known, fixed: dict[int, Deduction]) -> Known:
    """`known` with the cells fixed so far (or assumed) laid over it."""
    def values(cells: np.ndarray) -> np.ndarray:
        vals = np.array(known(cells), dtype=np.int8)
        if fixed:
            for i, c in enumerate(cells.tolist()):
                d = fixed.get(c)
                if d is not None:
                    vals[i] = d.value
        return vals
    return values
