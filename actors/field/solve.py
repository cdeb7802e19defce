"""Tile solver and counter: depth-first search over the referee's own propagation.

`count(tile, vals, cap)` counts a tile's solutions up to `cap`; `solutions(tile, vals, cap)`
returns them; `sample(tile, vals, flip)` finds one solution with a seeded value order (the
generator's fill). Each search node runs the depth-0 closure of `propagate.fix_point`, then
branches on the first empty cell, so every complete node is a valid tile (each value was
admissible when set, which checks runs, balance and equal complete lines).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from actors.field.geometry import TileGeom
from actors.field.propagate import excluded, fix_point, line_counts


@njit(cache=True)
def search(vals0, line_ptr, line_cells, line_len, line_group, cell_line, cell_pos,
           cap, flip, sols, max_nodes):
    """Enumerate solutions extending vals0 (-1 = empty) until `cap` are found.

    The first value tried at cell i is flip[i]; solutions go to sols[:min(count, rows)].
    Returns the count (at most cap), or -1 when `max_nodes` (> 0) search nodes did not
    settle it.
    """
    n = vals0.size
    if n == 0:
        return 0
    stack = np.empty((n + 1, n), dtype=np.int8)
    cells = np.full(n + 1, -1, dtype=np.int32)
    tried = np.zeros(n + 1, dtype=np.int8)
    why = np.zeros(n, dtype=np.int8)
    order = np.zeros(n, dtype=np.int32)
    stack[0, :] = vals0
    if fix_point(stack[0], line_ptr, line_cells, line_len, line_group, cell_line, cell_pos,
                 why, order, -1) < 0:
        return 0
    count = 0
    level = 0
    cells[0] = _pick(stack[0], line_ptr, line_cells, line_len, cell_line)
    nodes = 0
    while level >= 0:
        nodes += 1
        if max_nodes > 0 and nodes > max_nodes:
            return -1
        i = cells[level]
        if i < 0:
            if count < sols.shape[0]:
                sols[count, :] = stack[level]
            count += 1
            if count >= cap:
                return count
            level -= 1
            continue
        if tried[level] == 2:
            level -= 1
            continue
        v = flip[i] ^ tried[level]
        tried[level] += 1
        nxt = stack[level + 1]
        nxt[:] = stack[level]
        cnt = line_counts(nxt, line_ptr, line_cells, line_len)
        if excluded(nxt, i, v, line_ptr, line_cells, line_len, line_group, cell_line, cell_pos,
                    cnt):
            continue
        nxt[i] = v
        if fix_point(nxt, line_ptr, line_cells, line_len, line_group, cell_line, cell_pos,
                     why, order, i) < 0:
            continue
        level += 1
        cells[level] = _pick(nxt, line_ptr, line_cells, line_len, cell_line)
        tried[level] = 0
    return count


@njit(cache=True)
def _pick(vals, line_ptr, line_cells, line_len, cell_line):
    """The empty cell whose two lines have the fewest blanks (-1 when none is empty)."""
    n_lines = line_len.size
    blanks = np.zeros(n_lines, dtype=np.int32)
    for k in range(n_lines):
        for q in range(line_ptr[k], line_ptr[k + 1]):
            if vals[line_cells[q]] < 0:
                blanks[k] += 1
    best = -1
    best_score = 1 << 30
    for i in range(vals.size):
        if vals[i] < 0:
            a = blanks[cell_line[i, 0]]
            b = blanks[cell_line[i, 1]]
            score = min(a, b) * 1024 + a + b
            if score < best_score:
                best_score = score
                best = i
    return best


def _run(t: TileGeom, vals: np.ndarray, cap: int, flip: np.ndarray,
         rows: int, max_nodes: int = 0) -> tuple[int, np.ndarray]:
    vals = np.asarray(vals, dtype=np.int8)
    if vals.shape != (t.n,):
        raise ValueError(f"tile {t.id} has {t.n} cells, not {vals.size}")
    sols = np.zeros((rows, t.n), dtype=np.int8)
    n = search(vals, t.line_ptr, t.line_cells, t.line_len, t.line_group, t.cell_line,
               t.cell_pos, cap, flip, sols, max_nodes)
    return int(n), sols[:max(0, min(int(n), rows))]


def count(t: TileGeom, vals: np.ndarray, cap: int) -> int:
    """Number of solutions of tile t with the fixed local values `vals` (-1 empty), up to cap."""
    return _run(t, vals, cap, np.zeros(t.n, dtype=np.int8), 0)[0]


def solutions(t: TileGeom, vals: np.ndarray, cap: int) -> np.ndarray:
    """Up to `cap` solutions (rows of local values), in lexicographic order."""
    sols = _run(t, vals, cap, np.zeros(t.n, dtype=np.int8), cap)[1]
    return sols[np.lexsort(sols.T[::-1])] if len(sols) else sols


def sample(t: TileGeom, vals: np.ndarray, flip: np.ndarray,
           max_nodes: int = 0) -> np.ndarray | None:
    """One solution, trying value flip[i] first at cell i; None when there is none or
    `max_nodes` (> 0) search nodes did not find one."""
    n, sols = _run(t, vals, 1, np.asarray(flip, dtype=np.int8), 1, max_nodes)
    return sols[0] if n > 0 else None
