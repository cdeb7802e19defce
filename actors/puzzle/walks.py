"""Walk macros for the keke fast path: a lone YOU's free walking folded into its next real move.

In many states the only thing a move can do is carry the single YOU object one cell through
empty floor: nothing is pushed, nothing is destroyed, no rule changes and nothing else moves.
Such walking is free of side effects, so a search gains nothing from storing each cell of it as
a state (Sokoban solvers fold it the same way). `free_region` finds the cells the YOU can walk
to that way, each with a shortest move string; `fast.FastLevel.expand` then only plays the
steps that leave that region (a push, a hazard, a WIN, a word), from each region cell.

A walk step is free of side effects (so the region is exact) when all of these hold, and
`free_region` returns None otherwise:

* nothing is MOVE, so nothing else moves (the YOU's facing changes on the walk, but a step
  that leaves the region moves the YOU too and sets its facing as the walk would have);
* exactly one object is YOU, and it is not KILL, SINK or WIN itself;
* the state holds no contact that the next turn would resolve anyway (a transform can leave
  one behind, since Keke does not recheck contacts after transforms);
* the step enters a cell the object layer shows empty that holds no KILL, SINK or WIN object,
  nor a HOT one when the YOU is MELT, nor a MELT one when it is HOT.

While something is MOVE, `timed_exits` folds walking by playing every step for real; it is
exact in what it returns but skips some successors, which the search makes good later.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .fast_turn import DOWN, LEFT, RIGHT, UP, FastTurn
from .words import WORD_CODE

if TYPE_CHECKING:
    from .fast import FastLevel

STEPS = (("u", UP), ("d", DOWN), ("l", LEFT), ("r", RIGHT))
ALL_STEPS = (*STEPS, ("s", 0))
_HOT, _MELT = WORD_CODE["hot"], WORD_CODE["melt"]


def free_region(lv: FastLevel, t: FastTurn) -> dict[int, str] | None:
    """Cells the lone YOU reaches by side-effect-free walking, each with a shortest move string
    from its cell (its own cell maps to ""); None when walking may have side effects."""
    if t.automovers or len(t.players) != 1:
        return None
    p = t.players[0]
    if p in t.killers or p in t.winnables:
        return None
    probe = t.copy()
    probe._contacts(probe.players, probe.killers, probe.sinkers, probe.featured)
    if probe.changed:
        return None  # a pending contact fires on the next turn, whatever the move
    pos, om, border, delta = t.pos, t.om, lv.border, lv.delta
    hazards = {pos[o] for o in t.killers}
    hazards.update(pos[o] for o in t.winnables)
    noun, featured, sp = t.nm[p], t.featured, t.sp
    for mine, theirs in ((_MELT, _HOT), (_HOT, _MELT)):
        if noun in featured.get(mine, ()):
            hazards.update(pos[o] for n in featured.get(theirs, ()) for o in sp[n])
    start = pos[p]
    paths = {start: ""}
    frontier = [start]
    for cell in frontier:  # breadth-first, so every path is a shortest one
        here = paths[cell]
        for letter, d in STEPS:
            nxt = cell + delta[d]
            if nxt in paths or border[nxt] or om[nxt] or nxt in hazards:
                continue
            paths[nxt] = here + letter
            frontier.append(nxt)
    return paths


def exits(lv: FastLevel, t: FastTurn, region: dict[int, str]
          ) -> list[tuple[str, FastTurn, bool]]:
    """Every step out of `region` that changes the state and can still lead to a win: (walk +
    step letters, the turn after it, won). The walk is applied by placing the YOU on the
    region cell, which is what walking there does (the object layer follows the YOU)."""
    p = t.players[0]
    start = t.pos[p]
    pos, om, st, border, delta = t.pos, t.om, t.st, lv.border, lv.delta
    deadly = {pos[o] for o in t.killers}
    out = []
    for cell, path in region.items():
        for letter, d in STEPS:
            nxt = cell + delta[d]
            if nxt in region or border[nxt]:
                continue
            o = om[nxt] - 1
            if o >= 0 and st[o]:
                continue  # a STOP thing: the YOU stays put and nothing changes
            if o < 0 and nxt in deadly:
                continue  # the lone YOU dies and pushes nothing: no YOU, no MOVE, no win ever
            step = t.copy()
            if cell != start:
                step.om[start] = 0
                step.pos[p] = cell
                step.om[cell] = p + 1
            won = step.turn(d)
            if step.changed:
                out.append((path + letter, step, won))
    return out


def timed_exits(lv: FastLevel, t: FastTurn
                ) -> tuple[list[tuple[str, FastTurn, bool]], bool] | None:
    """Walks of a lone YOU while MOVE objects move: (exits, lossy), or None when something is
    not MOVE or not exactly one object is YOU.

    Every turn is played for real, so each exit is an exact state with the moves that reach it.
    A *walk step* is a turn in which only the YOU and MOVE objects moved (no word, no creation or
    removal, no win), the YOU alive and on a cell no earlier walk reached. Its state is not
    returned but walked on from, breadth-first; every other turn from it is an exit. Unlike
    `exits`, this skips states: reaching a cell later (by another walk, or by waiting) gives the
    MOVE objects another phase, and such arrivals are dropped, as are turns that kill the YOU
    and waits after the first step. `lossy` says one was; the search then expands the state
    again one move at a time before it runs dry (`solve.search`)."""
    if not t.automovers or len(t.players) != 1:
        return None
    p = t.players[0]
    allowed = {p, *t.automovers}
    reached = {t.pos[p]}
    walks = [(t, "")]
    out = []
    lossy = False
    for state, path in walks:
        # Waiting on a walk only re-enters its cell; an event it would meet, the steps meet too.
        lossy |= bool(path)
        for letter, d in STEPS if path else ALL_STEPS:
            step = state.copy()
            won = step.turn(d)
            if not step.changed:
                continue
            if not (won or step.players):
                lossy = True  # the YOU died: rarely a way on, and one-move play still finds it
            elif (won or step.renumber or step.words_moved or step.players != [p]
                    or not step.moved <= allowed or (not path and p not in step.moved)):
                out.append((path + letter, step, won))
            elif step.pos[p] in reached:
                lossy = True  # a later arrival, with the MOVE objects in another phase
            else:
                reached.add(step.pos[p])
                step.changed = False  # from here on it flags a change against this state
                walks.append((step, path + letter))
    return out, lossy
