"""Importer for the Keke competition corpus (`shared/baba-corpus`): ASCII maps and level files.

A map is rows of single characters fully bordered by `_` (legend in the corpus README; the
authority is `map_key` of Keke's simulation.js). The border becomes the edge of our grid, so the
level is two cells narrower and shorter and coordinates shift by one. Objects get ids `o1, o2, ...`
and text `t1, t2, ...` in row-major order; objects come before text on the board, which keeps
Keke's own list orders (they decide who moves first). Imported levels use the `keke` profile.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .diagnostics import Diagnostic, Diagnostics, LevelError, collect, join_path
from .level import Level, parse_level
from .mechanics.host import supported_features

OBJECT_CHARS: dict[str, str] = {
    "b": "baba", "k": "keke", "f": "flag", "r": "rock", "w": "wall", "s": "skull", "l": "lava",
    "g": "goop", "a": "grass", "o": "floor", "v": "love",
}
TEXT_CHARS: dict[str, str] = {
    **{c.upper(): noun for c, noun in OBJECT_CHARS.items()},
    "1": "is", "2": "you", "3": "win", "4": "defeat", "5": "push", "6": "stop", "7": "move",
    "8": "hot", "9": "melt", "0": "sink",
}
# A Keke file holds maps and nothing else; any other field (mechanics included) is refused rather
# than dropped on the way to a pack or a share link.
FILE_FIELDS = frozenset({"levels"})
LEVEL_FIELDS = frozenset({"ascii", "id", "name", "author", "solution"})


def ascii_to_json(ascii_map: str, *, level_id: str = "", name: str = "", author: str = "",
                  solution: str | None = None, path: str = "") -> dict[str, Any]:
    """Our level JSON for one Keke ASCII map; raises `LevelError` on a malformed map."""
    rows = ascii_map.split("\n")
    where = join_path(path, "ascii")
    width = len(rows[0]) if rows else 0
    if len(rows) < 3 or width < 3 or any(len(r) != width for r in rows):
        raise LevelError([Diagnostic(where, "the map must be a rectangle of at least 3x3")])
    objects: list[dict[str, Any]] = []
    text: list[dict[str, Any]] = []
    for y, row in enumerate(rows):
        for x, char in enumerate(row):
            edge = y in (0, len(rows) - 1) or x in (0, width - 1)
            if edge or char == "_":
                if not (edge and char == "_"):
                    raise LevelError([Diagnostic(where, f"row {y} column {x}: the border must be"
                                                 " `_` all round and only there")])
            elif char in OBJECT_CHARS:
                objects.append({"id": f"o{len(objects) + 1}", "noun": OBJECT_CHARS[char],
                                "x": x - 1, "y": y - 1})
            elif char in TEXT_CHARS:
                text.append({"id": f"t{len(text) + 1}", "word": TEXT_CHARS[char],
                             "x": x - 1, "y": y - 1})
            elif char not in ". ":
                raise LevelError([Diagnostic(where, f"row {y} column {x}: unknown map character "
                                             f"{char!r}")])
    data: dict[str, Any] = {"id": level_id, "name": name, "author": author, "width": width - 2,
                            "height": len(rows) - 2, "profile": "keke", "objects": objects,
                            "text": text}
    if solution is not None:
        data["solution"] = solution.lower()
    return data


def import_ascii(ascii_map: str, **meta: Any) -> Level:
    """A `Level` (keke profile) from one ASCII map; `meta` as for `ascii_to_json`."""
    return parse_level(ascii_to_json(ascii_map, **meta), meta.get("path", ""))


def is_keke_file(data: Any) -> bool:
    """True when JSON data looks like a Keke level file: `{"levels": [{"ascii": ...}, ...]}`."""
    return (isinstance(data, dict) and isinstance(data.get("levels"), list)
            and all(isinstance(e, dict) and "ascii" in e for e in data["levels"]))


def import_keke_levels(data: Any) -> list[Level]:
    """Every level of a Keke `{"levels": [...]}` file, in file order (ids become strings)."""
    if not is_keke_file(data):
        raise LevelError([Diagnostic("levels", "not a Keke level file: expected "
                                     '{"levels": [{"ascii": ...}, ...]}')])

    def check(found: Diagnostics) -> None:
        _unknown_fields(data, FILE_FIELDS, "", "a Keke level file", found)
        for i, entry in enumerate(data["levels"]):
            _unknown_fields(entry, LEVEL_FIELDS, join_path("levels", i), "a Keke level", found)

    _, diags = collect(check)
    if diags:
        raise LevelError(diags)
    levels = []
    for i, entry in enumerate(data["levels"]):
        at = join_path("levels", i)
        ascii_map, solution = entry.get("ascii"), entry.get("solution")
        if not isinstance(ascii_map, str):
            raise LevelError([Diagnostic(join_path(at, "ascii"), "must be a string")])
        levels.append(import_ascii(
            ascii_map, level_id=str(entry.get("id", i)), name=str(entry.get("name", "")),
            author=str(entry.get("author", "")),
            solution=solution if isinstance(solution, str) else None, path=at))
    return levels


def _unknown_fields(data: dict[str, Any], fields: frozenset[str], path: str, what: str,
                    found: Diagnostics) -> None:
    """Add to `found` a diagnostic per field of `data` outside `fields`; `mechanics` names
    the host features."""
    for key in sorted(set(data) - fields, key=str):
        found.append(Diagnostic(join_path(path, str(key)), f"unknown field ({what} has "
                                f"{', '.join(sorted(fields))}" + (
                                    "; mechanics are declared in our pack format, host "
                                    "supports: " + supported_features()
                                    if key == "mechanics" else "") + ")"))


def load_keke_file(path: str | Path) -> list[Level]:
    """Read and import a Keke level file from disk."""
    return import_keke_levels(json.loads(Path(path).read_text()))
