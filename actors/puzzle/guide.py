"""Search guidance for the keke fast path: distance estimates and novelty.

`Guide` belongs to one `fast.FastLevel` (so to one search) and reads the working state of a
turn (`fast_turn.FastTurn`) after it has run. Nothing here changes a state or a key: it only
orders the solver's queues (see `solve.search`), so a poor estimate costs time, never correctness.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .words import NOUNS, WORD_CODE

if TYPE_CHECKING:
    from .fast import FastLevel
    from .fast_turn import FastTurn

_WIN, _IS = WORD_CODE["win"], WORD_CODE["is"]
_N_NOUNS = len(NOUNS)  # word codes below this are nouns
_GAP_CACHE = 200_000  # word layouts remembered before the cache is cleared
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
        self.ys = [c // level.stride for c in range(level.cells)]
        self.xs = [c % level.stride for c in range(level.cells)]
        self.gap_cache: dict[tuple, int] = {}  # word layout -> rule gap
        self.seen: set[int] = set()  # features of every state generated so far

    def estimates(self, t: FastTurn) -> tuple[int, int]:
        """Two distance estimates to a win (not admissible; they only order best-first search).

        `direct`: Manhattan distance from a YOU object to a WIN object, or without WIN, 8 plus
        the distance to the nearest word. `rules`: the smaller of the YOU-to-WIN distance and
        the cost of forming `NOUN IS WIN` (for a noun with objects) by pushing the nearest noun
        word and WIN word next to an IS, plus the walk from YOU to the WIN word. Without YOU
        both are FAR (only MOVE objects can still change anything).
        """
        if not t.players:
            return FAR, FAR
        pos, ys, xs, n_words = t.pos, self.ys, self.xs, self.lv.n_words
        you = [pos[o] for o in t.players]
        if t.winnables:
            goal = [pos[o] for o in t.winnables]
            direct = min(abs(ys[a] - ys[b]) + abs(xs[a] - xs[b]) for a in you for b in goal)
        elif n_words:
            direct = 8 + min(abs(ys[a] - ys[pos[w]]) + abs(xs[a] - xs[pos[w]])
                             for a in you for w in range(n_words))
        else:
            direct = FAR
        wins = [pos[w] for w in self.win_words]
        if not wins:
            return direct, direct
        best = direct if t.winnables else FAR
        walk = min(abs(ys[a] - ys[b]) + abs(xs[a] - xs[b]) for a in you for b in wins)
        return direct, min(best, 2 + self._rule_gap(t) + walk)

    def novel(self, t: FastTurn) -> bool:
        """True when the state shows a feature no earlier generated state of the search had
        (width-based search's novelty): a pair (word on a cell, YOU object on a cell), or a
        rule. Pairs rather than single cells make walking novel again after any word moved,
        so the depth-ordered novel queue can reach the next push."""
        pos, seen, cells, n_words = t.pos, self.seen, self.lv.cells, self.lv.n_words
        before = len(seen)
        you = [pos[o] for o in t.players]
        span = cells * cells
        seen.update([w * span + pos[w] * cells + y for w in range(n_words) for y in you])
        base = n_words * span
        seen.update([base + (a << 8 | b) for a, b in t.rules])
        return len(seen) > before

    def _rule_gap(self, t: FastTurn) -> int:
        """Fewest word steps to line up a noun word (with objects) and WIN around an IS;
        it depends on word positions only, so it is cached per word layout."""
        pos, sp, kinds = t.pos, t.sp, self.lv.word_kinds
        present = tuple(bool(sp.get(kinds[w])) for w in self.noun_words)
        layout = (tuple(pos[: self.lv.n_words]), present)
        gap = self.gap_cache.get(layout)
        if gap is not None:
            return gap
        ys, xs = self.ys, self.xs
        nouns = [pos[w] for w, ok in zip(self.noun_words, present, strict=True) if ok]
        wins = [pos[w] for w in self.win_words]
        gap = FAR
        for c in self.connectors if nouns else ():
            p = pos[c]
            for step in (1, self.lv.stride):
                a, b = p - step, p + step
                ay, ax, by, bx = ys[a], xs[a], ys[b], xs[b]
                gap = min(gap, min(abs(ys[q] - ay) + abs(xs[q] - ax) for q in nouns)
                          + min(abs(ys[q] - by) + abs(xs[q] - bx) for q in wins))
        if len(self.gap_cache) >= _GAP_CACHE:
            self.gap_cache.clear()
        self.gap_cache[layout] = gap
        return gap
