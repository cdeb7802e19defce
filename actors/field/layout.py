"""Where tiles go: a seeded brick wall of tile slots over the whole canvas.

The canvas is cut into columns of even widths; each column into bricks of even heights,
so bricks of neighbouring columns are staggered. A slot's tile is its brick plus two
tabs 2 cells deep: an *ear* on its right side (overlapping the next column's tiles) and
a *foot* below it (overlapping the next brick of its column). Tabs leave 1-2 cells free
at either end, so the fixed cells a receiving tile sees come in short, separated
segments (a whole fixed line made of pieces of several tiles is rarely balanced), and
feet keep every column connected even where brick boundaries line up across columns (the
generator drops any piece still cut off from the rest).
Some slots take an L, T or plus body instead of the full rectangle (their cut corners
become holes unless a neighbour's tab covers them).

The structure depends only on (seed, G), never on what was generated before, so a
growing field asks for the slots of one chunk at a time and gets the same wall.
`Slot.shapes` lists the shapes to try in order: the slot's own body, then a plain
rectangle, then the rectangle without the two columns the left neighbours' ears cover,
each with ear and foot, ear, foot, neither (fallbacks used when a shape has no solution
that agrees with the cells already fixed).
"""

from __future__ import annotations

import attrs
import numpy as np

from actors.field.geometry import ShapeError, check_shape

WIDTHS = (6, 8, 10)  # brick sides, before the ear
OVERLAP = 2  # how far an ear (right) or a foot (down) reaches into the next tile
INSET = {6: 1, 8: 2, 10: 2}  # by brick side: cells a tab leaves free at either end
SHAPE_P = (0.55, 0.15, 0.15, 0.15)  # rect, L, T, plus
Rects = tuple[tuple[int, int, int, int], ...]


def rng_for(seed: int, *key: int) -> np.random.Generator:
    """The generator of one purpose: SeedSequence(seed) with `key` as its spawn key."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


@attrs.frozen
class Slot:
    """A tile slot: brick (c, r) at (x, y) and the shapes to try, in order, as
    (dx, w, h, rects) with the tile's box at (x + dx, y)."""

    c: int
    r: int
    x: int
    y: int
    shapes: tuple[tuple[int, int, int, Rects], ...]


