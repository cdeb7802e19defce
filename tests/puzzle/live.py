"""A puzzle room played over a real connection, a turn at a time (tests/puzzle, tests/cluster)."""

from __future__ import annotations

from typing import Any

from protocol.client import Client

DIRS = {"u": "up", "d": "down", "l": "left", "r": "right", "s": "wait"}


async def play(c: Client, to: str, letters: str, rev: int) -> dict[str, Any]:
    """Play `letters` one turn at a time at the revision each reply names."""
    reply: dict[str, Any] = {}
    for letter in letters:
        reply = await c.request("puzzle.move", to, {"dir": DIRS[letter],
                                                    "expected_revision": rev})
        rev = reply["room"]["revision"]
    return reply
