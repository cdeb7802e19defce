"""The example agent's own deduction for a mosaic, written from the rules text alone.

A tile's solutions are enumerated under what is known (line balance, no three equal
in a row, distinct equal-length lines of one orientation), with run/balance propagation
at every node of the search; that is the referee's propagation with unbounded
bifurcation, restricted to one tile. Across tiles, solution sets are made consistent on
shared cells (a solution of one tile survives only if each revealed neighbour has a
solution agreeing with it there). A cell on which every surviving solution of a tile
agrees is certain. Nothing here talks to the server.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_SOLUTIONS = 256  # beyond this a tile is treated as unconstrained for now


class TooMany(Exception):
    """A tile has more than the cap of solutions under what is known."""


class TileModel:
    """One tile's cells (global ids) and lines (local indices), from an observe listing."""

    def __init__(self, tile: dict, G: int) -> None:
        self.id: int = tile["id"]
        x0, y0 = tile["x0"], tile["y0"]
        inside = set()
        for lx, ly, w, h in tile["rects"]:
            inside.update((x0 + lx + dx, y0 + ly + dy) for dy in range(h) for dx in range(w))
        ordered = sorted(inside, key=lambda p: (p[1], p[0]))
        self.cells = [y * G + x for x, y in ordered]
        local = {p: k for k, p in enumerate(ordered)}
        self.lines: list[tuple[int, list[int]]] = []  # (orientation, local cells)
        for orient in (0, 1):
            for p in ordered:
                prev = (p[0] - 1, p[1]) if orient == 0 else (p[0], p[1] - 1)
                if prev in inside:
                    continue  # not the start of a run
                run, q = [], p
                while q in inside:
                    run.append(local[q])
                    q = (q[0] + 1, q[1]) if orient == 0 else (q[0], q[1] + 1)
                self.lines.append((orient, run))
        self.cell_lines: list[list[int]] = [[] for _ in self.cells]
        for k, (_, run) in enumerate(self.lines):
            for c in run:
                self.cell_lines[c].append(k)

    def solutions(self, known: dict[int, int], cap: int = MAX_SOLUTIONS) -> list[tuple[int, ...]]:
        """Every solution (local values) agreeing with `known`; TooMany beyond `cap`."""
        vals = [known.get(c, -1) for c in self.cells]
        out: list[tuple[int, ...]] = []
        self._search(vals, out, cap)
        return out

    def _search(self, vals: list[int], out: list[tuple[int, ...]], cap: int) -> None:
        if not self._propagate(vals):
            return
        best, best_free = -1, 1 << 30
        for k, (_, run) in enumerate(self.lines):
            free = sum(vals[c] < 0 for c in run)
            if 0 < free < best_free:
                best, best_free = k, free
        if best < 0:
            if self._distinct(vals):
                out.append(tuple(vals))
                if len(out) > cap:
                    raise TooMany
            return
        cell = next(c for c in self.lines[best][1] if vals[c] < 0)
        for v in (0, 1):
            child = vals.copy()
            child[cell] = v
            self._search(child, out, cap)

    def _propagate(self, vals: list[int]) -> bool:
        """Run and balance rules to a fix point; False on a contradiction."""
        queue = list(range(len(self.lines)))
        queued = [True] * len(self.lines)
        while queue:
            k = queue.pop()
            queued[k] = False
            run = self.lines[k][1]
            half = len(run) // 2
            line = [vals[c] for c in run]
            ones, zeros = line.count(1), line.count(0)
            if ones > half or zeros > half or len(run) % 2:
                return False
            fixed: list[tuple[int, int]] = []
            if zeros == half and ones < half:
                fixed += [(c, 1) for c in run if vals[c] < 0]
            elif ones == half and zeros < half:
                fixed += [(c, 0) for c in run if vals[c] < 0]
            for i in range(len(run) - 2):
                a, b, c = line[i], line[i + 1], line[i + 2]
                if a >= 0 and a == b == c:
                    return False
                if a < 0 and b >= 0 and b == c:
                    fixed.append((run[i], 1 - b))
                elif b < 0 and a >= 0 and a == c:
                    fixed.append((run[i + 1], 1 - a))
                elif c < 0 and a >= 0 and a == b:
                    fixed.append((run[i + 2], 1 - a))
            for cell, v in fixed:
                if vals[cell] >= 0:
                    if vals[cell] != v:
                        return False
                    continue
                vals[cell] = v
                for j in self.cell_lines[cell]:
                    if not queued[j]:
                        queued[j] = True
                        queue.append(j)
        return True

    def _distinct(self, vals: list[int]) -> bool:
        seen = set()
        for orient, run in self.lines:
            key = (orient, tuple(vals[c] for c in run))
            if key in seen:
                return False
            seen.add(key)
        return True


