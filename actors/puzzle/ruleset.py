"""Reading the text on the board into rules.

Text reads left-to-right along each row and top-to-bottom along each column. A sentence is
`SUBJECTS IS PREDICATES` where subjects are `[NOT]* NOUN` joined by AND and predicates are
`[NOT]* (NOUN | PROPERTY)` joined by AND. `TEXT` is the noun of every text block. Meaning:

* `X IS PROP` gives every X the property; `X IS NOT PROP` takes it away again (NOT wins).
* `X IS Y` transforms every X into Y (`X IS TEXT` into the text showing X, `TEXT IS Y` turns
  text into objects); `X IS X` and `X IS NOT Y` block those transforms.
* `NOT X IS ...` applies to every object noun but X.

When text is stacked, a cell reads as its first text block in board order. Keke's layered model
reads its object map instead (`board_lines`): each cell shows one word, and every IS joins the
words shown beside it. Text is always PUSH.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from .words import NOUNS, PROPERTIES, TEXT_BASE, TEXT_NOUN, WORDS

PROP_BIT: dict[str, int] = {name: 1 << i for i, name in enumerate(PROPERTIES)}
YOU, WIN, STOP, PUSH, PULL, MOVE, SINK, DEFEAT, HOT, MELT, OPEN, SHUT, WEAK, FLOAT = (
    PROP_BIT[p] for p in PROPERTIES)
TEXT_INDEX = len(NOUNS)  # noun index of `text` in per-noun tables
KINDS = TEXT_BASE + len(WORDS)
_NOUN_WORDS = frozenset(NOUNS) | {TEXT_NOUN}
_PROP_WORDS = frozenset(PROPERTIES)


@attrs.frozen
class RuleSet:
    """The rules in force: readable sentences, a property mask per kind, transforms in order.

    `you_order` / `move_order` list noun indices in the order their YOU / MOVE rules were read
    (Keke moves objects noun by noun in that order); `ordered` lists every (noun index,
    property bit) in force in the order its rule was read (Keke builds its YOU, DEFEAT, SINK,
    ... lists rule by rule, `layer.with_property`).
    """

    sentences: tuple[str, ...]
    masks: tuple[int, ...]
    transforms: tuple[tuple[int, int], ...]
    you_order: tuple[int, ...]
    move_order: tuple[int, ...]
    ordered: tuple[tuple[int, int], ...] = ()
    present: int = 0  # every property some object noun has: lets a turn skip idle steps


def _noun_index(word: str) -> int:
    return TEXT_INDEX if word == TEXT_NOUN else NOUNS.index(word)


def _terms(line: list[str], i: int, step: int, allowed: frozenset[str]
           ) -> list[tuple[bool, str]]:
    """Parse `[NOT]* WORD (AND [NOT]* WORD)*` starting at `i`, walking by `step` (+1 or -1)."""
    terms: list[tuple[bool, str]] = []
    inside = range(len(line))
    while True:
        nots = 0
        if step > 0:
            while i in inside and line[i] == "not":
                nots, i = nots + 1, i + 1
            if i not in inside or line[i] not in allowed:
                return terms
            word, i = line[i], i + 1
        else:
            if i not in inside or line[i] not in allowed:
                return terms
            word, i = line[i], i - 1
            while i in inside and line[i] == "not":
                nots, i = nots + 1, i - 1
        terms.append((nots % 2 == 1, word))
        if i not in inside or line[i] != "and":
            return terms
        i += step


Line = tuple[list[str], int | None]
"""A word line and the index of the one IS to read there (None: every IS in it)."""


def read_sentences(lines: list[Line]) -> list[tuple[list[tuple[bool, str]],
                                                    list[tuple[bool, str]]]]:
    """Every (subjects, predicates) sentence in the given word lines, in reading order."""
    found = []
    for line, at in lines:
        for i in range(len(line)) if at is None else (at,):
            if line[i] != "is":
                continue
            subjects = _terms(line, i - 1, -1, _NOUN_WORDS)
            predicates = _terms(line, i + 1, 1, _NOUN_WORDS | _PROP_WORDS)
            if subjects and predicates:
                found.append((subjects[::-1], predicates))
    return found


def board_lines(text: list[tuple[int, ...]], layered: bool = False) -> list[Line]:
    """Word lines of the board, in the order their IS blocks come in board order.

    Classic (`text` holds `(kind, x, y)`): every maximal horizontal and vertical run of text
    cells through an IS; a stacked cell shows its first block. Layered (`(kind, x, y, unread)`,
    Keke's object map): a cell shows its last word that was not hidden from the map
    (`layer.UNREAD`), and every IS, shown or hidden, reads the runs of shown words on either
    side of it, horizontally then vertically, as Keke's `interpretRules` reads each IS.
    """
    if layered:
        return _map_lines(text)
    cell: dict[tuple[int, int], str] = {}
    for kind, x, y in text:
        cell.setdefault((x, y), WORDS[kind - TEXT_BASE])
    lines: list[Line] = []
    seen: set[tuple[int, int, int]] = set()
    for kind, x, y in text:
        if WORDS[kind - TEXT_BASE] != "is" or cell[(x, y)] != "is":
            continue
        for dx, dy, axis in ((1, 0, 0), (0, 1, 1)):
            sx, sy = x, y
            while (sx - dx, sy - dy) in cell:
                sx, sy = sx - dx, sy - dy
            if (sx, sy, axis) in seen:
                continue
            seen.add((sx, sy, axis))
            run = []
            while (sx, sy) in cell:
                run.append(cell[(sx, sy)])
                sx, sy = sx + dx, sy + dy
            lines.append((run, None))
    return lines


def _map_lines(text: list[tuple[int, ...]]) -> list[Line]:
    cell = {(x, y): WORDS[kind - TEXT_BASE] for kind, x, y, unread in text if not unread}
    lines: list[Line] = []
    for kind, x, y, _ in text:
        if WORDS[kind - TEXT_BASE] != "is":
            continue
        for dx, dy in ((1, 0), (0, 1)):
            before: list[str] = []
            sx, sy = x - dx, y - dy
            while (sx, sy) in cell:
                before.append(cell[(sx, sy)])
                sx, sy = sx - dx, sy - dy
            after: list[str] = []
            sx, sy = x + dx, y + dy
            while (sx, sy) in cell:
                after.append(cell[(sx, sy)])
                sx, sy = sx + dx, sy + dy
            if before and after:
                lines.append(([*before[::-1], "is", *after], len(before)))
    return lines


def parse_rules(text: list[tuple[int, ...]], layered: bool = False) -> RuleSet:
    """The rule set that the text blocks (in board order) spell out: `(kind, x, y)` each, or
    under `layered` `(kind, x, y, unread)`, read from Keke's object map (see `board_lines`)."""
    plus = [0] * (len(NOUNS) + 1)
    minus = [0] * (len(NOUNS) + 1)
    sentences: list[str] = []
    transforms: list[tuple[int, int]] = []
    blocked: set[tuple[int, int]] = set()
    frozen: set[int] = set()
    ordered: list[tuple[int, int]] = []
    for subjects, predicates in read_sentences(board_lines(text, layered)):
        for sneg, subject in subjects:
            targets = ([n for n in range(len(NOUNS)) if NOUNS[n] != subject] if sneg
                       else [_noun_index(subject)])
            for pneg, word in predicates:
                sentence = f"{'not ' * sneg}{subject} is {'not ' * pneg}{word}"
                if sentence not in sentences:
                    sentences.append(sentence)
                for noun in targets:
                    if word in PROP_BIT:
                        (minus if pneg else plus)[noun] |= PROP_BIT[word]
                        if not pneg and (noun, PROP_BIT[word]) not in ordered:
                            ordered.append((noun, PROP_BIT[word]))
                    elif pneg:
                        blocked.add((noun, _noun_index(word)))
                    elif _noun_index(word) == noun:
                        frozen.add(noun)
                    elif (noun, _noun_index(word)) not in transforms:
                        transforms.append((noun, _noun_index(word)))
    masks = [0] * KINDS
    for kind in range(KINDS):
        noun = TEXT_INDEX if kind >= TEXT_BASE else kind
        if kind < len(NOUNS) or kind >= TEXT_BASE:
            masks[kind] = plus[noun] & ~minus[noun]
            if kind >= TEXT_BASE:
                masks[kind] |= PUSH
    kept = tuple(t for t in transforms if t[0] not in frozen and t not in blocked)
    live = tuple((n, bit) for n, bit in ordered if plus[n] & ~minus[n] & bit)
    return RuleSet(
        sentences=tuple(sentences), masks=tuple(masks), transforms=kept,
        you_order=tuple(n for n, bit in live if bit == YOU),
        move_order=tuple(n for n, bit in live if bit == MOVE),
        ordered=live, present=_union(plus[m] & ~minus[m] for m in range(len(NOUNS) + 1)))


def _union(bits: Iterable[int]) -> int:
    out = 0
    for b in bits:
        out |= b
    return out
