"""Givens: which cells of a solved tile to show so that the tile alone stays ambiguous.

Starting from the full solution, cells are removed in a seeded order; a removal stays
when the tile then has at most m solutions and any two of them differ on a cell the tile
shares with a neighbour, and is undone otherwise (a removed cell that propagation from
the remaining givens fixes again changes nothing, so it needs no count). The result has 2..m solutions (or the
caller tries another order). After the count first reaches 2, `patience` undone removals
in a row end the pass early, and a count that needs more than `max_nodes` search nodes
counts as undone: more givens, same guarantees, far less time (exhaustive counts near the
minimum have a heavy tail).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from actors.field.geometry import TileGeom
from actors.field.propagate import fix_point
from actors.field.solve import search


@njit(cache=True)
def _differ_on_shared(sols, k, shared):
    for a in range(k):
        for b in range(a + 1, k):
            differ = False
            for i in range(shared.size):
                if shared[i] and sols[a, i] != sols[b, i]:
                    differ = True
                    break
            if not differ:
                return False
    return True


@njit(cache=True)
def reduce_givens(sol, shared, order, m, patience, max_nodes, line_ptr, line_cells, line_len,
                  line_group, cell_line, cell_pos):
    """Remove givens from `sol` in `order`; returns (puzzle with -1 for removed, count)."""
    n = sol.size
    puzzle = sol.copy()
    sols = np.zeros((m + 1, n), dtype=np.int8)
    flip = np.zeros(n, dtype=np.int8)
    work = np.empty(n, dtype=np.int8)
    why = np.zeros(n, dtype=np.int8)
    fixed = np.zeros(n, dtype=np.int32)
    count = 1
    fails = 0
    for idx in range(order.size):
        i = order[idx]
        puzzle[i] = -1
        # a removed cell the rest still forces leaves the solutions as they were
        work[:] = puzzle
        fix_point(work, line_ptr, line_cells, line_len, line_group, cell_line, cell_pos, why,
                  fixed, -1)
        if work[i] >= 0:
            continue
        c = search(puzzle, line_ptr, line_cells, line_len, line_group, cell_line, cell_pos,
                   m + 1, flip, sols, max_nodes)
        if 0 <= c <= m and (c < 2 or _differ_on_shared(sols, c, shared)):
            count = c
            fails = 0
        else:
            puzzle[i] = sol[i]
            fails += 1
            if count >= 2 and fails >= patience:
                break
    return puzzle, count


def make_givens(t: TileGeom, sol: np.ndarray, shared: np.ndarray, rng: np.random.Generator,
                patience: int, max_nodes: int, attempts: int = 4) -> np.ndarray | None:
    """Local indices of the givens of tile t (alone: 2..m solutions, differing on shared
    cells), or None when `attempts` seeded orders all failed."""
    sol = np.asarray(sol, dtype=np.int8)
    shared = np.asarray(shared, dtype=np.bool_)
    if not shared.any():
        return None
    for _ in range(attempts):
        order = rng.permutation(t.n).astype(np.int32)
        puzzle, c = reduce_givens(sol, shared, order, t.m, patience, max_nodes, t.line_ptr,
                                  t.line_cells,
                                  t.line_len, t.line_group, t.cell_line, t.cell_pos)
        if 2 <= c <= t.m:
            return np.flatnonzero(puzzle >= 0)
    return None
