"""Search guidance for the keke fast path: distance estimates and novelty.

`Guide` belongs to one `fast.FastLevel` (so to one search) and reads the working state of a
turn (`fast_turn.FastTurn`) after it has run. Nothing here changes a state or a key: it only
orders the solver's queues (see `solve.search`), so a poor estimate costs time, never correctness.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .words import NOUNS, WORD_CODE

if TYPE_CHECKING:
    from .fast import FastLevel
    from .fast_turn import FastTurn

_WIN, _IS = WORD_CODE["win"], WORD_CODE["is"]
_N_NOUNS = len(NOUNS)  # word codes below this are nouns
_GAP_CACHE = 200_000  # word layouts remembered before the cache is cleared
_FIELD_CACHE = 4_096  # cost fields (a list per cell each) remembered before clearing
_PUSH_COST, _DANGER_COST, _STOP_COST = 2, 16, 20  # extra walking cost of a cell to clear
FAR = 64  # the estimate of a state with no YOU, or no way to measure


class Guide:
    """Estimates and the novelty memory for one search over one level."""

    def __init__(self, level: FastLevel) -> None:
        """Precompute the word roles and cell coordinates of `level`."""
        self.lv = level
        kinds = level.word_kinds
        self.connectors = tuple(i for i, k in enumerate(kinds) if k == _IS)
        self.noun_words = tuple(i for i, k in enumerate(kinds) if k < _N_NOUNS)
        self.win_words = tuple(i for i, k in enumerate(kinds) if k == _WIN)
        # Manhattan distances between all cells, so that a nearest-thing search is one
        # `min(map(row.__getitem__, cells))` at C speed; built on the first estimate (a
        # FastLevel that only steps never needs it).
        self.dist: list[list[int]] = []
        self.field_cache: dict[tuple, list[int]] = {}  # obstacle layout -> cost field
        # The novelty feature of word w on cell c with YOU on cell y is word_base[w] + c * cells + y.
        self.word_base = [w * level.cells * level.cells for w in range(level.n_words)]
        self.gap_cache: dict[tuple, tuple[tuple[int, int], ...]] = {}  # word layout -> gaps
        self.seen: set[int] = set()  # features of every state generated so far

    def estimates(self, t: FastTurn) -> tuple[int, int, int]:
        """Three distance estimates to a win (not admissible; they only order best-first
        search).

        `direct`: Manhattan distance from a YOU object to a WIN object, or without WIN, 8 plus
        the distance to the nearest word. `path`: the walking cost from a YOU to a WIN object
        over `_field`, which charges for cells to clear on the way (FAR without WIN).
        `rules`: the smaller of the YOU-to-WIN distance and the cost of forming `NOUN IS WIN`
        (for a noun with objects) by pushing a word of that noun and a WIN word next to an IS,
        plus the walk from YOU to the WIN word and, unless a YOU object is of that noun, from
        YOU to its nearest object (the rule wins only where YOU meets it). Without YOU all are
        FAR (only MOVE objects can still change anything).
        """
        if not t.players:
            return FAR, FAR, FAR
        pos, dist, n_words = t.pos, self.dist or self._distances(), self.lv.n_words
        you = [pos[o] for o in t.players]
        if t.winnables:
            goal = [pos[o] for o in t.winnables]
            direct = min(min(map(dist[a].__getitem__, goal)) for a in you)
            field = self._field(t)
            path = min(field[a] for a in you)
        elif n_words:
            direct = 8 + min(min(map(dist[a].__getitem__, pos[:n_words])) for a in you)
            path = FAR
        else:
            direct = path = FAR
        wins = [pos[w] for w in self.win_words]
        if not wins:
            return direct, path, direct
        best = direct if t.winnables else FAR
        walk = min(min(map(dist[a].__getitem__, wins)) for a in you)
        mine = {t.nm[o] for o in t.players}
        form = FAR
        for noun, gap in self._rule_gaps(t):
            reach = 0 if noun in mine else min(
                min(map(dist[a].__getitem__, map(pos.__getitem__, t.sp[noun]))) for a in you)
            form = min(form, gap + reach)
        return direct, path, min(best, 2 + form + walk)

    def _field(self, t: FastTurn) -> list[int]:
        """Walking cost from every cell to the nearest WIN object: one per step, more for a
        cell that must be cleared first (a KILL or SINK thing, a STOP thing, a PUSH object).
        Cached per layout of those things, so walking and word pushes reuse it."""
        pos = t.pos
        get = pos.__getitem__
        wins = tuple(map(get, t.winnables))
        danger = tuple(map(get, t.killers))
        stops = tuple(map(get, t.stoppables))
        pushed = tuple(map(get, t.pushables))
        layout = (wins, danger, stops, pushed)
        field = self.field_cache.get(layout)
        if field is not None:
            return field
        cost = [1] * self.lv.cells
        for cells, extra in ((pushed, _PUSH_COST), (danger, _DANGER_COST),
                             (stops, _STOP_COST)):
            for c in cells:
                cost[c] = max(cost[c], extra)
        # Dijkstra from the WIN cells with a bucket per distance (costs are small integers).
        field = [FAR * 4] * self.lv.cells
        buckets: dict[int, list[int]] = {0: list(wins)}
        for c in wins:
            field[c] = 0
        delta, border = self.lv.delta[1:], self.lv.border
        d = 0
        while buckets:
            for c in buckets.pop(d, ()):
                if field[c] != d:
                    continue  # reached more cheaply since it was queued
                far = d + cost[c]
                for step in delta:
                    n = c + step
                    if far < field[n] and not border[n]:
                        field[n] = far
                        buckets.setdefault(far, []).append(n)
            d += 1
        if len(self.field_cache) >= _FIELD_CACHE:
            self.field_cache.clear()
        self.field_cache[layout] = field
        return field

    def _distances(self) -> list[list[int]]:
        """Build (once) and return the cell-to-cell Manhattan distance table."""
        stride, cells = self.lv.stride, self.lv.cells
        ys = [c // stride for c in range(cells)]
        xs = [c % stride for c in range(cells)]
        self.dist = [[abs(ya - yb) + abs(xa - xb) for yb, xb in zip(ys, xs, strict=True)]
                     for ya, xa in zip(ys, xs, strict=True)]
        return self.dist

    def walked(self, t: FastTurn, cells: Iterable[int]) -> None:
        """Note the features of the lone YOU of `t` standing on each of `cells` (a folded walk,
        `walks.free_region`) as seen, as if each walk state had been generated: an exit is
        then novel only for what its step changed, not for a cell it merely walked over."""
        self._note(t, list(cells))

    def novel(self, t: FastTurn) -> bool:
        """True when the state shows a feature no earlier generated state of the search had
        (width-based search's novelty): a pair (word on a cell, YOU object on a cell), a pair
        (PUSH object of a noun on a cell, YOU object on a cell), or a rule. Pairs rather than
        single cells make walking novel again after any word or PUSH object moved, so the
        depth-ordered novel queue can reach the next push."""
        before = len(self.seen)
        self._note(t, [t.pos[o] for o in t.players])
        return len(self.seen) > before

    def _note(self, t: FastTurn, you: list[int]) -> None:
        """Add the features of `t` with its YOU objects on the cells `you` to `seen`."""
        pos, seen, cells = t.pos, self.seen, self.lv.cells
        seen.update([b + c * cells + y for b, c in zip(self.word_base, pos) for y in you])
        base = self.lv.n_words * cells * cells
        seen.update([base + (a << 8 | b) for a, b in t.rules])
        # A PUSH object's cell, paired with the YOU's, like a word's: without it, pushing a
        # rock or a keke along (as in bridging a SINK row) never looked new.
        base += 1 << 16
        nm = t.nm
        seen.update([base + (nm[o] * cells + pos[o]) * cells + y for o in t.pushables
                     for y in you])

    def _rule_gaps(self, t: FastTurn) -> tuple[tuple[int, int], ...]:
        """(noun, fewest word steps to line up a word of it and WIN around an IS) for each
        noun with objects and a word; it depends on word positions only, so it is cached per
        word layout."""
        pos, sp, kinds = t.pos, t.sp, self.lv.word_kinds
        present = tuple(bool(sp.get(kinds[w])) for w in self.noun_words)
        layout = (tuple(pos[: self.lv.n_words]), present)
        gaps = self.gap_cache.get(layout)
        if gaps is not None:
            return gaps
        dist = self.dist
        words: dict[int, list[int]] = {}  # noun -> cells of its words
        for w, ok in zip(self.noun_words, present, strict=True):
            if ok:
                words.setdefault(kinds[w], []).append(pos[w])
        found = []
        if words:
            wins = [pos[w] for w in self.win_words]
            # Per IS and direction: the distances to the cell before it, and the cost of a
            # WIN word into the cell after it (the same for every noun, so computed once).
            ends = []
            for c in self.connectors:
                p = pos[c]
                for step in (1, self.lv.stride):
                    after = dist[p + step]
                    ends.append((dist[p - step], min([after[w] for w in wins])))
            for noun, cells in words.items():
                if len(cells) == 1:
                    x = cells[0]
                    costs = [before[x] + win for before, win in ends]
                else:
                    costs = [min([before[x] for x in cells]) + win for before, win in ends]
                found.append((noun, min([FAR, *costs])))
        gaps = tuple(found)
        if len(self.gap_cache) >= _GAP_CACHE:
            self.gap_cache.clear()
        self.gap_cache[layout] = gaps
        return gaps
