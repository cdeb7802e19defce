"""The JSON pack format: a named, versioned set of levels with a profile and mechanic features.

A pack is a JSON object::

    {"name": "Gates", "version": "1.0.0", "profile": "classic",
     "mechanics": ["plate_gate"],               # mechanic types the levels use (features)
     "levels": [{...level JSON...}, ...]}       # see level.py; 1 to MAX_LEVELS levels

`profile` applies to every level that does not name its own. `mechanics` lists the host
mechanic types the pack needs; a type the host does not support fails with a feature
diagnostic (naming the supported features) before anything is installed, and a level may only
use types the pack declares. Every problem is reported with its path inside the pack,
e.g. `levels[3].objects[12].noun: unknown noun "frog"` (the level checks are `level.py`'s).
`Pack.to_json()` is canonical: it validates back to an equal pack (export/import round trip).
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from protocol.text import utf16_clip, utf16_len

from .diagnostics import Diagnostic, LevelError, collect, join_path
from .level import Level, check_level
from .mechanics.host import HOST_TYPES, supported_features
from .profiles import PROFILES

MAX_LEVELS = 256
MAX_NAME_CHARS = 100
MAX_FEATURES = 16  # mechanic types a pack lists (the host has fewer)
_FIELDS = frozenset({"name", "version", "profile", "mechanics", "levels"})
_VERSION = re.compile(r"^[0-9]{1,6}(\.[0-9]{1,6}){0,2}$")


@attrs.frozen
class Pack:
    """A validated pack: its levels are normalized `Level` values with their profile applied."""

    name: str
    version: str
    profile: str
    mechanics: tuple[str, ...]
    levels: tuple[Level, ...]

    def to_json(self) -> dict[str, Any]:
        """The pack as canonical JSON data (parses back to an equal `Pack`)."""
        return {"name": self.name, "version": self.version, "profile": self.profile,
                "mechanics": list(self.mechanics), "levels": [lv.to_json() for lv in self.levels]}

    def level(self, level_id: str) -> Level:
        """The level with this id; raises KeyError listing the ids."""
        for lv in self.levels:
            if lv.id == level_id:
                return lv
        raise KeyError(f"no level {level_id!r} in pack {self.name!r} "
                       f"(ids: {', '.join(lv.id for lv in self.levels)})")


def is_pack(data: Any) -> bool:
    """True when JSON data is shaped like a pack: an object with `levels` that is not a Keke
    level file (whose levels carry `ascii` maps)."""
    levels = data.get("levels") if isinstance(data, dict) else None
    return levels is not None and not (
        isinstance(levels, list) and any(isinstance(e, dict) and "ascii" in e for e in levels))


def check_pack(data: Any) -> tuple[Pack | None, list[Diagnostic]]:
    """Validate pack JSON data; returns the `Pack` (None if invalid) and its diagnostics
    (every one, up to `diagnostics.MAX_DIAGNOSTICS`)."""
    if not isinstance(data, dict):
        return None, [Diagnostic("", "a pack must be a JSON object")]
    diags = check_header(data)
    if diags:
        # A pack with an unsupported feature or a bad header is refused before its levels are
        # compiled: nothing of it gets near installation or play.
        return None, diags
    return collect(lambda found: _compile(data, found))


def _compile(data: dict[str, Any], diags: list[Diagnostic]) -> Pack | None:
    profile = data.get("profile", "classic")
    features = tuple(sorted(set(data.get("mechanics", []))))
    compiled: list[Level] = []
    first: dict[str, str] = {}
    for i, entry in enumerate(data["levels"]):
        at = join_path("levels", i)
        if isinstance(entry, dict) and "profile" not in entry:
            entry = {**entry, "profile": profile}
        level, level_diags = check_level(entry, at)
        diags.extend(level_diags)
        if level is None:
            continue
        if level.id in first:
            diags.append(Diagnostic(join_path(at, "id"), f"duplicate level id {level.id!r} "
                                    f"(first at {first[level.id]})"))
        first.setdefault(level.id, at)
        # Authored order, for the path (the level normalizes its mechanics by id).
        for j, mech in enumerate(entry.get("mechanics", [])):
            if mech["type"] not in features:
                diags.append(Diagnostic(
                    join_path(join_path(join_path(at, "mechanics"), j), "type"),
                    f"mechanic type {mech['type']!r} is not declared in the pack's mechanics"))
        compiled.append(level)
    if diags:
        return None
    return Pack(name=data["name"], version=data["version"], profile=profile, mechanics=features,
                levels=tuple(compiled))


def check_header(data: dict[str, Any]) -> list[Diagnostic]:
    """The diagnostics of a pack object's fields but its levels' contents: unknown fields,
    name, version, profile, mechanics (features), and the number of levels."""
    return collect(lambda diags: _check_header(data, diags))[1]


def _check_header(data: dict[str, Any], diags: list[Diagnostic]) -> None:
    for key in sorted(set(data) - _FIELDS, key=str):
        diags.append(Diagnostic(str(key), "unknown field (a pack has name, version, profile, "
                                "mechanics, levels)"))
    name = data.get("name")
    if not (isinstance(name, str) and 0 < utf16_len(name) <= MAX_NAME_CHARS):
        diags.append(Diagnostic("name", f"must be a non-empty string of at most "
                                f"{MAX_NAME_CHARS} characters"))
    version = data.get("version")
    if not (isinstance(version, str) and _VERSION.match(version)):
        diags.append(Diagnostic("version", 'must be a version string such as "1", "1.2" or '
                                '"1.2.3"'))
    profile = data.get("profile", "classic")
    if not (isinstance(profile, str) and profile in PROFILES):
        diags.append(Diagnostic("profile", f"unknown profile {profile!r} (supported: "
                                f"{', '.join(sorted(PROFILES))})"))
    _check_features(data.get("mechanics", []), diags)
    levels = data.get("levels")
    if not isinstance(levels, list) or not 0 < len(levels) <= MAX_LEVELS:
        diags.append(Diagnostic("levels", f"must be a list of 1 to {MAX_LEVELS} levels"))


def _check_features(value: Any, diags: list[Diagnostic]) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        diags.append(Diagnostic("mechanics", "must be a list of mechanic type names"))
        return
    if len(value) > MAX_FEATURES:
        diags.append(Diagnostic("mechanics", f"lists {len(value)} types; at most "
                                f"{MAX_FEATURES} are allowed"))
        return
    seen: set[str] = set()
    for i, mtype in enumerate(value):
        if mtype not in HOST_TYPES:
            diags.append(Diagnostic(join_path("mechanics", i),
                                    f"unsupported mechanic feature {mtype!r} (host supports: "
                                    f"{supported_features()})"))
        elif mtype in seen:
            diags.append(Diagnostic(join_path("mechanics", i), f"duplicate feature {mtype!r}"))
        seen.add(mtype)


def parse_pack(data: Any) -> Pack:
    """Validate pack JSON data and return the `Pack`; raises `LevelError` listing every problem."""
    pack, diags = check_pack(data)
    if pack is None:
        raise LevelError(diags)
    return pack


def pack_of(level: Level) -> Pack:
    """A one-level pack around a level (how a single level is shared), named after it: a
    level's name may be longer than a pack's, so it is cut to `MAX_NAME_CHARS`."""
    features = tuple(sorted({m.type for m in level.mechanics}))
    name = utf16_clip(level.name or level.id or "level", MAX_NAME_CHARS)
    return Pack(name=name, version="1", profile=level.profile, mechanics=features,
                levels=(level,))
