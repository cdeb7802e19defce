"""A text's length as the seeds and the browser count it: in UTF-16 code units.

The seeds are TypeScript: zod's `z.string().max(80)` and `.min(1)`, a JavaScript
`string.length` and an input's `maxlength` count UTF-16 code units, where Python's `len`
counts code points. A character outside the Basic Multilingual Plane (an emoji, U+10000
and up) is two units, so 40 emoji fill an 80-character field and 41 overflow it. Every
bound on a client's text counts with `utf16_len`, and a client's text the server keeps
cut to N characters is cut by `utf16_clip`, so that the server refuses and keeps what a
seed's code would. Messages still say "characters", as zod and the docs do. A refusal
that quotes a client's text shortens the quote with a plain slice: it bounds nothing, and
a Python slice never splits a pair.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

# True while a world folds its stored history (`stored_texts`).
_STORED: ContextVar[bool] = ContextVar("stored_texts", default=False)


def utf16_len(text: str) -> int:
    """The length of `text` in UTF-16 code units (JavaScript's `length`): `len(text)` plus
    one for each code point above U+FFFF. An ASCII text costs one flag test more than
    `len`; a lone surrogate counts one unit, as in JavaScript. Under `stored_texts`, code
    points."""
    if text.isascii() or _STORED.get():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) >> 1


def utf16_clip(text: str, limit: int) -> str:
    """The longest start of `text` of at most `limit` UTF-16 code units. A pair that the
    cut would split is left out whole (the result is then `limit - 1` units): unlike
    JavaScript's `slice(0, limit)`, it never keeps half a character."""
    if utf16_len(text) <= limit:
        return text
    head = text.encode("utf-16-le", "surrogatepass")[:2 * limit].decode(
        "utf-16-le", "surrogatepass")
    # A split pair decodes to its lone first half, which `text` does not start with.
    return head if text.startswith(head) else head[:-1]


def folding_stored() -> bool:
    """Whether a world folds its stored history now (within `stored_texts`): such a fold
    applies no bound of today that the event's day did not (a puzzle turn's work cap)."""
    return _STORED.get()


@contextlib.contextmanager
def stored_texts() -> Iterator[None]:
    """Within it, texts are counted as they were before they counted UTF-16 units (code
    points, never more): the runtime folds a world's stored history so, since a fold that
    validates again what it stores (a puzzle room's pack, a run's graph) must not refuse
    what a bound of its day accepted. A live fold needs no such care: its move was checked
    in units before it was stored."""
    token = _STORED.set(True)
    try:
        yield
    finally:
        _STORED.reset(token)
