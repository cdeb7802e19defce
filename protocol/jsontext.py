"""Compact JSON text for frames and stored events, made without per-call set-up.

`JSONEncoder.encode` builds a new C encoder (and a closure) on every call, and
`JSONDecoder.decode` matches whitespace with regular expressions around the C scanner;
for the small texts of a frame that set-up costs as much as the work. These helpers
build the C encoder once and call the C scanner directly, falling back to the full
stdlib paths where those matter (no C accelerator; whitespace around a text; errors).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from json.encoder import c_make_encoder, encode_basestring, encode_basestring_ascii
from typing import Any

import attrs

MAX_EXACT_INT = 2**53 - 1  # the largest integer a JavaScript client (and double) holds exactly
_NOT_TEXT = "\x00\ud800-\udfff"  # NUL, or half of a surrogate pair
_BAD_CHAR = re.compile(f"[{_NOT_TEXT}]")
_LONE = re.compile("[\ud800-\udfff]")
# The escapes that can decode to such a character (a raw one is refused by the decoder, or
# cannot be UTF-8): a frame with none of them needs no look for bad text.
MAY_BE_BAD_TEXT = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
# What plain text holds none of, beyond those: the other C0 controls (but tab, LF, CR),
# DEL, the C1 controls, and the bidirectional embeddings, overrides and isolates (which
# reorder how what follows them is shown).
_CONTROLS = "\x01-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
_NOT_PROSE = re.compile(f"[{_NOT_TEXT}{_CONTROLS}]")
_NOT_LINE = re.compile(f"[{_NOT_TEXT}{_CONTROLS}\t\n\r]")
NOT_PLAIN = "not plain text (a NUL, a lone surrogate or a control character)"


class BadNumber(ValueError):
    """A JSON number a client may not send: beyond what every JSON reader holds exactly."""


def exact_int(text: str) -> int:
    """A JSON integer within +-(2^53 - 1) (a `parse_int` hook), else BadNumber."""
    if len(text) > 17 or abs(n := int(text)) > MAX_EXACT_INT:
        raise BadNumber(f"the integer {text[:24]} is beyond +-(2^53 - 1), the range every "
                        "JSON reader holds exactly")
    return n


def finite_float(text: str) -> float:
    """A JSON number that is a finite double (a `parse_float` hook), else BadNumber."""
    value = float(text)
    if not math.isfinite(value):
        raise BadNumber(f"the number {text[:24]} is out of range")
    return value


@attrs.frozen
class RefusedNumber:
    """A number that BadNumber refused, kept in its place (`keeping_refused`) so that the
    rest of the text can still be read."""

    message: str


def keeping_refused(hook: Callable[[str], Any]) -> Callable[[str], Any]:
    """`hook` (`exact_int`, `finite_float`), giving a RefusedNumber where it would raise."""
    def keep(text: str) -> Any:
        try:
            return hook(text)
        except BadNumber as exc:
            return RefusedNumber(str(exc))
    return keep


def first_refused_number(value: Any, root: str = "") -> tuple[str, RefusedNumber] | None:
    """The first RefusedNumber in `value`, with its JSON path (under `root`); None when
    there is none."""
    return first_path(value, lambda part: isinstance(part, RefusedNumber), root=root)


def first_path(value: Any, bad: Callable[[Any], bool],
               bad_key: Callable[[str], bool] = lambda key: False,
               root: str = "") -> tuple[str, Any] | None:
    """The first part of `value` that is `bad`, with its JSON path (under `root`), or the
    first key that is `bad_key`, with the path of the object holding it ("$" for the top);
    None when there is none. First in the decoded value's order: its text's, but that a
    key given twice in an object is decoded at the first one's place with the last one's
    value (a bad first value replaced is not found). Iterative, and the path is rendered
    only once found, so a value as deep or wide as a frame can hold costs no recursion and
    linear time."""
    trail: list[Any] = []  # the key or index of each step down to the innermost container
    stack: list[Iterator[tuple[Any, Any]]] = [iter(((None, value),))]
    while stack:
        for key, item in stack[-1]:
            if isinstance(key, str) and bad_key(key):
                return _rendered(root, trail), key
            if bad(item):
                return _rendered(root, [*trail, key]), item
            if isinstance(item, dict | list):
                trail.append(key)
                stack.append(iter(item.items()) if isinstance(item, dict) else enumerate(item))
                break
        else:
            stack.pop()
            if stack:  # out of a container, back to the one holding it
                trail.pop()
    return None


def _rendered(root: str, trail: list[Any]) -> str:
    parts, started = [root], bool(root)
    for key in trail[1:]:  # the first is the top's
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}" if started else key)
        started = started or bool(parts[-1])
    return "".join(parts) or "$"


def _has_bad_char(text: Any) -> bool:
    return isinstance(text, str) and _BAD_CHAR.search(text) is not None


def bad_text_path(value: Any, path: str = "") -> str | None:
    """The JSON path (under `path`) of the first string (or key) in `value` holding NUL or
    a lone surrogate, which no UTF-8 text can carry; None when there is none."""
    found = first_path(value, _has_bad_char, _has_bad_char, path)
    return None if found is None else found[0]


def plain_text(text: str, *, lines: bool = False) -> bool:
    """Whether `text` is plain text: valid Unicode (as `bad_text_path` holds it: no NUL, no
    lone surrogate) with no control character (`_CONTROLS`); with `lines`, tab, LF and CR
    too are allowed. The rule for text a model wrote that is kept or shown (a label, a
    name, a title, a paragraph): a JSON escape in its reply can make any of them."""
    return (_NOT_PROSE if lines else _NOT_LINE).search(text) is None


def escape_lone_surrogates(text: str) -> str:
    """`text` (JSON) with each lone surrogate written as its JSON escape (backslash, `u`,
    four hex digits): valid UTF-8 again, the same JSON value. Every backslash in encoder
    output starts a complete escape, so an inserted escape cannot merge with one."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def compact_encoder(*, ensure_ascii: bool) -> Callable[[Any], str]:
    """A function rendering a value as compact JSON (`,` and `:`); NaN and infinities
    raise ValueError."""
    full = json.JSONEncoder(separators=(",", ":"), ensure_ascii=ensure_ascii, allow_nan=False)
    if c_make_encoder is None:
        return full.encode
    # No circular-reference markers: a marker dict shared between calls would keep
    # stale entries after a failed call. Values here are trees; a cycle still ends in
    # RecursionError.
    encoder = c_make_encoder(None, full.default,
                             encode_basestring_ascii if ensure_ascii else encode_basestring,
                             None, ":", ",", False, False, False)

    def encode(value: Any) -> str:
        return "".join(encoder(value, 0))

    return encode


