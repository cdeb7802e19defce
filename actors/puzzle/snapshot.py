"""Public snapshots: the JSON-shaped settled state `get_state()` returns and `restore()` accepts.

    {"level": "1", "profile": "keke", "turn": 3, "moves": ["right", ...],
     "objects": [{"id": "o1", "noun": "baba", "x": 1, "y": 4, "facing": "right",
                  "layer": true},                 # `layer`: keke profile only
                 {"id": "t1", "word": "baba", "x": 0, "y": 0, "facing": "right"}, ...],
     "rules": ["baba is you", ...], "won": false, "lost": false,
     "mechanics": {"gate-a": {"open": false}}}          # only when the level declares mechanics

Objects are listed in board order. A snapshot is always built fresh, so callers may mutate it.
"""

from __future__ import annotations

from typing import Any

from .board import Board, Context
from .diagnostics import Diagnostic, LevelError, join_path
from .mechanics.host import field_values
from .words import DIRECTIONS, FACING_CODE, NOUN_CODE, WORDS, kind_name, text_kind


class RestoreError(LevelError):
    """A snapshot does not describe a valid state of this level."""


def board_to_state(ctx: Context, board: Board) -> dict[str, Any]:
    """The public snapshot fields describing `board` (objects, rules, mechanics)."""
    objects = []
    layered = ctx.profile.collision == "layered"
    for idx, kind, x, y, facing, layer in board.objects:
        name = kind_name(kind)
        entry: dict[str, Any] = {"id": ctx.ids[idx]}
        if name.startswith("text:"):
            entry["word"] = name[5:]
        else:
            entry["noun"] = name
        entry.update(x=x, y=y, facing=DIRECTIONS[facing])
        if layered:
            entry["layer"] = bool(layer)
        objects.append(entry)
    state: dict[str, Any] = {"objects": objects,
                             "rules": list(ctx.rules(board.objects).sentences)}
    if ctx.mechanics:
        state["mechanics"] = {
            mid: {name: value[i] for i, (name, _) in enumerate(host.schema)}
            for (mid, host, _), value in zip(ctx.mechanics, board.mechanics, strict=True)}
    return state


def state_to_board(ctx: Context, state: Any) -> Board:
    """The board a snapshot describes; raises `RestoreError` naming every problem."""
    diags: list[Diagnostic] = []
    if not isinstance(state, dict) or not isinstance(state.get("objects"), list):
        raise RestoreError([Diagnostic("", "a snapshot is an object with an objects list")])
    board: list[tuple[int, int, int, int, int, int]] = []
    fields = {"id", "noun", "word", "x", "y", "facing", "layer"}
    seen: set[str] = set()
    for i, item in enumerate(state["objects"]):
        at = join_path("objects", i)
        if not isinstance(item, dict) or set(item) - fields:
            diags.append(Diagnostic(at, "must be an object with id, noun or word, x, y, facing"))
            continue
        oid = item.get("id")
        if not isinstance(oid, str) or oid not in ctx.id_code or oid in seen:
            diags.append(Diagnostic(join_path(at, "id"), f"unknown or repeated id {oid!r}"))
            continue
        seen.add(oid)
        if "word" in item:
            word = item["word"]
            kind = text_kind(word) if isinstance(word, str) and word in WORDS else None
        else:
            noun = item.get("noun")
            kind = NOUN_CODE.get(noun) if isinstance(noun, str) else None
        x, y, facing = item.get("x"), item.get("y"), item.get("facing", "right")
        if item.get("layer") and ctx.profile.collision != "layered":
            diags.append(Diagnostic(join_path(at, "layer"), "only the layered (keke) collision "
                                    "model has an object layer"))
            continue
        if kind is None or not isinstance(facing, str) or facing not in FACING_CODE or not isinstance(
                item.get("layer", False), bool) or not (
                isinstance(x, int) and isinstance(y, int)
                and 0 <= x < ctx.width and 0 <= y < ctx.height):
            diags.append(Diagnostic(at, "bad noun/word, position or facing"))
            continue
        board.append((ctx.id_code[oid], kind, x, y, FACING_CODE[facing],
                      int(item.get("layer", False))))
    values = mechanics_from_state(ctx, state.get("mechanics", {} if not ctx.mechanics else None),
                                  diags)
    if diags:
        raise RestoreError(diags)
    if ctx.profile.collision == "layered" and not any("layer" in o for o in state["objects"]):
        # A snapshot without Keke layer flags gets them the way Keke would after a reload.
        from .movement import rebuild_layer
        from .turn import Work
        work = Work(ctx, Board(tuple(board), values), record=False)
        rebuild_layer(work)
        board = [tuple(o) for o in work.objs]
    return Board(tuple(board), values)


def mechanics_from_state(ctx: Context, data: Any, diags: list[Diagnostic]
                         ) -> tuple[tuple[Any, ...], ...]:
    """Mechanic values from a snapshot's `mechanics` envelope, rejecting unknown ids/fields."""
    if not isinstance(data, dict):
        diags.append(Diagnostic("mechanics", "must be an object keyed by mechanic id"))
        return ()
    known = {mid for mid, _, _ in ctx.mechanics}
    for mid in sorted(set(data) - known, key=str):
        diags.append(Diagnostic(join_path("mechanics", str(mid)), "unknown mechanic id"))
    values = []
    for mid, host, _ in ctx.mechanics:
        at = join_path("mechanics", mid)
        entry = data.get(mid)
        if not isinstance(entry, dict):
            diags.append(Diagnostic(at, "missing mechanic state"))
            continue
        names = [name for name, _ in host.schema]
        for extra in sorted(set(entry) - set(names), key=str):
            diags.append(Diagnostic(join_path(at, str(extra)), "unknown mechanic state field"))
        value = []
        for name, ftype in host.schema:
            v = entry.get(name)
            if name not in entry or v not in field_values(ftype) or (
                    ftype == "bool" and not isinstance(v, bool)):
                diags.append(Diagnostic(join_path(at, name), f"missing or invalid {ftype} value"))
            value.append(v)
        values.append(tuple(value))
    return tuple(values)
