"""The board for agents: its things as JSON objects and as a text grid.

The grid has one 5-character column per cell and a header of x coordinates; each row starts
with its y. A cell shows its most telling thing by the first four letters of its name, in
lower case for an object (`baba`, `flag`) and upper case for a word (`BABA`, `IS`, `YOU`),
then a mark: `*` for a YOU object, else `+` when more things share the cell, else a space;
`.` is an empty cell. Every cell holding more than one thing is listed under the grid with all
its things (YOU ones marked `*`). Four letters tell every noun and word apart
(`words.NOUNS`, `words.WORDS`). Example::

      0    1    2    3
    0 BABA IS   YOU  .
    1 baba*.    .    flag+
    stacked: (3,1) flag tile

What a cell shows: a YOU object first, then a word, then any other object (board order).
"""

from __future__ import annotations

from typing import Any

from .board import Board, Context
from .ruleset import YOU
from .snapshot import board_to_state
from .words import NOUNS, TEXT_BASE, WORDS


def name(kind: int) -> str:
    """A kind's four-letter grid name: `baba` for the object, `BABA` for the word."""
    return WORDS[kind - TEXT_BASE][:4].upper() if kind >= TEXT_BASE else NOUNS[kind][:4]


_NAMES = {kind: name(kind) for kind in [*range(len(NOUNS)),
                                        *range(TEXT_BASE, TEXT_BASE + len(WORDS))]}


def grid(ctx: Context, board: Board) -> str:
    """The text grid of `board` (see the module docstring)."""
    masks = ctx.rules(board.objects).masks
    cells: dict[tuple[int, int], list[tuple[int, int, str]]] = {}
    for order, o in enumerate(board.objects):
        you = o[1] < TEXT_BASE and bool(masks[o[1]] & YOU)
        rank = 0 if you else 1 if o[1] >= TEXT_BASE else 2
        cells.setdefault((o[2], o[3]), []).append((rank, order, _NAMES[o[1]] + "*" * you))
    rows = [[".    "] * ctx.width for _ in range(ctx.height)]
    stacked: list[str] = []
    for (x, y), here in sorted(cells.items(), key=lambda c: (c[0][1], c[0][0])):
        here.sort()
        rank, _, top = here[0]
        mark = "*" if rank == 0 else "+" if len(here) > 1 else " "
        rows[y][x] = f"{top.rstrip('*'):<4}{mark}"
        if len(here) > 1:
            stacked.append(f"({x},{y}) " + " ".join(label for _, _, label in here))
    lines = ["  " + "".join(f"{x:<5}" for x in range(ctx.width)).rstrip()]
    lines += [f"{y:<2}" + "".join(row).rstrip() for y, row in enumerate(rows)]
    if stacked:
        lines.append("stacked: " + "; ".join(stacked))
    return "\n".join(lines)


def board_json(ctx: Context, board: Board) -> dict[str, Any]:
    """The board as `{"width", "height", "objects", "grid", "rules", "you"}` (objects in
    board order, as the engine's snapshot lists them; `you`: the ids of the YOU objects)."""
    state = board_to_state(ctx, board)
    masks = ctx.rules(board.objects).masks
    you = [ctx.ids[o[0]] for o in board.objects if o[1] < TEXT_BASE and masks[o[1]] & YOU]
    return {"width": ctx.width, "height": ctx.height, "objects": state["objects"],
            "grid": grid(ctx, board), "rules": state["rules"], "you": you}