class Deducer:
    """Joint deduction over revealed tiles: per-tile solutions made consistent on shared cells."""

    def __init__(self, G: int) -> None:
        self.G = G
        self.models: dict[int, TileModel] = {}
        self.neighbours: dict[int, list[int]] = {}
        self._cache: dict[tuple[int, tuple[int, ...]], list[tuple[int, ...]] | None] = {}
        self._pairs: dict[tuple[int, int], tuple[list[int], list[int]]] = {}

    def model(self, tile: dict) -> TileModel:
        """The (cached) model of an observed tile."""
        m = self.models.get(tile["id"])
        if m is None:
            m = self.models[tile["id"]] = TileModel(tile, self.G)
            self.neighbours[m.id] = list(tile["neighbours"])
        return m

    def deduce(self, tiles: Iterable[dict], known: dict[int, int]
               ) -> tuple[dict[int, int], dict[int, list[tuple[int, ...]]]]:
        """Cells certain beyond `known`, and each tile's surviving solutions (tiles with too
        many solutions are left out)."""
        models = [self.model(t) for t in tiles]
        facts = dict(known)
        derived: dict[int, int] = {}
        while True:
            sols: dict[int, list[tuple[int, ...]]] = {}
            for m in models:
                found = self._solutions(m, facts)
                if found:  # none would mean our facts contradict: leave the tile alone
                    sols[m.id] = found
            self._arc_consistency(sols)
            fresh = {}
            for tid, found in sols.items():
                cells = self.models[tid].cells
                for k, c in enumerate(cells):
                    if c not in facts and all(s[k] == found[0][k] for s in found):
                        fresh[c] = found[0][k]
            if not fresh:
                return derived, sols
            facts.update(fresh)
            derived.update(fresh)

    def _solutions(self, m: TileModel, facts: dict[int, int]) -> list[tuple[int, ...]] | None:
        key = (m.id, tuple(facts.get(c, -1) for c in m.cells))
        if len(self._cache) > 50_000:
            self._cache.clear()  # facts only grow: old keys are rarely asked again
        if key not in self._cache:
            try:
                self._cache[key] = m.solutions(facts)
            except TooMany:
                self._cache[key] = None
        return self._cache[key]

    def _arc_consistency(self, sols: dict[int, list[tuple[int, ...]]]) -> None:
        pairs = [(a, b, *self._shared(a, b)) for a in sols for b in self.neighbours.get(a, ())
                 if b in sols]
        changed = True
        while changed:
            changed = False
            for a, b, ka, kb in pairs:
                allowed = {tuple(s[k] for k in kb) for s in sols[b]}
                keep = [s for s in sols[a] if tuple(s[k] for k in ka) in allowed]
                if keep and len(keep) < len(sols[a]):
                    sols[a] = keep
                    changed = True

    def _shared(self, a: int, b: int) -> tuple[list[int], list[int]]:
        """Local positions in a and in b of the cells they share (cached)."""
        got = self._pairs.get((a, b))
        if got is None:
            pos_b = {c: k for k, c in enumerate(self.models[b].cells)}
            ka = [k for k, c in enumerate(self.models[a].cells) if c in pos_b]
            got = self._pairs[(a, b)] = (ka, [pos_b[self.models[a].cells[k]] for k in ka])
        return got