def escape_lone_surrogates_in(value: Any) -> Any:
    """`value` (a JSON value) with each string and key holding a lone surrogate passed
    through `escape_lone_surrogates`, for a writer that refuses them (pydantic's): such a
    string then shows each as its escape text (a backslash, `u`, four hex digits), where a
    JSON text would escape it. Not the same value, but text that every JSON reader takes
    (many refuse a lone surrogate's escape). A value holding none is returned as it is,
    found so at the C encoder's speed."""
    try:
        text = _encode_raw(value)
    except (TypeError, ValueError, RecursionError):  # not plain JSON: look at each part
        return _escaped_in(value)
    return value if text.isascii() or not _LONE.search(text) else _escaped_in(value)


_encode_raw = compact_encoder(ensure_ascii=False)


def _escaped_in(value: Any) -> Any:
    if isinstance(value, str):
        return escape_lone_surrogates(value) if _LONE.search(value) else value
    if isinstance(value, Mapping):
        return {_escaped_in(k): _escaped_in(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_escaped_in(item) for item in value]
    return value


def strict_decoder(parse_constant: Callable[[str], Any],
                   parse_int: Callable[[str], Any] | None = None,
                   parse_float: Callable[[str], Any] | None = None) -> Callable[[str], Any]:
    """A function parsing one JSON text (as `json.loads` would, with the hooks given);
    raises ValueError (JSONDecodeError, or a hook's) or RecursionError on bad input."""
    full = json.JSONDecoder(parse_constant=parse_constant, parse_int=parse_int,
                            parse_float=parse_float)
    scan = full.scan_once

    def decode(text: str) -> Any:
        try:
            value, end = scan(text, 0)
        except (StopIteration, ValueError):  # let the full path name the error
            return full.decode(text)
        if end != len(text):  # whitespace or more after the value
            return full.decode(text)
        return value

    return decode


def reject_constant(name: str) -> Any:
    """A `parse_constant` hook refusing NaN and the infinities, which JSON has not."""
    raise ValueError(f"{name} is not valid JSON")


# Only for a text a strict decoder refused for a number: each such number kept, to say where.
_decode_keeping = strict_decoder(reject_constant, keeping_refused(exact_int),
                                 keeping_refused(finite_float))


@attrs.frozen
class NumberRefusal:
    """Why a text was refused for a number (`place_refused_number`)."""

    message: str  # "PATH: why", or "bad number: why" when its place cannot be read
    path: str | None  # its JSON path, or None
    value: Any  # the text read with such numbers kept, or None when it is not JSON either

    @property
    def detail(self) -> dict[str, str]:
        """The refusal's detail: its path, when it has one."""
        return {} if self.path is None else {"path": self.path}


def place_refused_number(text: str, refused: BadNumber, root: str = "") -> NumberRefusal:
    """The refusal of `text`, which a strict decoder refused for `refused`, naming the JSON
    path (under `root`) of its first such number. Read again with each one kept (this path
    only: a good text is read once). Its place cannot be read when the rest of the text is
    not JSON either, or a later value of the same key replaced the number."""
    unplaced = f"bad number: {refused}"[:200]
    try:
        value = _decode_keeping(text)
    except (ValueError, RecursionError):
        return NumberRefusal(unplaced, None, None)
    found = first_refused_number(value, root)
    if found is None:
        return NumberRefusal(unplaced, None, value)
    path, number = found
    return NumberRefusal(f"{path}: {number.message}"[:200], path, value)
