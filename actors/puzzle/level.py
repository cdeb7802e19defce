"""The JSON level format, its validation with path diagnostics, and the compiled `Level` value.

A level is a JSON object::

    {"id": "intro-1", "name": "First steps", "author": "me", "width": 8, "height": 6,
     "hint": "Walk to the flag.",                 # optional, one line
     "profile": "classic",                       # optional: "classic" (default) or "keke"
     "objects": [{"id": "b1", "noun": "baba", "x": 1, "y": 2, "facing": "right"}],
     "text":    [{"id": "t1", "word": "baba", "x": 0, "y": 0}],
     "mechanics": [...],                          # optional, see actors/puzzle/mechanics
     "solution": "rrdd"}                          # optional recorded moves over u d l r s

Coordinates are 0-based, x to the right and y down; the grid edge is impassable. `facing` is
optional (default `right`). Ids are unique across objects and text. Every problem found is reported
as `path: message`, e.g. `levels[3].objects[12].noun: unknown noun "frog"`; `check_level` takes the
path prefix so pack validation reports paths inside the pack.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from protocol.text import utf16_len

from .diagnostics import Diagnostic, LevelError, collect, join_path
from .mechanics.definition import MechanicDef, check_mechanics
from .profiles import PROFILES
from .words import DIRECTIONS, FACING_CODE, NOUN_CODE, NOUNS, WORDS, kind_name, text_kind

MAX_SIDE = 64
MAX_ITEMS = 4096
MAX_ID_CHARS = 64
MAX_LINE_CHARS = 200  # name, author and hint
_LEVEL_FIELDS = frozenset(
    {"id", "name", "author", "hint", "width", "height", "profile", "objects", "text",
     "mechanics", "solution"})
_OBJECT_FIELDS = frozenset({"id", "noun", "x", "y", "facing"})
_TEXT_FIELDS = frozenset({"id", "word", "x", "y", "facing"})
_SOLUTION = re.compile(r"^[udlrsUDLRS]*$")

Obj = tuple[int, int, int, int, int]
"""One board entry: (id code, kind code, x, y, facing code)."""


@attrs.frozen
class Level:
    """A validated, normalized level. `objects` is the authored board in authored order."""

    id: str
    name: str
    author: str
    width: int
    height: int
    profile: str
    ids: tuple[str, ...]
    objects: tuple[Obj, ...]
    mechanics: tuple[MechanicDef, ...]
    solution: str | None
    hint: str = ""

    def to_json(self) -> dict[str, Any]:
        """The level as canonical JSON data (parses back to an equal `Level`)."""
        objects: list[dict[str, Any]] = []
        text: list[dict[str, Any]] = []
        for idx, kind, x, y, facing in self.objects:
            name = kind_name(kind)
            entry: dict[str, Any] = {"id": self.ids[idx]}
            if name.startswith("text:"):
                entry["word"] = name[5:]
                text.append(entry)
            else:
                entry["noun"] = name
                objects.append(entry)
            entry.update(x=x, y=y, facing=DIRECTIONS[facing])
        data: dict[str, Any] = {
            "id": self.id, "name": self.name, "author": self.author, "width": self.width,
            "height": self.height, "profile": self.profile, "objects": objects, "text": text,
        }
        if self.hint:
            data["hint"] = self.hint
        if self.mechanics:
            data["mechanics"] = [m.to_json() for m in self.mechanics]
        if self.solution is not None:
            data["solution"] = self.solution
        return data


def _int_in(value: Any, lo: int, hi: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi


def check_level(data: Any, path: str = "") -> tuple[Level | None, list[Diagnostic]]:
    """Validate level JSON data; returns the `Level` (None if invalid) and its diagnostics
    (every one, up to `diagnostics.MAX_DIAGNOSTICS`).

    `path` is the prefix for diagnostics, e.g. `levels[3]` inside a pack.
    """
    return collect(lambda diags: _check(data, path, diags), path)


def _check(data: Any, path: str, diags: list[Diagnostic]) -> Level | None:
    def bad(where: str, message: str) -> None:
        diags.append(Diagnostic(where, message))

    if not isinstance(data, dict):
        bad(path, "a level must be a JSON object")
        return None
    for key in sorted(set(data) - _LEVEL_FIELDS, key=str):
        bad(join_path(path, str(key)), "unknown field")
    level_id = data.get("id", "")
    if not ((isinstance(level_id, str) and utf16_len(level_id) <= MAX_ID_CHARS)
            or _int_in(level_id, -(2**53), 2**53)):
        bad(join_path(path, "id"), f"must be a string of at most {MAX_ID_CHARS} characters or "
            "an integer")
    for key in ("name", "author", "hint"):
        value = data.get(key, "")
        if not (isinstance(value, str) and utf16_len(value) <= MAX_LINE_CHARS
                and "\n" not in value):
            bad(join_path(path, key), f"must be one line of at most {MAX_LINE_CHARS} characters")
    width, height = data.get("width"), data.get("height")
    for key, value in (("width", width), ("height", height)):
        if not _int_in(value, 1, MAX_SIDE):
            bad(join_path(path, key), f"must be an integer from 1 to {MAX_SIDE}")
    sized = _int_in(width, 1, MAX_SIDE) and _int_in(height, 1, MAX_SIDE)
    profile = data.get("profile", "classic")
    if not (isinstance(profile, str) and profile in PROFILES):
        bad(join_path(path, "profile"), f"unknown profile {profile!r} (supported: "
            f"{', '.join(sorted(PROFILES))})")
    solution = data.get("solution")
    if solution is not None and not (isinstance(solution, str) and _SOLUTION.match(solution)):
        bad(join_path(path, "solution"), "must be a string over u d l r s")

    ids: list[str] = []
    seen: dict[str, str] = {}
    board: list[Obj] = []
    for section, name_key, fields, vocabulary in (
        ("objects", "noun", _OBJECT_FIELDS, NOUNS), ("text", "word", _TEXT_FIELDS, WORDS),
    ):
        items = data.get(section, [])
        where = join_path(path, section)
        if not isinstance(items, list):
            bad(where, "must be a list")
            continue
        if len(items) > MAX_ITEMS:
            bad(where, f"holds {len(items)} entries; at most {MAX_ITEMS} are allowed")
            continue
        for i, item in enumerate(items):
            at = join_path(where, i)
            if not isinstance(item, dict):
                bad(at, "must be a JSON object")
                continue
            for key in sorted(set(item) - fields, key=str):
                bad(join_path(at, str(key)), "unknown field")
            ok = True
            oid = item.get("id")
            if not (isinstance(oid, str) and 0 < utf16_len(oid) <= MAX_ID_CHARS):
                bad(join_path(at, "id"), f"must be a non-empty string of at most {MAX_ID_CHARS} chars")
                ok = False
            elif oid in seen:
                bad(join_path(at, "id"), f'duplicate id "{oid}" (first used at {seen[oid]})')
                ok = False
            else:
                seen[oid] = at
            name = item.get(name_key)
            if not isinstance(name, str) or name not in vocabulary:
                bad(join_path(at, name_key), f'unknown {name_key} "{name}"')
                ok = False
            for axis, limit in (("x", width), ("y", height)):
                value = item.get(axis)
                if sized and not _int_in(value, 0, limit - 1):
                    bad(join_path(at, axis), f"must be an integer from 0 to {limit - 1}")
                    ok = False
            facing = item.get("facing", "right")
            if not (isinstance(facing, str) and facing in FACING_CODE):
                bad(join_path(at, "facing"), f'unknown facing "{facing}" (one of '
                    f'{", ".join(DIRECTIONS)})')
                ok = False
            if ok and sized:
                kind = NOUN_CODE[name] if section == "objects" else text_kind(name)
                board.append((len(ids), kind, item["x"], item["y"], FACING_CODE[facing]))
                ids.append(oid)

    mechanics = check_mechanics(data.get("mechanics", []), join_path(path, "mechanics"),
                                {i: seen[i] for i in seen}, diags)
    if diags:
        return None
    return Level(
        id=str(level_id), name=data.get("name", ""), author=data.get("author", ""),
        width=width, height=height, profile=profile, ids=tuple(ids), objects=tuple(board),
        mechanics=mechanics, solution=solution.lower() if solution is not None else None,
        hint=data.get("hint", ""))


def parse_level(data: Any, path: str = "") -> Level:
    """Validate level JSON data and return the `Level`; raises `LevelError` listing every problem."""
    level, diags = check_level(data, path)
    if level is None:
        raise LevelError(diags)
    return level
