"""Texts at the edge of a bound of N characters counted in UTF-16 code units
(protocol/text.py): what each world's bounds test sends."""

from __future__ import annotations

EMOJI = "\U0001f600"  # outside the Basic Multilingual Plane: two UTF-16 code units


def edges(n: int) -> list[tuple[str, bool]]:
    """(text, accepted) for a bound of at most `n` characters: n - 1 letters and an emoji
    (n code points, n + 1 units) refused; n/2 emoji (n units) and n letters accepted."""
    return [("a" * (n - 1) + EMOJI, False), (EMOJI * (n // 2), True), ("a" * n, True)]


def floor_edges(n: int) -> list[tuple[str, bool]]:
    """(text, accepted) for a bound of at least `n` characters: n/2 emoji (n units, n/2
    code points) accepted, n - 1 letters refused."""
    return [(EMOJI * (n // 2), True), ("a" * (n - 1), False)]
