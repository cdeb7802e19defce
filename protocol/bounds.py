"""Bounds on what a client may send: every number's range, every text's and list's length.

An op's args class declares them on its fields with `bounded(...)`; the strict converter
checks them after structuring (`check`, a bad_request naming the JSON path of the first
field out of bounds) and the JSON Schema carries them (`minimum`, `maximum`,
`maxLength`, `maxItems`, and `minLength` for a text that may not be empty). A test requires a bound on every number, text, list and map
of every op's args, so that no request can ask the server to hold or compute without
limit.

A text's length counts UTF-16 code units (`protocol.text.utf16_len`), as the seeds' zod
and the browser's `maxlength` do; JSON Schema's `maxLength` counts code points, so for
characters outside the Basic Multilingual Plane (emoji) the server is the stricter: 41
emoji pass a schema's `maxLength: 80` and are refused here.
"""

from __future__ import annotations

import functools
import typing
from typing import Any

import attrs

from protocol.text import utf16_len

KEY = "petridish.bounds"
# A paged list's `offset` and `limit` (the console's lists, the lobby's): no answer grows
# with the server.
MAX_PAGE = 200  # rows of one page
MAX_OFFSET = 1_000_000


@attrs.frozen
class Bounds:
    """One field's bounds: a number in lo..hi; a text, list or map of at most `length`
    characters (UTF-16 code units) or items; `each` bounds every item of a list (or value
    of a map), `at` the items of a fixed-length tuple by position."""

    lo: float | None = None
    hi: float | None = None
    length: int | None = None
    each: Bounds | None = None
    code: str = "bad_request"  # the refusal's code when the bound is broken
    # The text names a user (a leaderboard's): only the owner may name another than the
    # caller; anyone else sends "" (themselves) or their own name (see `borrowed`).
    user: bool = False
    nonempty: bool = False  # a text of at least one character
    at: tuple[Bounds, ...] = ()  # a tuple's items by position (in place of `each`)


def bounded(default: Any = attrs.NOTHING, *, lo: float | None = None,
            hi: float | None = None, length: int | None = None,
            each: Bounds | None = None, factory: Any = None,
            code: str = "bad_request", user: bool = False, nonempty: bool = False,
            at: tuple[Bounds, ...] = ()) -> Any:
    """An attrs field with bounds (and a default or a factory, as `attrs.field` takes);
    `code` is the refusal's code when one is broken (bad_request unless the op's contract
    names another, such as the field's `too_large` for an oversized batch); `user` marks a
    text that names a user, which only the owner may set to someone else (`borrowed`);
    `nonempty` refuses an empty text; `at` bounds a tuple's items one by one."""
    meta = {KEY: Bounds(lo, hi, length, each, str(code), user, nonempty, tuple(at))}
    if factory is not None:
        return attrs.field(factory=factory, metadata=meta)
    return attrs.field(default=default, metadata=meta)


def items(*, lo: float | None = None, hi: float | None = None,
          length: int | None = None, each: Bounds | None = None) -> Bounds:
    """Bounds for the items of a list (or the values of a map)."""
    return Bounds(lo, hi, length, each)


def bounds_of(field: attrs.Attribute) -> Bounds | None:
    """The bounds declared on an attrs field, if any."""
    return field.metadata.get(KEY)


class OutOfBounds(ValueError):
    """A structured value broke a bound: `path` and a phrase for the reply."""

    def __init__(self, path: str, phrase: str, code: str = "bad_request") -> None:
        super().__init__(f"{path}: {phrase}")
        self.path = path
        self.phrase = phrase
        self.code = code


def check(obj: Any, path: str = "args") -> None:
    """Check every bound of the attrs value `obj` and of the attrs values inside it
    (OutOfBounds at the first one broken)."""
    for name, b, nested in _plan(type(obj)):
        _check(getattr(obj, name), b, nested, f"{path}.{name}")


def _check(value: Any, b: Bounds | None, nested: bool, path: str) -> None:
    if value is None or isinstance(value, bool):
        return
    if b is not None:
        if isinstance(value, int | float):
            if (b.lo is not None and value < b.lo) or (b.hi is not None and value > b.hi):
                raise OutOfBounds(path, _range(b), b.code)
            return
        if b.length is not None and isinstance(value, str) and utf16_len(value) > b.length:
            raise OutOfBounds(path, f"at most {b.length} characters", b.code)
        if b.length is not None and isinstance(value, list | tuple | set | frozenset | dict
                                               ) and len(value) > b.length:
            raise OutOfBounds(path, f"at most {b.length} items", b.code)
        if b.nonempty and value == "":
            raise OutOfBounds(path, "at least 1 character", b.code)
    if attrs.has(type(value)):
        check(value, path)
        return
    inner = b.each if b is not None else None
    at = b.at if b is not None else ()
    if inner is None and not at and not nested:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            _check(item, inner, nested, f"{path}.{key}")
    elif isinstance(value, list | tuple | set | frozenset):
        for i, item in enumerate(value):
            _check(item, at[i] if i < len(at) else inner, nested, f"{path}[{i}]")


def _range(b: Bounds) -> str:
    if b.lo is not None and b.hi is not None:
        return f"must be between {b.lo} and {b.hi}"
    if b.hi is not None:
        return f"must be at most {b.hi}"
    return f"must be at least {b.lo}"


@functools.cache
def _plan(cls: type) -> tuple[tuple[str, Bounds | None, bool], ...]:
    """The fields of `cls` to check: (name, bounds, whether attrs values may sit inside)."""
    hints = typing.get_type_hints(cls)
    out = []
    for field in attrs.fields(cls):
        b = bounds_of(field)
        nested = _holds_attrs(hints[field.name])
        if b is not None or nested:
            out.append((field.name, b, nested))
    return tuple(out)


def _holds_attrs(tp: Any) -> bool:
    return attrs.has(tp) or any(_holds_attrs(a) for a in typing.get_args(tp))


@functools.cache
def _user_fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in attrs.fields(cls) if (b := bounds_of(f)) is not None and b.user)


def borrowed(args: Any, caller: str, role: str) -> str | None:
    """The path of a field of `args` that names a user other than `caller` when the caller
    is not the owner (an identity it would borrow), or None."""
    if role == "owner" or not attrs.has(type(args)):
        return None
    for name in _user_fields(type(args)):
        value = getattr(args, name)
        if value and value != caller:
            return f"args.{name}"
    return None
