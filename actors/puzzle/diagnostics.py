"""Validation diagnostics shared by levels, mechanics and packs, and the refusal that
carries them to a client."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from actors.world import Refusal
from protocol.errors import ErrorCode


@attrs.frozen
class Diagnostic:
    """One validation problem: where it is (a JSON path) and what is wrong."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class LevelError(ValueError):
    """A level (or something inside it) failed validation; `diagnostics` lists every problem."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = tuple(diagnostics)
        super().__init__("; ".join(str(d) for d in diagnostics))


def join_path(prefix: str, key: str | int) -> str:
    """`levels[3]` + `objects` -> `levels[3].objects`; `objects` + 12 -> `objects[12]`."""
    if isinstance(key, int):
        return f"{prefix}[{key}]"
    return f"{prefix}.{key}" if prefix else key


def bad_request(message: str, path: str, diagnostics: Iterable[Diagnostic] = (),
                **detail: Any) -> Refusal:
    """A `bad_request` naming the argument (`detail.path`) and, for a level or pack, the
    engine's diagnostics (`detail.diagnostics`: `{path, message}` inside it)."""
    found = [{"path": d.path, "message": d.message} for d in diagnostics]
    return Refusal(ErrorCode.BAD_REQUEST, message,
                   {"path": path, **({"diagnostics": found} if found else {}), **detail})