@attrs.frozen
class Wall:
    """The column and brick structure of a canvas (see the module doc)."""

    seed: int
    G: int
    col_x: tuple[int, ...]
    col_w: tuple[int, ...]

    @classmethod
    def of(cls, seed: int, G: int) -> Wall:
        """The wall of `seed` on a G x G canvas; columns that do not fit are left out."""
        rng = rng_for(seed, 1)
        xs, ws = [], []
        x = int(rng.integers(0, 3)) * 2 if G > 40 else 0
        while x + min(WIDTHS) <= G:
            w = min(int(rng.choice(WIDTHS)), G - x - (G - x) % 2)
            xs.append(x)
            ws.append(w)
            x += w
        return cls(seed, G, tuple(xs), tuple(ws))

    def bricks(self, c: int) -> list[tuple[int, int]]:
        """(y, height) of every brick of column c, top to bottom."""
        rng = rng_for(self.seed, 2, c)
        y = 0  # staggering comes from the heights; an offset would leave top ears bare
        out = []
        while y + min(WIDTHS) <= self.G:
            h = min(int(rng.choice(WIDTHS)), self.G - y - (self.G - y) % 2)
            out.append((y, h))
            y += h
        return out

    def slots(self, region: tuple[int, int, int, int] | None = None) -> list[Slot]:
        """Slots whose box corner lies in region (x, y, w, h), column by column."""
        rx, ry, rw, rh = region if region is not None else (0, 0, self.G, self.G)
        out = []
        for c, (x, w) in enumerate(zip(self.col_x, self.col_w)):
            if not rx <= x < rx + rw:
                continue
            bricks = self.bricks(c)
            for r, (y, h) in enumerate(bricks):
                if ry <= y < ry + rh:
                    below = r + 1 < len(bricks)
                    out.append(Slot(c, r, x, y, self._shapes(c, r, w, h, below)))
        return out

    def _shapes(self, c: int, r: int, w: int, h: int, below: bool) -> tuple:
        rng = rng_for(self.seed, 3, c, r)
        kind = int(rng.choice(len(SHAPE_P), p=SHAPE_P))
        cut = 2 * int(rng.integers(1, 3))  # corner / bar inset: 2 or 4
        turn = int(rng.integers(0, 4))
        right = c + 1 < len(self.col_x)  # an ear needs a column to overlap, a foot a brick
        bodies = [(0, w, b) for b in (_variant(kind, w, h, cut, turn), ((0, 0, w, h),)) if b]
        # last resort: the rectangle without the 2 columns the left neighbours' ears fix
        bodies.append((OVERLAP, w - OVERLAP, ((0, 0, w - OVERLAP, h),)))
        shapes: list[tuple[int, int, int, Rects]] = []
        for dx, bw, body in bodies:
            ear = (bw, INSET.get(h, 2), OVERLAP, h - 2 * INSET.get(h, 2))
            foot = (INSET.get(bw, 2), h, bw - 2 * INSET.get(bw, 2), OVERLAP)
            can_ear = right and _covers(body, ear, 0)
            can_foot = below and _covers(body, foot, 1)
            # more shared cells first: ear and foot, ear, foot, neither
            for use_ear, use_foot in ((True, True), (True, False), (False, True), (False, False)):
                if (use_ear and not can_ear) or (use_foot and not can_foot):
                    continue
                rects = body + ((ear,) if use_ear else ()) + ((foot,) if use_foot else ())
                shapes.append((dx, bw + OVERLAP * use_ear, h + OVERLAP * use_foot, rects))
        return tuple(dict.fromkeys(s for s in shapes if _valid(*s[1:])))


def _covers(body: Rects, tab: tuple[int, int, int, int], axis: int) -> bool:
    """True when the body's cells right before `tab` (an ear on axis 0, a foot on axis 1)
    are all there, so the tab attaches along its whole side."""
    tx, ty, tw, th = tab
    need = {(tx - 1, y) for y in range(ty, ty + th)} if axis == 0 else \
        {(x, ty - 1) for x in range(tx, tx + tw)}
    have = {(x, y) for lx, ly, rw, rh in body
            for x in range(lx, lx + rw) for y in range(ly, ly + rh)
            if (x, y) in need}
    return have == need


def _variant(kind: int, W: int, H: int, cut: int, turn: int) -> Rects | None:
    """An L (corner `turn` cut away), T (bar on side `turn`) or plus of the W x H box."""
    if kind == 0 or W - 2 * cut < 2 or H - 2 * cut < 2:
        return None
    if kind == 1:  # corners: 0 top-left, 1 top-right, 2 bottom-right, 3 bottom-left
        body = (0, cut, W, H - cut) if turn < 2 else (0, 0, W, H - cut)
        ear_x = cut if turn in (0, 3) else 0
        ear_y = 0 if turn < 2 else H - cut
        return (body, (ear_x, ear_y, W - cut, cut))
    if kind == 2:  # bar: 0 top, 1 left, 2 bottom, 3 right; the stem is centred
        bar = 4
        return {
            0: ((0, 0, W, bar), (cut, bar, W - 2 * cut, H - bar)),
            1: ((0, 0, bar, H), (bar, cut, W - bar, H - 2 * cut)),
            2: ((0, H - bar, W, bar), (cut, 0, W - 2 * cut, H - bar)),
            3: ((W - bar, 0, bar, H), (0, cut, W - bar, H - 2 * cut)),
        }[turn]
    return ((0, cut, W, H - 2 * cut), (cut, 0, W - 2 * cut, H))


def _valid(w: int, h: int, rects: Rects) -> bool:
    try:
        check_shape(w, h, rects)
    except ShapeError:
        return False
    return True
