"""Compact JSON text for frames and stored events, made without per-call set-up.

`JSONEncoder.encode` builds a new C encoder (and a closure) on every call, and
`JSONDecoder.decode` matches whitespace with regular expressions around the C scanner;
for the small texts of a frame that set-up costs as much as the work. These helpers
build the C encoder once and call the C scanner directly, falling back to the full
stdlib paths where those matter (no C accelerator; whitespace around a text; errors).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring, encode_basestring_ascii
from typing import Any


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


def strict_decoder(parse_constant: Callable[[str], Any]) -> Callable[[str], Any]:
    """A function parsing one JSON text (as `json.loads` would, with `parse_constant`);
    raises ValueError (JSONDecodeError) or RecursionError on bad input."""
    full = json.JSONDecoder(parse_constant=parse_constant)
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
