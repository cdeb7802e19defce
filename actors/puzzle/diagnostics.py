"""Validation diagnostics shared by levels, mechanics and packs, and the refusal that
carries them to a client.

A validation stops at `MAX_DIAGNOSTICS` problems (`collect`), so a bad input of any size
yields a bounded list, its last entry saying that more were not listed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

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


MAX_DIAGNOSTICS = 50
STOPPED = f"more problems not listed (validation stops at {MAX_DIAGNOSTICS})"
T = TypeVar("T")


class TooMany(Exception):
    """A validation found more than `MAX_DIAGNOSTICS` problems."""


class Diagnostics(list[Diagnostic]):
    """The diagnostics of one validation: adding one past `MAX_DIAGNOSTICS` raises `TooMany`."""

    def append(self, item: Diagnostic) -> None:
        """Add `item`, or raise `TooMany` when the list is full."""
        if len(self) >= MAX_DIAGNOSTICS:
            raise TooMany
        super().append(item)

    def extend(self, items: Iterable[Diagnostic]) -> None:
        """Add each of `items` in turn (`append`)."""
        for item in items:
            self.append(item)


def collect(check: Callable[[Diagnostics], T], path: str = ""
            ) -> tuple[T | None, list[Diagnostic]]:
    """Run `check`, which adds what it finds to the `Diagnostics` it is given: its result and
    diagnostics, or, once it finds too many, None and the first `MAX_DIAGNOSTICS` of them
    followed by `STOPPED` (at `path`)."""
    diags = Diagnostics()
    try:
        return check(diags), diags
    except TooMany:
        return None, [*diags, Diagnostic(path, STOPPED)]


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
