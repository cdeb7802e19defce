"""Fast path against public engine, turn by turn, on the whole Keke state.

A view is everything either side keeps that can change a future turn: per thing its kind,
cell, MOVE facing, Keke list membership (phys list, noun list), object-map entry and
`is_movable`/`is_stopped` flags, plus the rules in force and won/lost.
"""

from __future__ import annotations

import collections
from typing import Any

from actors.puzzle.board import Board, Context
from actors.puzzle.fast import FastLevel
from actors.puzzle.fast_turn import FastTurn
from actors.puzzle.layer import IN_LAYER, OFF_NOUN, OFF_PHYS, movable, stopped
from actors.puzzle.level import Level
from actors.puzzle.ruleset import MOVE, PROP_BIT
from actors.puzzle.turn import advance, settle_initial
from actors.puzzle.words import MOVE_LETTERS, NOUNS, TEXT_BASE, WORDS

FACING = {1: 1, 2: 3, 3: 2, 4: 0}  # fast facing -> words.DIRECTIONS code
View = tuple[collections.Counter, frozenset[str]]


def fast_view(fast: FastLevel, key: bytes) -> View:
    """The fast path's state: every object any list or the map refers to, and the rules."""
    t = FastTurn(fast)
    t.decode(key)
    movers, phys = set(t.automovers), set(t.phys)
    listed = {o for objs in t.sp.values() for o in objs}
    shown = {o - 1 for o in t.om if o}
    things = collections.Counter()
    for o in sorted(set(range(fast.n_words)) | phys | listed | shown):
        word = o < fast.n_words
        things[(t.nm[o], *fast.xy(t.pos[o]), FACING[t.dr[o]] if o in movers else None,
                None if word else o in phys, None if word else o in listed, o in shown,
                bool(t.mv[o]), bool(t.st[o]))] += 1
    rules = frozenset(f"{WORDS[a]} is {WORDS[b]}" for a, b in t.rules
                      if a < len(NOUNS) and (b < len(NOUNS) or WORDS[b] in PROP_BIT))
    return things, rules


def engine_view(ctx: Context, board: Board) -> View:
    """The engine's state in the same terms (`layer.py` flags)."""
    rules = ctx.rules(board.objects)
    things = collections.Counter()
    for o in board.objects:
        word, f = o[1] >= TEXT_BASE, o[5]
        mover = rules.masks[o[1]] & MOVE and not f & OFF_NOUN
        things[(o[1], o[2], o[3], o[4] if mover else None, None if word else not f & OFF_PHYS,
                None if word else not f & OFF_NOUN, bool(f & IN_LAYER),
                movable(list(o), rules.masks), stopped(list(o), rules.masks))] += 1
    return things, frozenset(rules.sentences)


def first_divergence(lv: Level, moves: str) -> int | None:
    """The first turn after which the paths disagree (0: the settled start), None if never."""
    fast, ctx = FastLevel(lv), Context(lv)
    key, board = fast.initial(), settle_initial(ctx, lv.objects)
    if fast_view(fast, key) != engine_view(ctx, board):
        return 0
    for i, letter in enumerate(moves, 1):
        key, won, lost = fast.step(key, letter)
        out = advance(ctx, board, MOVE_LETTERS[letter], record=False)
        board = out.board
        if won != out.won or (out.accepted and lost != out.lost) or (
                fast_view(fast, key) != engine_view(ctx, board)):
            return i
        if won:
            break
    return None


def board_after(lv: Level, moves: str, profile: Any = None) -> tuple[Context, Board]:
    """The engine's settled board after `moves` from the start."""
    ctx = Context(lv, profile)
    board = settle_initial(ctx, lv.objects)
    for letter in moves:
        board = advance(ctx, board, MOVE_LETTERS[letter], record=False).board
    return ctx, board
