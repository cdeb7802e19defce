"""Validation diagnostics shared by levels, mechanics and (in 4B's pack.py) packs."""

from __future__ import annotations

import attrs


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
