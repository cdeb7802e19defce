"""Contacts (destruction by overlap) and the victory check.

Classic: on each cell, SINK destroys everything sharing its float layer with it (itself too);
DEFEAT destroys the YOU objects there; HOT destroys the MELT objects; OPEN and SHUT destroy each
other; a WEAK object sharing a cell with anything is destroyed. Keke (`contacts_destroy_both`):
the pair rules of simulation.js, in its order, each a `layer.destroy_pairs` of its own:

1. every (YOU, DEFEAT-or-SINK) pair on one cell, from the lists as the movement step began; an
   object that is both pairs with itself;
2. every (object, SINK) pair on one cell, the objects from the phys list as it is now, the
   sinkers from the list as the movement step began (one destroyed by 1. still pairs);
3. every (HOT, MELT) and (OPEN, SHUT) pair on one cell, from the nouns' lists as they are now.

Text never takes part. FLOAT objects only touch FLOAT objects and grounded ones only grounded
ones (Keke has no FLOAT: an extension of the profile).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .layer import OFF_NOUN, OFF_PHYS, destroy_pairs, noun_lists, with_property
from .ruleset import DEFEAT, FLOAT, HOT, MELT, OPEN, SHUT, SINK, WEAK, WIN, YOU
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
    present = work.rules.present
    listed = noun_lists(work)
    players = with_property(work, YOU, listed) if present & YOU else []
    killers = with_property(work, DEFEAT | SINK, listed) if players else []
    sinkers = with_property(work, SINK, listed) if present & SINK else []
    features = {bit: [n for n, b in work.rules.ordered if b == bit]
                for bit in (HOT, MELT, OPEN, SHUT) if present & bit}

    def pairs(sides: list[list[int]], others: list[list[int]], cause: str, self_too: bool = True
              ) -> list[tuple[list[int], list[int], str]]:
        """Every (a, b) on one cell, in Keke's nested-loop order (a outer, b inner); each
        candidate counts against the turn's work (a crowded cell holds a square of them)."""
        at: dict[tuple[int, int], list[list[int]]] = {}
        for b in others:
            at.setdefault((b[2], b[3]), []).append(b)
        found = []
        for a in sides:
            here = at.get((a[2], a[3]), ())
            work.spend(len(here))
            found += [(a, b, cause) for b in here
                      if (self_too or a is not b) and not (masks[a[1]] ^ masks[b[1]]) & FLOAT]
        return found

    if killers:
        destroy_pairs(work, [(p, k, "sink" if masks[k[1]] & SINK else "defeat")
                             for p, k, _ in pairs(players, killers, "")])
    if sinkers:
        phys = [o for o in work.objs if o[1] < TEXT_BASE and not o[5] & OFF_PHYS]
        destroy_pairs(work, pairs(phys, sinkers, "sink", self_too=False))
    found = []
    for a_bit, b_bit, cause in ((HOT, MELT, "melt"), (OPEN, SHUT, "open_shut")):
        if a_bit in features and b_bit in features:
            now = noun_lists(work)
            side_a, side_b = ([o for n in features[bit] for o in now.get(n, ())]
                              for bit in (a_bit, b_bit))
            found.extend(pairs(side_a, side_b, cause))
    destroy_pairs(work, found)


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
    work.destroy_all(list(dead.values()))


def _has_partner(group: list[list[int]], o: list[int], masks: tuple[int, ...]) -> bool:
    want = SHUT if masks[o[1]] & OPEN else OPEN
    return any(p is not o and masks[p[1]] & want for p in group) or (
        masks[o[1]] & OPEN and masks[o[1]] & SHUT)


def victory(work: Work) -> bool:
    """True when some YOU object shares a cell (and float layer) with a WIN object (itself
    included); under `keke`, only objects on their nouns' lists count (`layer.listed`)."""
    masks = work.rules.masks
    if not (work.rules.present & YOU and work.rules.present & WIN):
        return False
    wins = [o for o in work.objs if masks[o[1]] & WIN and not o[5] & OFF_NOUN]
    if not wins:
        return False
    return any(_touch(p, w, masks) for p in work.objs if masks[p[1]] & YOU and not p[5] & OFF_NOUN
               for w in wins)


def has_you(work: Work) -> bool:
    """Whether anything is YOU (a level with nothing YOU and no win is lost)."""
    masks = work.rules.masks
    return bool(work.rules.present & YOU) and any(
        masks[o[1]] & YOU and not o[5] & OFF_NOUN for o in work.objs)
