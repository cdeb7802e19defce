"""Keke's object layer and object lists, kept as per-object flags on the board (`obj[5]`).

Besides positions, Keke's simulator (the `keke` profile) keeps an object map (`om`: one thing
per cell), the *phys* list (every object, in creation order), one list per noun (`sort_phys`,
who is YOU, DEFEAT, ... is read from these), and per-object `is_movable`/`is_stopped` flags
that its `resetAll` recomputes for phys objects only. Normally both lists hold every object
and the flags follow from the rules, so the board needs one bit: IN_LAYER.

Its `destroyObjs` removes each member of a contact pair with `splice(indexOf(x), 1)` from both
lists. Removing an object that is no longer there (one that is in two pairs, or paired with
itself, such as an object that is both YOU and DEFEAT) removes the list's *last* element
instead, so the two lists can lose different objects. An object off the phys list keeps the
flags it had, and its map entry stays until something overwrites it. The board keeps objects
in creation order, which is the order of both lists, so membership bits record it exactly:

* `OFF_PHYS`, `OFF_NOUN`: spliced out of the phys list / out of its noun's list. An object off
  its noun's list is no longer YOU, PUSH, ... ; one off the phys list is never reset and cannot
  be drowned. An object off both, and not on the map, is gone.
* `KEPT_MOVABLE`, `KEPT_STOPPED`: the `is_movable`/`is_stopped` flags of an object off the phys
  list (only ever set again, by the lists it is still on).
* `UNREAD` (text): the word was hidden from the map when the rules were last read. Keke reads
  the rules from the map; its first reading of a turn sees the map as movement left it.

Under `classic` every flag stays 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .ruleset import MOVE, PUSH, STOP, YOU
from .words import TEXT_BASE

if TYPE_CHECKING:
    from .turn import Work

IN_LAYER, OFF_PHYS, OFF_NOUN, KEPT_MOVABLE, KEPT_STOPPED, UNREAD = 1, 2, 4, 8, 16, 32
FLAG_BITS = 6
GONE = OFF_PHYS | OFF_NOUN
_LAYERED = YOU | MOVE | PUSH


def flags_valid(kind: int, flags: int, layered: bool) -> bool:
    """Whether `flags` is a combination a turn can produce for an object of `kind`."""
    if not layered:
        return flags == 0
    if flags >> FLAG_BITS:
        return False
    if kind >= TEXT_BASE:
        return not flags & ~(IN_LAYER | UNREAD)
    if flags & UNREAD or (flags & (KEPT_MOVABLE | KEPT_STOPPED) and not flags & OFF_PHYS):
        return False
    return flags & GONE != GONE or bool(flags & IN_LAYER)


def listed(o: list[int]) -> bool:
    """On its noun's list: what Keke reads YOU, PUSH, WIN, DEFEAT, ... from (text always is)."""
    return not o[5] & OFF_NOUN


def movable(o: list[int], masks: tuple[int, ...]) -> bool:
    """Keke's `is_movable` of `o` (words always are)."""
    f = o[5]
    if o[1] >= TEXT_BASE:
        return True
    if f & OFF_PHYS:
        return bool(f & KEPT_MOVABLE)
    return not f & OFF_NOUN and bool(masks[o[1]] & _LAYERED)


def stopped(o: list[int], masks: tuple[int, ...]) -> bool:
    """Keke's `is_stopped` of `o` (words never are)."""
    f = o[5]
    if o[1] >= TEXT_BASE:
        return False
    if f & OFF_PHYS:
        return bool(f & KEPT_STOPPED)
    return not f & OFF_NOUN and bool(masks[o[1]] & STOP)


def with_property(work: Work, bits: int, listed: dict[int, list[list[int]]] | None = None
                  ) -> list[list[int]]:
    """Keke's list of the objects with a property in `bits`: for every rule giving one, in rule
    order, the objects on that noun's list (a noun with two such rules is listed twice).
    `listed` (from `noun_lists`) saves the scan of the board."""
    nouns = [noun for noun, bit in work.rules.ordered if bit & bits]
    if not nouns:
        return []
    if listed is None:
        listed = noun_lists(work)
    return [o for noun in nouns for o in listed.get(noun, ())]


def noun_lists(work: Work) -> dict[int, list[list[int]]]:
    """Keke's `sort_phys`: per noun, the objects on its list, in list order."""
    listed: dict[int, list[list[int]]] = {}
    for o in work.objs:
        if o[1] < TEXT_BASE and not o[5] & OFF_NOUN:
            listed.setdefault(o[1], []).append(o)
    return listed


