"""Contacts (destruction by overlap) and the victory check.

Classic: on each cell, SINK destroys everything sharing its float layer with it (itself too);
DEFEAT destroys the YOU objects there; HOT destroys the MELT objects; OPEN and SHUT destroy each
other; a WEAK object sharing a cell with anything is destroyed. Keke (`contacts_destroy_both`):
the pair rules of simulation.js, in its order: YOU on DEFEAT-or-SINK destroys both, then any
object on a SINK destroys both, then HOT/MELT and OPEN/SHUT pairs destroy both; text never
takes part. An object that is both halves of a pair pairs with itself. FLOAT objects only touch
FLOAT objects and grounded ones only grounded ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .movement import rebuild_layer
from .rules import DEFEAT, FLOAT, HOT, MELT, OPEN, SHUT, SINK, WEAK, WIN, YOU
from .words import TEXT_BASE

if TYPE_CHECKING:
    from .turn import Work

_ANY_CONTACT = SINK | DEFEAT | HOT | MELT | OPEN | SHUT | WEAK


def _touch(a: list[int], b: list[int], masks: tuple[int, ...]) -> bool:
    return (a[2] == b[2] and a[3] == b[3]
            and not (masks[a[1]] ^ masks[b[1]]) & FLOAT)


def contacts(work: Work) -> None:
    """Resolve every contact on the board now (see the module docstring)."""
    b = work.rules.present
    if not (b & SINK or (b & YOU and b & DEFEAT) or (b & HOT and b & MELT)
            or (b & OPEN and b & SHUT) or b & WEAK):
        return
    if work.ctx.profile.contacts_destroy_both:
        _pair_contacts(work)
    else:
        _cell_contacts(work)


def _pair_contacts(work: Work) -> None:
    masks = work.rules.masks
    players: list[list[int]] = []
    killers: dict[tuple[int, int], list[list[int]]] = {}
    sinkers: dict[tuple[int, int], list[list[int]]] = {}
    for o in work.objs:
        if o[1] < TEXT_BASE:
            m = masks[o[1]]
            if m & YOU:
                players.append(o)
            if m & (DEFEAT | SINK):
                killers.setdefault((o[2], o[3]), []).append(o)
                if m & SINK:
                    sinkers.setdefault((o[2], o[3]), []).append(o)
    dead: dict[int, tuple[list[int], str]] = {}

    def pair(a: list[int], b: list[int], cause: str) -> None:
        if not (masks[a[1]] ^ masks[b[1]]) & FLOAT:
            dead.setdefault(a[0], (a, cause))
            dead.setdefault(b[0], (b, cause))

    if killers:
        for p in players:
            for k in killers.get((p[2], p[3]), ()):
                pair(p, k, "sink" if masks[k[1]] & SINK else "defeat")
    if sinkers:  # Keke pairs with the sinkers listed before this contact step began
        for p in work.objs:
            if p[1] < TEXT_BASE and p[0] not in dead:
                for s in sinkers.get((p[2], p[3]), ()):
                    if p is not s:
                        pair(p, s, "sink")
    for a_bit, b_bit, cause in ((HOT, MELT, "melt"), (OPEN, SHUT, "open_shut")):
        if not (work.rules.present & a_bit and work.rules.present & b_bit):
            continue
        side_a: dict[tuple[int, int], list[list[int]]] = {}
        side_b = []
        for o in work.objs:
            if o[1] < TEXT_BASE and o[0] not in dead:
                if masks[o[1]] & a_bit:
                    side_a.setdefault((o[2], o[3]), []).append(o)
                if masks[o[1]] & b_bit:
                    side_b.append(o)
        for b in side_b:
            for a in side_a.get((b[2], b[3]), ()):
                pair(a, b, cause)
    for obj, cause in dead.values():
        work.destroy(obj, cause)
    if dead and work.ctx.profile.collision == "layered":
        rebuild_layer(work)


def _cell_contacts(work: Work) -> None:
    masks = work.rules.masks
    cells: dict[tuple[int, int], list[list[int]]] = {}
    hot_cells = {(o[2], o[3]) for o in work.objs if masks[o[1]] & _ANY_CONTACT}
    if not hot_cells:
        return
    for o in work.objs:
        if (o[2], o[3]) in hot_cells:
            cells.setdefault((o[2], o[3]), []).append(o)
    dead: dict[int, tuple[list[int], str]] = {}
    for here in cells.values():
        for layer in (0, FLOAT):
            group = [o for o in here if masks[o[1]] & FLOAT == layer]
            bits = 0
            for o in group:
                bits |= masks[o[1]]
            for o in group:
                m = masks[o[1]]
                if bits & SINK and len(group) > 1:
                    dead.setdefault(o[0], (o, "sink"))
                elif bits & DEFEAT and m & YOU:
                    dead.setdefault(o[0], (o, "defeat"))
                elif bits & HOT and m & MELT:
                    dead.setdefault(o[0], (o, "melt"))
                elif bits & OPEN and bits & SHUT and m & (OPEN | SHUT) and _has_partner(
                        group, o, masks):
                    dead.setdefault(o[0], (o, "open_shut"))
                elif m & WEAK and len(group) > 1:
                    dead.setdefault(o[0], (o, "weak"))
    for obj, cause in dead.values():
        work.destroy(obj, cause)


def _has_partner(group: list[list[int]], o: list[int], masks: tuple[int, ...]) -> bool:
    want = SHUT if masks[o[1]] & OPEN else OPEN
    return any(p is not o and masks[p[1]] & want for p in group) or (
        masks[o[1]] & OPEN and masks[o[1]] & SHUT)


def victory(work: Work) -> bool:
    """True when some YOU object shares a cell (and float layer) with a WIN object."""
    masks = work.rules.masks
    if not (work.rules.present & YOU and work.rules.present & WIN):
        return False
    wins = [o for o in work.objs if masks[o[1]] & WIN]
    if not wins:
        return False
    return any(_touch(p, w, masks) for p in work.objs if masks[p[1]] & YOU for w in wins)
