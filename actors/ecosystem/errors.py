"""The one error type of the ecosystem domain, and the strict-shape checks it rides on.

Every refusal is an `EcosystemError` with a closed `code`, a plain `message` (tests pin
it exactly) and the JSON `path` of the first offending field, so callers can report who
caused it without parsing prose.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

from protocol.jsontext import NOT_PLAIN, plain_text
from protocol.text import utf16_len

# Closed set of codes; each names the kind of input that was refused.
ERROR_CODES = (
    "invalid_answers",    # setup answers fail the strict answers schema
    "invalid_config",     # a LifeConfig fails its schema
    "invalid_graph",      # a rule graph fails shape or an invariant
    "invalid_patch",      # a RulePatch is malformed or targets nothing
    "invalid_schedule",   # a scheduled change or decision is malformed
    "invalid_record",     # a run record cannot be replayed
    "invalid_run",        # run parameters (seed, generations, grid size) out of range
)


# What JavaScript's String.prototype.trim removes, the seed's "trimmed": its WhiteSpace
# (tab, VT, FF, space, NBSP, U+FEFF, the other Zs) and LineTerminator. Python's
# str.strip differs: it also strips U+001C..U+001F and U+0085, and keeps U+FEFF.
JS_WHITESPACE = ("\t\n\v\f\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
                 "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")


def js_trim(text: str) -> str:
    """`text` trimmed as JavaScript's `trim()` does."""
    return text.strip(JS_WHITESPACE)


class EcosystemError(ValueError):
    """Bad ecosystem input; `str(err)` is the exact contract message."""

    def __init__(self, code: str, message: str, path: str = "") -> None:
        assert code in ERROR_CODES, code
        super().__init__(message)
        self.code = code
        self.message = message
        self.path = path

    def as_dict(self) -> dict[str, str]:
        """Structured form for CLI output and the wire."""
        return {"code": self.code, "message": self.message, "path": self.path}


class Shape:
    """Strict-shape checks that raise one error builder's error with the failing path.

    `fail(path, why)` builds the exception, so rule graphs can keep their single exact
    message while configs and answers say which field and why.
    """

    def __init__(self, fail: Any, *, echo_keys: bool = True, plain: bool = False) -> None:
        self.fail = fail
        # Model output must not leak into diagnostics: then unknown keys go unnamed.
        self.echo_keys = echo_keys
        # Model output must be plain text (`plain_text`): then `text` refuses any other.
        self.plain = plain

    def obj(self, value: Any, path: str, required: Collection[str],
            optional: Collection[str] = ()) -> Mapping[str, Any]:
        """A mapping with exactly the `required` keys plus any of `optional`."""
        if not isinstance(value, Mapping):
            raise self.fail(path, "must be an object")
        for key in value:
            if key not in required and key not in optional:
                if not self.echo_keys:
                    raise self.fail(path or "object", "has a key that is not accepted")
                raise self.fail(f"{path}.{key}" if path else str(key), "is not an accepted key")
        for key in required:
            if key not in value:
                raise self.fail(f"{path}.{key}" if path else key, "is required")
        return value

    def enum(self, value: Any, path: str, vocabulary: Collection[str]) -> str:
        """One word of a closed vocabulary."""
        if not isinstance(value, str) or value not in vocabulary:
            raise self.fail(path, f"must be one of {', '.join(vocabulary)}")
        return value

    def integer(self, value: Any, path: str, low: int, high: int | None = None) -> int:
        """An integer within [low, high], as an int: an int (not a bool) or, as JSON numbers
        are (JavaScript's Number.isInteger), a float with no fraction (1.0 is 1)."""
        if isinstance(value, float) and value.is_integer():  # (False for inf and NaN)
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, "must be an integer")
        if value < low or (high is not None and value > high):
            bound = f"{low}..{high}" if high is not None else f">= {low}"
            raise self.fail(path, f"must be {bound}")
        return value

    def number(self, value: Any, path: str, low: float, high: float) -> float:
        """A finite real (not a bool) within [low, high]."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(path, "must be a number")
        # Ints compare exactly (one too large for a float must not raise OverflowError).
        if (isinstance(value, float) and not math.isfinite(value)) or not low <= value <= high:
            raise self.fail(path, f"must be finite and within {low}..{high}")
        return float(value)

    def text(self, value: Any, path: str, max_len: int, *, trim: bool) -> str:
        """A nonempty string of at most `max_len` characters (UTF-16 code units, as the
        seed's zod counts them; after trimming if `trim`); plain text if `plain`."""
        if not isinstance(value, str):
            raise self.fail(path, "must be a string")
        self.line(value, path)
        out = js_trim(value) if trim else value
        if not out:
            raise self.fail(path, "must be nonempty after trimming" if trim
                            else "must be a nonempty string")
        if not trim and out != js_trim(out):
            raise self.fail(path, "must not start or end with whitespace")
        if utf16_len(out) > max_len:
            raise self.fail(path, f"must be at most {max_len} characters")
        return out

    def line(self, value: Any, path: str) -> None:
        """With `plain`: refuses a string that is not one line of plain text."""
        if self.plain and isinstance(value, str) and not plain_text(value):
            raise self.fail(path, f"is {NOT_PLAIN}")

    def array(self, value: Any, path: str, low: int, high: int) -> list[Any]:
        """A list with between `low` and `high` items."""
        if not isinstance(value, list):
            raise self.fail(path, "must be an array")
        if not low <= len(value) <= high:
            raise self.fail(path, f"must hold {low}..{high} items")
        return value