def reset(work: Work) -> None:
    """Keke's `resetAll`: objects off the phys list gain the flags of the lists they are still
    on, then the map is re-placed (`place`), and objects nothing refers to any more are dropped."""
    masks = work.rules.masks
    off = False
    for o in work.objs:
        f = o[5]
        if f & OFF_PHYS:
            off = True
            if not f & OFF_NOUN:
                m = masks[o[1]]
                o[5] = f | (KEPT_MOVABLE if m & _LAYERED else 0) | (KEPT_STOPPED if m & STOP else 0)
        elif f & OFF_NOUN:
            off = True
    place(work)
    if off:
        drop_gone(work)


def drop_gone(work: Work) -> None:
    """Forget objects off both lists that the map no longer shows: nothing can reach them."""
    work.objs = [o for o in work.objs if o[5] & GONE != GONE or o[5] & IN_LAYER]


def place(work: Work) -> None:
    """Keke's `setOverlaps`: phys objects in order enter the map where they are movable or STOP
    and clear their cell otherwise, then every word enters. Entries of objects off the phys list
    stay where nothing overwrites them. Between two of these the map changes move by move, which
    is why membership is a board flag."""
    masks = work.rules.masks
    layer: dict[tuple[int, int], list[int]] = {
        (o[2], o[3]): o for o in work.objs if o[5] & IN_LAYER and o[5] & OFF_PHYS}
    for o in work.objs:
        if o[1] < TEXT_BASE and not o[5] & OFF_PHYS:
            if movable(o, masks) or stopped(o, masks):
                layer[(o[2], o[3])] = o
            else:
                layer.pop((o[2], o[3]), None)
    for o in work.objs:
        if o[1] >= TEXT_BASE:
            layer[(o[2], o[3])] = o
    for o in work.objs:
        o[5] &= ~IN_LAYER
    for o in layer.values():
        o[5] |= IN_LAYER
    work.layer = layer


def mark_read(work: Work) -> None:
    """Before a rules reading: words the map does not show are not read (`UNREAD`)."""
    for o in work.objs:
        if o[1] >= TEXT_BASE:
            o[5] = o[5] | UNREAD if not o[5] & IN_LAYER else o[5] & ~UNREAD


def destroy_pairs(work: Work, pairs: list[tuple[list[int], list[int], str]]) -> None:
    """Keke's `destroyObjs`: splice both members of each pair from the phys list and from their
    nouns' lists, in pair order (a miss splices the last element), clear the map at the first
    member's cell, then `reset`. `destroyed` reports each member once, and each object the
    misses removed for good, with the pair's cause. Linear in pairs and objects: a list's last
    element is found from where the previous miss left off (splices only ever remove), and the
    map is cleared once (no splice reads it)."""
    if not pairs:
        return
    masks = work.rules.masks
    objs = work.objs
    before = {o[0]: o[5] for o in objs}  # the flags of the last reset, for KEPT_*
    hit: dict[int, tuple[list[int], str]] = {}
    tail: dict[tuple[int, int], int] = {}  # (bit, kind; -1 for phys) -> last element's index

    def last(bit: int, kind: int) -> list[int] | None:
        i = tail.get((bit, kind), len(objs) - 1)
        while i >= 0 and not (objs[i][1] < TEXT_BASE and not objs[i][5] & bit
                              and kind in (-1, objs[i][1])):
            i -= 1
        tail[(bit, kind)] = i
        return objs[i] if i >= 0 else None

    def splice(x: list[int], bit: int, cause: str) -> None:
        if not x[5] & bit:
            victim = x
        else:  # JavaScript's splice(-1, 1): the list's last element goes instead
            found = last(bit, -1 if bit == OFF_PHYS else x[1])
            if found is None:
                return
            victim = found
            hit.setdefault(victim[0], (victim, cause))
        if bit == OFF_PHYS:
            m = masks[victim[1]] if not before.get(victim[0], OFF_NOUN) & OFF_NOUN else 0
            victim[5] |= (KEPT_MOVABLE if m & _LAYERED else 0) | (KEPT_STOPPED if m & STOP else 0)
        victim[5] |= bit

    cleared: set[tuple[int, int]] = set()
    for p, o, cause in pairs:
        hit.setdefault(p[0], (p, cause))
        hit.setdefault(o[0], (o, cause))
        splice(p, OFF_PHYS, cause)
        splice(o, OFF_PHYS, cause)
        splice(p, OFF_NOUN, cause)
        splice(o, OFF_NOUN, cause)
        cleared.add((p[2], p[3]))
    for q in objs:
        if q[5] & IN_LAYER and (q[2], q[3]) in cleared:
            q[5] &= ~IN_LAYER
    reset(work)
    members = {p[0] for p, _, _ in pairs} | {o[0] for _, o, _ in pairs}
    alive = {o[0] for o in work.objs}
    for idx, (obj, cause) in hit.items():
        if idx in members or idx not in alive:
            work.note_destroyed(obj, cause)
