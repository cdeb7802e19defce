"""`validate(track, code)`: the one static gate every breeding surface applies.

Order: the two length bounds (in UTF-16 code units, the seed's JavaScript `length`), the
seed's table for the track, the hardening rules, and (shaders only) a compile of prelude +
body with `glslangValidator -l`. Code holding a NUL or a lone surrogate (which no UTF-8
text carries) is refused after the rules, before the compile. Code the rules overflow on (the stack, memory, a number)
is refused as `too complex to validate`, not raised: a bug in a bound, logged.
"""

from __future__ import annotations

import logging

from actors.lab.contract import MAX_CHARS, MIN_CHARS, TRACKS
from actors.lab.validate_panel import panel_reason
from actors.lab.validate_shader import compile_reason, shader_reason
from protocol.jsontext import bad_text_path
from protocol.text import utf16_len

log = logging.getLogger(__name__)

TOO_COMPLEX = "too complex to validate"
NOT_TEXT = "not text (a NUL or a lone surrogate)"


def static_reason(track: str, code: str) -> str | None:
    """Every rule except the compile step; a reason string, or None when the code passes."""
    if track not in TRACKS:
        raise ValueError(f"unknown track {track!r}; expected one of {TRACKS}")
    if utf16_len(code) < MIN_CHARS:
        return "too short"
    if utf16_len(code) > MAX_CHARS:
        return "too long"
    try:
        reason = shader_reason(code) if track == "shader" else panel_reason(code)
    except (RecursionError, OverflowError, MemoryError):  # the rules' bounds let it through
        log.exception("the %s rules overflowed; refused as %r", track, TOO_COMPLEX)
        return TOO_COMPLEX
    if reason is None and bad_text_path(code) is not None:
        return NOT_TEXT  # (a model's reply may escape one; no compiler or page reads it)
    return reason


def validate(track: str, code: str) -> str | None:
    """The rejection reason for `code` on `track`, or None when it may be stored."""
    reason = static_reason(track, code)
    if reason is None and track == "shader":
        reason = compile_reason(code)
    return reason
