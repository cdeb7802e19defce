"""GLSL ES 3.00 source text as the compiler reads it, before its directives run: line
ends (CR, LF and CRLF each end a line, as in ANGLE and glslang), line continuations,
comments, and preprocessing tokens (`tokenize`, and `join` to write them back)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import NamedTuple

# --- reading the text ------------------------------------------------------------------

_COMMENT = re.compile(r"/\*.*?(?:\*/|$)|//[^\n]*", re.DOTALL)


def join_lines(body: str) -> str:
    """CR, LF and CRLF as one line end, then line continuations (backslash-newline) joined."""
    return body.replace("\r\n", "\n").replace("\r", "\n").replace("\\\n", "")


def blank_comments(text: str) -> str:
    """Comments as spaces (their newlines kept, so lines keep their numbers)."""
    return _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def comment_ends_a_directive(text: str) -> bool:
    """True when a block comment opened on a directive line spans a newline (glslang
    reads the directive on past it; other compilers end it at the newline)."""
    for m in _COMMENT.finditer(text):
        if "\n" in m.group(0):
            line = text[text.rfind("\n", 0, m.start()) + 1 : m.start()]
            if line.lstrip().startswith("#"):
                return True
    return False


# --- tokens ----------------------------------------------------------------------------

_TOKEN = re.compile(
    r"(?P<ws>[ \t\f\v]+)"
    r"|(?P<ident>[A-Za-z_]\w*)"
    r"|(?P<number>\.?\d(?:[eE][-+]|[\w.])*)"
    r"|(?P<punct><<=|>>=|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||\^\^|[-+*/%&|^]=|\#\#"
    r"|[-+*/%<>=!~&|^?:;,.(){}\[\]\#])"
    r"|(?P<other>.)",
    re.DOTALL,
)


class Tok(NamedTuple):
    """One preprocessing token: its text, its kind, the macros it may no longer expand
    (its hide set) and what stood before it (`""`, `" "` or `"\\n"`)."""

    text: str
    kind: str  # "ident" | "number" | "punct" | "other"
    hide: frozenset[str] = frozenset()
    lead: str = ""


def tokenize(line: str, lead: str = "") -> list[Tok]:
    """The tokens of one line; the first one gets `lead`."""
    out: list[Tok] = []
    space = lead
    for m in _TOKEN.finditer(line):
        kind = m.lastgroup or "other"
        if kind == "ws":
            space = space or " "
            continue
        out.append(Tok(m.group(), kind, frozenset(), space))
        space = ""
    return out


@functools.lru_cache(maxsize=4096)
def _pastes(a: str, b: str) -> bool:
    """True when the tokens `a` and `b` written side by side would read as other tokens."""
    return [t.text for t in tokenize(a + b)] != [a, b]


def join(tokens: Iterable[Tok]) -> str:
    """Tokens back to text, with a space wherever two would otherwise run together."""
    parts: list[str] = []
    prev: Tok | None = None
    for tok in tokens:
        lead = tok.lead
        if not lead and prev is not None and _pastes(prev.text, tok.text):
            lead = " "
        parts.append(lead + tok.text)
        prev = tok
    return "".join(parts).lstrip("\n")
