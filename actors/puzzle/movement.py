"""Movement steps: YOU objects in a direction, then MOVE objects along their facing.

Two collision models, chosen by the profile:

* `stacked` (classic): any number of things per cell. A mover enters a cell unless something
  there is STOP, or PUSH (text is always PUSH) and cannot itself be pushed on; OPEN meets SHUT
  freely (contacts destroy them later); a WEAK blocker is destroyed instead of blocking; PULL
  objects behind a mover follow it. An object moves on its own at most once per step, and not
  at all after being pushed or pulled in that step.
* `layered` (Keke): things that are YOU, MOVE, PUSH or STOP, and all text, sit in an object layer
  with one entry per cell; everything else lies underneath and never blocks. Membership is the
  board flag `layer.IN_LAYER`, re-placed only where Keke re-places it (`layer.place`). Who may
  move, push or block is Keke's per-object flags and noun lists (`layer.py`). An object moves at
  most once per turn; a YOU walking into another YOU is blocked, anything else may walk onto a
  YOU (and hides it from the layer).

Every moved object faces the way it moved. Work is counted against the turn's complexity cap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .layer import GONE, IN_LAYER, OFF_NOUN, movable, stopped
from .ruleset import MOVE, OPEN, PULL, PUSH, SHUT, STOP, TEXT_INDEX, WEAK, YOU
from .words import DELTAS, TEXT_BASE

if TYPE_CHECKING:
    from .turn import Work

def movers(work: Work, bit: int, order: tuple[int, ...]) -> list[list[int]]:
    """Objects with property `bit`: noun by noun in rule order, from the nouns' lists (layered),
    or in board order."""
    masks = work.rules.masks
    if work.ctx.profile.collision == "stacked":
        return [o for o in work.objs if masks[o[1]] & bit]
    found = []
    for noun in order:
        if noun == TEXT_INDEX:
            found.extend(o for o in work.objs if o[1] >= TEXT_BASE and masks[o[1]] & bit)
        else:
            found.extend(o for o in work.objs if o[1] == noun and not o[5] & OFF_NOUN)
    return found


# ---------------------------------------------------------------- layered (Keke)


def move_layered(work: Work, direction: int | None) -> None:
    """One Keke movement step: players toward `direction`, or automata when it is None."""
    masks, width, height, blocked = work.rules.masks, work.ctx.width, work.ctx.height, work.blocked
    moved = work.moved
    layer = work.layer
    if layer is None:
        layer = work.layer = {(o[2], o[3]): o for o in work.objs if o[5] & IN_LAYER}

    def player(o: list[int]) -> bool:  # on Keke's list of YOU objects
        return o[1] < TEXT_BASE and bool(masks[o[1]] & YOU) and not o[5] & OFF_NOUN

    def shift(e: list[int], d: int) -> bool:
        work.spend()
        if e[0] in moved or not movable(e, masks):
            return False
        dx, dy = DELTAS[d]
        x, y = e[2] + dx, e[3] + dy
        if not (0 <= x < width and 0 <= y < height) or (x, y) in blocked:
            return False
        o = layer.get((x, y))
        if o is not None:
            if o[1] < TEXT_BASE:
                if stopped(o, masks):
                    return False
                if movable(o, masks):
                    if masks[o[1]] & PUSH and not o[5] & OFF_NOUN:
                        if not shift(o, d):
                            return False
                    elif not (player(o) and not player(e)):
                        return False
            elif not shift(o, d):
                return False
        # Keke clears the origin cell of the layer even when `e` was hidden under another thing.
        for cleared in (layer.pop((e[2], e[3]), None), layer.get((x, y))):
            if cleared is not None:
                cleared[5] &= ~IN_LAYER
                if cleared[5] & GONE == GONE:
                    work.ghost_gone = True  # a map entry was all that kept it (`layer.py`)
        work.relocate(e, x, y, d)
        layer[(x, y)] = e
        e[5] |= IN_LAYER
        moved.add(e[0])
        return True

    if direction is not None:
        for o in movers(work, YOU, work.rules.you_order):
            shift(o, direction)
        return
    for o in movers(work, MOVE, work.rules.move_order):
        if not shift(o, o[4]):
            work.turn_round(o)


# ---------------------------------------------------------------- stacked (classic)


def move_stacked(work: Work, direction: int | None) -> None:
    """One classic movement step: players toward `direction`, or automata when it is None."""
    if not work.rules.present & (MOVE if direction is None else YOU):
        return
    masks, width, height, blocked = work.rules.masks, work.ctx.width, work.ctx.height, work.blocked
    pulls = work.rules.present & PULL
    # Per cell, its things by id in arrival order (board order at first): a dict finds and
    # drops a thing in one step where a list would walk the cell.
    cells: dict[tuple[int, int], dict[int, list[int]]] = {}
    for o in work.objs:
        cells.setdefault((o[2], o[3]), {})[o[0]] = o

    def opens(a: int, b: int) -> bool:
        return bool((a & OPEN and b & SHUT) or (a & SHUT and b & OPEN))

    def can(e: list[int], d: int) -> bool:
        dx, dy = DELTAS[d]
        x, y = e[2] + dx, e[3] + dy
        here = cells.get((x, y), {})
        work.spend(1 + len(here))  # the evaluation and each thing it looks at
        if not (0 <= x < width and 0 <= y < height) or (x, y) in blocked:
            return False
        em = masks[e[1]]
        for t in here.values():
            tm = masks[t[1]]
            if opens(em, tm):
                continue
            if tm & PUSH:
                if not can(t, d) and not tm & WEAK:
                    return False
            elif tm & STOP and not tm & WEAK:
                return False
        return True

    def go(e: list[int], d: int) -> None:
        """Move `e`, which `can` just cleared (and charged for the cell it enters). What `e`
        pushes pulls what is behind it, `e` included: `e` has then moved, and its move ends."""
        dx, dy = DELTAS[d]
        ox, oy = e[2], e[3]
        x, y = ox + dx, oy + dy
        em = masks[e[1]]
        ahead = cells.setdefault((x, y), {})
        for t in list(ahead.values()):
            tm = masks[t[1]]
            if opens(em, tm):
                continue
            if tm & PUSH and can(t, d):
                go(t, d)
            elif tm & (PUSH | STOP) and t[0] in ahead:  # not pulled on or destroyed meanwhile
                del ahead[t[0]]
                wrecked.append((t, "weak"))
        if e[0] not in cells[(ox, oy)]:
            return
        del cells[(ox, oy)][e[0]]
        work.relocate(e, x, y, d)
        ahead[e[0]] = e
        done.add(e[0])
        behind = cells.get((ox - dx, oy - dy))
        if pulls and behind:
            work.spend(len(behind))  # each thing the pull looks at
            for t in list(behind.values()):
                if masks[t[1]] & PULL and t[0] in behind and can(t, d):
                    go(t, d)

    done: set[int] = set()  # objects that already moved (as movers or pushed) this step
    # WEAK things destroyed, in order; off the board after the step (nothing reads it before).
    wrecked: list[tuple[list[int], str]] = []
    if direction is not None:
        for o in movers(work, YOU, ()):
            if o[0] not in done and o[0] in cells[(o[2], o[3])] and can(o, direction):
                go(o, direction)
    else:
        for o in movers(work, MOVE, ()):
            if o[0] in done or o[0] not in cells[(o[2], o[3])]:
                continue
            if can(o, o[4]):
                go(o, o[4])
            elif work.ctx.profile.move_retry:
                work.turn_round(o)
                if can(o, o[4]):
                    go(o, o[4])
            else:
                work.turn_round(o)
    work.destroy_all(wrecked)
