"""Normalized declarative mechanic definitions and their validation.

A level's optional `mechanics` array holds data only::

    {"id": "gate-a", "type": "plate_gate", "version": 1,
     "config": {"plates": ["p1"], "gates": ["g1"]},
     "state_schema": {"open": "bool"}}

`id` is stable and lowercase, `type` must be a host-supported type (`host.HOST_TYPES`), `version`
must be one the host implements, `config` is checked by the host type (object references must name
authored ids), and `state_schema` must equal the host's declared schema. Unknown fields, unknown
types and executable values (functions, callbacks, URLs, script text) are rejected with the path
that declared them. Definitions are sorted by id: that is the order hooks run in.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

from ..diagnostics import Diagnostic, join_path

_ID = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_FIELDS = frozenset({"id", "type", "version", "config", "state_schema"})
# Keys and string shapes that mean "run this": never data in a mechanic declaration. A key is
# matched whole once stripped (`fullmatch`, as `_ID`: a `$` lets a trailing newline through).
_EXEC_KEYS = re.compile(
    r"(callback|function|handler|hook|script|code|url|href|src|eval|exec|on[A-Z_].*)",
    re.IGNORECASE | re.DOTALL)
# Searched anywhere in a string: a URL scheme at a word start, not only at the string's start.
_EXEC_TEXT = re.compile(r"\b[a-z][a-z0-9+.-]*://|\b(javascript|data|vbscript|file):|=>|"
                        r"\bfunction\b|\blambda\b|\bimport\b|\brequire\s*\(", re.IGNORECASE)
MAX_MECHANICS = 64


@attrs.frozen
class MechanicDef:
    """One normalized mechanic declaration; `config` is canonical JSON text (immutable)."""

    id: str
    type: str
    version: int
    config: str
    state_schema: tuple[tuple[str, str], ...]

    def config_data(self) -> Any:
        """A fresh copy of the static configuration."""
        return json.loads(self.config)

    def to_json(self) -> dict[str, Any]:
        """The declaration as JSON data (validates back to an equal definition)."""
        return {"id": self.id, "type": self.type, "version": self.version,
                "config": self.config_data(), "state_schema": dict(self.state_schema)}


def find_executable(value: Any, path: str) -> Diagnostic | None:
    """The first function, callback, URL or script-like value inside `value`, as a diagnostic."""
    if callable(value):
        return Diagnostic(path, "executable value (a function) is not allowed in mechanic data")
    if isinstance(value, str):
        if _EXEC_TEXT.search(value):
            return Diagnostic(path, f"executable value {value[:40]!r} (code or URL) is not allowed"
                              " in mechanic data")
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            where = join_path(path, str(key))
            if isinstance(key, str) and _EXEC_KEYS.fullmatch(key.strip()):
                return Diagnostic(where, "executable field (callback/hook/URL) is not allowed in"
                                  " mechanic data")
            found = find_executable(item, where)
            if found:
                return found
        return None
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = find_executable(item, join_path(path, i))
            if found:
                return found
        return None
    if value is None or isinstance(value, (bool, int, float)):
        return None
    return Diagnostic(path, f"non-JSON value of type {type(value).__name__} is not allowed")


def check_mechanics(data: Any, path: str, id_paths: dict[str, str], diags: list[Diagnostic]
                    ) -> tuple[MechanicDef, ...]:
    """Validate a `mechanics` array, adding every problem to `diags`; `id_paths` maps authored
    object ids to where they are declared. Returns the normalized definitions sorted by id
    (empty when anything failed)."""
    from .host import HOST_TYPES, supported_features

    if not isinstance(data, list):
        diags.append(Diagnostic(path, "must be a list"))
        return ()
    if len(data) > MAX_MECHANICS:
        diags.append(Diagnostic(path, f"at most {MAX_MECHANICS} mechanics are allowed"))
        return ()
    first = len(diags)
    defs: list[MechanicDef] = []
    seen: dict[str, str] = {}
    for i, entry in enumerate(data):
        at = join_path(path, i)
        found = find_executable(entry, at)
        if found:
            diags.append(found)
            continue
        if not isinstance(entry, dict):
            diags.append(Diagnostic(at, "a mechanic must be a JSON object"))
            continue
        before = len(diags)
        for key in sorted(set(entry) - _FIELDS, key=str):
            diags.append(Diagnostic(join_path(at, str(key)), "unknown field (a mechanic has id, "
                                    "type, version, config, state_schema)"))
        mid = entry.get("id")
        if not (isinstance(mid, str) and _ID.fullmatch(mid)):
            diags.append(Diagnostic(join_path(at, "id"), "must be a lowercase id matching "
                                    "[a-z][a-z0-9_-]{0,31}"))
        elif mid in seen:
            diags.append(Diagnostic(join_path(at, "id"),
                                    f'duplicate mechanic id "{mid}" (first at {seen[mid]})'))
        else:
            seen[mid] = at
        mtype = entry.get("type")
        host = HOST_TYPES.get(mtype) if isinstance(mtype, str) else None
        if host is None:
            diags.append(Diagnostic(join_path(at, "type"), f"unsupported mechanic type {mtype!r}"
                                    f" (host supports: {supported_features()})"))
            continue
        version = entry.get("version")
        if version != host.version or isinstance(version, bool):
            diags.append(Diagnostic(join_path(at, "version"), f"unsupported version {version!r} "
                                    f"for {mtype} (host supports version {host.version})"))
        schema = entry.get("state_schema")
        if schema != dict(host.schema):
            diags.append(Diagnostic(join_path(at, "state_schema"),
                                    f"must declare the {mtype} state schema "
                                    f"{json.dumps(dict(host.schema))}"))
        config = entry.get("config")
        host.check_config(config, join_path(at, "config"), id_paths, diags)
        if len(diags) == before:
            defs.append(MechanicDef(
                id=mid, type=mtype, version=version,
                config=json.dumps(config, sort_keys=True, separators=(",", ":")),
                state_schema=host.schema))
    if len(diags) > first:
        return ()
    return tuple(sorted(defs, key=lambda d: d.id))
