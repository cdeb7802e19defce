"""The bundled packs (`packs/<name>.json`, validated like any pack) and the room's size limits.

`bundled(name)` is the pack of `packs/<name>.json` (`starter`: the team's starter pack,
docs/puzzle.md "Starter pack"). `room_limits(pack)` lists the diagnostics of levels too big
for a room: the engine takes boards up to 64 x 64 with 4096 objects and 4096 words
(`level.py`), a room at most `ROOM_MAX_THINGS` things per level, so that every turn stays cheap
for the actor that serializes it. `cannot_start` checks one level's start against the engine's
caps; it reads the level's rules, so a room checks a level when it starts it, not every level
of a pack at once.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from .board import Context
from .diagnostics import Diagnostic, LevelError, join_path
from .level import Level, check_level
from .pack import Pack, parse_pack
from .turn import settle_initial

PACKS = Path(__file__).parent / "packs"
ROOM_MAX_THINGS = 1024  # objects and text of one level in a room
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")


def names() -> tuple[str, ...]:
    """The bundled packs' names, sorted."""
    return tuple(sorted(p.stem for p in PACKS.glob("*.json")))


@functools.cache
def bundled(name: str) -> Pack:
    """The bundled pack `name`; KeyError naming the bundled ones when there is none."""
    if not _NAME.match(name) or name not in names():
        raise KeyError(f"no bundled pack {name!r} (bundled: {', '.join(names())})")
    return parse_pack(json.loads((PACKS / f"{name}.json").read_text(encoding="utf-8")))


def room_limits(pack: Pack) -> list[Diagnostic]:
    """Diagnostics (paths into the pack) for each level with more things than a room plays."""
    found = (too_many(level, join_path(join_path("levels", i), "objects"))
             for i, level in enumerate(pack.levels))
    return [d for d in found if d is not None]


def too_many(level: Level, path: str = "objects") -> Diagnostic | None:
    """The diagnostic of a level with more things than a room plays, if it has."""
    if len(level.objects) <= ROOM_MAX_THINGS:
        return None
    return Diagnostic(path, f"holds {len(level.objects)} things (objects and text); a room "
                      f"plays at most {ROOM_MAX_THINGS}")


def cannot_start(level: Level, profile: str = "", path: str = "") -> Diagnostic | None:
    """The diagnostic of a level whose start is over the engine's caps under `profile` (""
    for its own), such as one reading more rules than a turn may, if it is."""
    try:
        settle_initial(Context(level, profile or None), level.objects)
    except LevelError as err:
        found = err.diagnostics[0]
        return Diagnostic(join_path(path, found.path), found.message)
    return None


def check_room_level(data: Any) -> tuple[Level | None, list[Diagnostic]]:
    """Validate level JSON data for a room: the engine's checks (`level.check_level`, paths
    inside the level such as `objects[3].noun`), the room's size limit and the start."""
    level, diagnostics = check_level(data)
    problem = None if level is None else too_many(level) or cannot_start(level)
    return (None, [problem]) if problem else (level, diagnostics)
