"""Public snapshots: the JSON-shaped settled state `get_state()` returns and `restore()` accepts.

    {"level": "1", "profile": "keke", "turn": 3, "moves": ["right", ...],
     "objects": [{"id": "o1", "noun": "baba", "x": 1, "y": 4, "facing": "right",
                  "layer": true},                 # `layer`: keke profile only
                 {"id": "t1", "word": "baba", "x": 0, "y": 0, "facing": "right"}, ...],
     "rules": ["baba is you", ...], "won": false, "lost": false,
     "mechanics": {"gate-a": {"open": false}}}          # only when the level declares mechanics

Objects are listed in board order. Under `keke` an entry also carries Keke's list membership
(`layer.py`) where it is not the usual: `"in_phys": false` with the kept `"movable"` and
`"stopped"` flags, `"in_noun_list": false`, and for a word `"read": false`. A snapshot is
always built fresh, so callers may mutate it.
"""

from __future__ import annotations

from typing import Any

from .board import Board, Context
from .diagnostics import Diagnostic, Diagnostics, LevelError, collect, join_path
from .layer import (
    IN_LAYER,
    KEPT_MOVABLE,
    KEPT_STOPPED,
    OFF_NOUN,
    OFF_PHYS,
    UNREAD,
    flags_valid,
)
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
            entry["layer"] = bool(layer & IN_LAYER)
            if layer & OFF_PHYS:
                entry.update(in_phys=False, movable=bool(layer & KEPT_MOVABLE),
                             stopped=bool(layer & KEPT_STOPPED))
            if layer & OFF_NOUN:
                entry["in_noun_list"] = False
            if layer & UNREAD:
                entry["read"] = False
        objects.append(entry)
    state: dict[str, Any] = {"objects": objects,
                             "rules": list(ctx.rules(board.objects).sentences)}
    if ctx.mechanics:
        state["mechanics"] = {
            mid: {name: value[i] for i, (name, _) in enumerate(host.schema)}
            for (mid, host, _), value in zip(ctx.mechanics, board.mechanics, strict=True)}
    return state


def state_to_board(ctx: Context, state: Any) -> Board:
    """The board a snapshot describes; raises `RestoreError` naming every problem, up to
    `MAX_DIAGNOSTICS` (then `STOPPED`): a snapshot of another layout could fail at every
    one of thousands of objects, and its restore's error is kept and logged."""
    if not isinstance(state, dict) or not isinstance(state.get("objects"), list):
        raise RestoreError([Diagnostic("", "a snapshot is an object with an objects list")])
    board, diags = collect(lambda found: _board(ctx, state, found))
    if board is None:
        raise RestoreError(diags)
    return board


def _board(ctx: Context, state: dict[str, Any], diags: Diagnostics) -> Board | None:
    """`state_to_board`'s reading: the board, or None with its problems added to `diags`."""
    board: list[tuple[int, int, int, int, int, int]] = []
    fields = {"id", "noun", "word", "x", "y", "facing", *_FLAG_FIELDS}
    seen: set[str] = set()
    for i, item in enumerate(state["objects"]):
        at = join_path("objects", i)
        if not isinstance(item, dict) or set(item) - fields:
            diags.append(Diagnostic(at, "must be an object with id, noun or word, x, y, facing"))
            continue
        oid = item.get("id")
        if not isinstance(oid, str) or oid not in ctx.id_code or oid in seen:
            diags.append(Diagnostic(join_path(at, "id"), f"unknown or repeated id {oid!r:.80}"))
            continue
        seen.add(oid)
        if "word" in item:
            word = item["word"]
            kind = text_kind(word) if isinstance(word, str) and word in WORDS else None
        else:
            noun = item.get("noun")
            kind = NOUN_CODE.get(noun) if isinstance(noun, str) else None
        x, y, facing = item.get("x"), item.get("y"), item.get("facing", "right")
        if kind is None or not isinstance(facing, str) or facing not in FACING_CODE or not (
                type(x) is int and type(y) is int  # not a bool
                and 0 <= x < ctx.width and 0 <= y < ctx.height):
            diags.append(Diagnostic(at, "bad noun/word, position or facing"))
            continue
        flags = _flags(item)
        if flags is None or not flags_valid(kind, flags, ctx.layered):
            diags.append(Diagnostic(at, "bad Keke layer or list flags (layer, in_phys, "
                                    "in_noun_list, movable, stopped, read; keke profile only)"))
            continue
        board.append((ctx.id_code[oid], kind, x, y, FACING_CODE[facing], flags))
    values = mechanics_from_state(ctx, state.get("mechanics", {} if not ctx.mechanics else None),
                                  diags)
    if diags:
        return None
    if ctx.layered and not any("layer" in o for o in state["objects"]):
        # A snapshot without Keke layer flags gets them the way Keke would after a reload.
        from .layer import place
        from .turn import Work
        work = Work(ctx, Board(tuple(board), values), record=False)
        place(work)
        board = [tuple(o) for o in work.objs]
    return Board(tuple(board), values)


# Snapshot field -> (flag bit, the field's value that sets it); absent fields are the usual.
_FLAG_FIELDS = {"layer": (IN_LAYER, True), "in_phys": (OFF_PHYS, False),
                "in_noun_list": (OFF_NOUN, False), "movable": (KEPT_MOVABLE, True),
                "stopped": (KEPT_STOPPED, True), "read": (UNREAD, False)}


def _flags(item: dict[str, Any]) -> int | None:
    """The board flags of a snapshot entry, None when a flag field is not a boolean."""
    flags = 0
    for name, (bit, sets) in _FLAG_FIELDS.items():
        if name in item:
            if not isinstance(item[name], bool):
                return None
            if item[name] is sets:
                flags |= bit
    return flags


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
