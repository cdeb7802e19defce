"""A small, bounded GLSL ES 3.00 preprocessor: a shader body as the compiler reads it.

The shader rules must hold for the source the compiler sees, not only for its text, so
`preprocess(body)` does what the compiler's preprocessor does before any rule reads it:
line endings (CR, LF or CRLF each end a line), line continuations joined, comments
blanked, the directives run (`#define` object-like and function-like, `#undef`, `#if`
`#ifdef` `#ifndef` `#elif` `#else` `#endif`) and the macros expanded with the C rules
GLSL ES follows: arguments expanded before they are substituted, the result rescanned,
and a macro never expanded inside its own expansion (Prosser's hide sets). Only the
active branches remain; `#version`, `#extension`, `#pragma` and `#line` stay as lines.

It refuses (PreprocessError, whose message is the rejection reason) rather than guess:

- `preprocessor error`: what the compiler rejects too (an unknown directive, `#error`,
  an unbalanced `#if`, a macro redefined differently, a wrong argument count, an
  undefined name in `#if`, a `#` outside a directive) and what implementations decide
  differently (`#if` arithmetic outside 32 bits or with a zero divisor, a `GL_` name
  only the implementation defines, such as an extension macro, a block comment that
  runs a directive onto the next line, a macro call interrupted by a directive);
- `macro expansion too large`: more than MAX_TOKENS tokens made by expansion, or
  expansion nested deeper than MAX_DEPTH (arguments within arguments, or a macro
  expanding into another, and that into another: a hide set of more than MAX_DEPTH names).

Token pasting (`##`) is refused before this runs (the `token pasting` rule).
"""

from __future__ import annotations

import re
from collections import deque

import attrs

from actors.lab.glsl_text import (
    Tok,
    blank_comments,
    comment_ends_a_directive,
    join,
    join_lines,
    tokenize,
)

MAX_TOKENS = 50_000  # tokens expansion may make (the source itself is at most 24,000 chars)
MAX_DEPTH = 64  # nested expansion (arguments, hide sets), #if and #if expression nesting
MAX_MACROS = 1_000
INT_MIN, INT_MAX = -(2**31), 2**31 - 1

# What every WebGL2 fragment shader sees defined; any other GL_ name is the implementation's.
PREDEFINED = {"GL_ES": "1", "GL_FRAGMENT_PRECISION_HIGH": "1", "__VERSION__": "300"}
# Directives that stay in the output as lines (the rules read #version and #extension).
_KEPT = frozenset({"version", "extension", "pragma", "line"})


class PreprocessError(ValueError):
    """The source cannot be read as the compiler reads it; the message is the reason."""


_ERROR = "preprocessor error"
_TOO_LARGE = "macro expansion too large"

# --- macros ----------------------------------------------------------------------------


@attrs.frozen
class Macro:
    """A macro: its parameters (None: object-like) and its replacement tokens."""

    params: tuple[str, ...] | None
    body: tuple[Tok, ...]

    def same_as(self, other: Macro) -> bool:
        """True when a redefinition changes nothing (the only redefinition allowed)."""
        return self.params == other.params and [t.text for t in self.body] == [
            t.text for t in other.body
        ]


@attrs.frozen
class _Frame:
    """One open conditional: whether its parent is active, its current branch is active,
    a branch was taken already, and `#else` was seen."""

    parent: bool
    active: bool
    taken: bool
    seen_else: bool = False


def _union(own: frozenset[str], hide: frozenset[str]) -> frozenset[str]:
    """A token's hide set after a substitution: `hide` itself when it holds the token's
    own (nearly always), so the tokens of one expansion share one set, not a copy each."""
    return hide if own <= hide else own | hide


class _Preprocessor:
    def __init__(self) -> None:
        self.macros: dict[str, Macro] = {
            name: Macro(None, tuple(tokenize(value))) for name, value in PREDEFINED.items()
        }
        self.made = 0  # tokens made by expansion so far

    # --- expansion -----------------------------------------------------------------------

    def expand(self, tokens: list[Tok], *, final: bool, depth: int = 0) -> list[Tok]:
        """Macro-expand `tokens`. `final`: nothing follows them (else a directive does, and
        a function-like macro name at their end could take its `(` from beyond it)."""
        if depth > MAX_DEPTH:
            raise PreprocessError(_TOO_LARGE)
        out: list[Tok] = []
        queue = deque(tokens)
        while queue:
            tok = queue.popleft()
            macro = self.macros.get(tok.text) if tok.kind == "ident" else None
            if macro is None or tok.text in tok.hide:
                out.append(tok)
                continue
            if macro.params is None:
                self._push(queue, self._substitute(macro, tok, [], tok.hide | {tok.text}))
                continue
            if not queue:
                if not final:
                    raise PreprocessError(_ERROR)
                out.append(tok)
                continue
            if queue[0].text != "(":
                out.append(tok)
                continue
            args, close = self._arguments(queue)
            if len(args) != max(1, len(macro.params)) or (not macro.params and args[0]):
                raise PreprocessError(_ERROR)
            expanded = [self.expand(a, final=True, depth=depth + 1) for a in args]
            hide = (tok.hide & close.hide) | {tok.text}
            self._push(queue, self._substitute(macro, tok, expanded, hide))
        return out

    def _push(self, queue: deque[Tok], tokens: list[Tok]) -> None:
        self.made += len(tokens)
        if self.made > MAX_TOKENS:
            raise PreprocessError(_TOO_LARGE)
        queue.extendleft(reversed(tokens))

    @staticmethod
    def _arguments(queue: deque[Tok]) -> tuple[list[list[Tok]], Tok]:
        """Pop `( a, b, ... )` off the queue: the arguments and the closing parenthesis."""
        queue.popleft()
        args: list[list[Tok]] = [[]]
        depth = 0
        while queue:
            tok = queue.popleft()
            if tok.text == "(":
                depth += 1
            elif tok.text == ")":
                if depth == 0:
                    return args, tok
                depth -= 1
            elif tok.text == "," and depth == 0:
                args.append([])
                continue
            args[-1].append(tok)
        raise PreprocessError(_ERROR)  # the call runs past the end of its text

    @staticmethod
    def _substitute(macro: Macro, name: Tok, args: list[list[Tok]], hide: frozenset[str]
                    ) -> list[Tok]:
        if len(hide) > MAX_DEPTH:  # a macro expanding into another, and so on
            raise PreprocessError(_TOO_LARGE)
        params = {p: i for i, p in enumerate(macro.params or ())}
        out: list[Tok] = []
        for tok in macro.body:
            if tok.kind == "ident" and tok.text in params:
                for k, arg in enumerate(args[params[tok.text]]):
                    out.append(arg._replace(hide=_union(arg.hide, hide),
                                            lead=tok.lead if k == 0 else arg.lead))
            else:
                out.append(tok._replace(hide=_union(tok.hide, hide)))
        if out:
            out[0] = out[0]._replace(lead=name.lead)
        return out

    # --- directives ----------------------------------------------------------------------

    def define(self, toks: list[Tok]) -> None:
        if not toks or toks[0].kind != "ident":
            raise PreprocessError(_ERROR)
        name = self._own_name(toks[0].text)
        rest = toks[1:]
        params: tuple[str, ...] | None = None
        if rest and rest[0].text == "(" and not rest[0].lead:
            close = next((i for i, t in enumerate(rest) if t.text == ")"), None)
            if close is None:
                raise PreprocessError(_ERROR)
            inner = rest[1:close]
            names = [t.text for t in inner[0::2]]
            if (any(t.kind != "ident" for t in inner[0::2])
                    or any(t.text != "," for t in inner[1::2])
                    or (inner and len(inner) % 2 == 0) or len(set(names)) != len(names)):
                raise PreprocessError(_ERROR)
            params, rest = tuple(names), rest[close + 1 :]
        if any(t.text in ("#", "##") for t in rest):
            raise PreprocessError(_ERROR)
        macro = Macro(params, tuple(t._replace(lead=t.lead and " ") for t in rest))
        old = self.macros.get(name)
        if old is not None and not old.same_as(macro):
            raise PreprocessError(_ERROR)
        self.macros[name] = macro
        if len(self.macros) > MAX_MACROS:
            raise PreprocessError(_TOO_LARGE)

    def undef(self, toks: list[Tok]) -> None:
        if len(toks) != 1 or toks[0].kind != "ident":
            raise PreprocessError(_ERROR)
        self.macros.pop(self._own_name(toks[0].text), None)

    @staticmethod
    def _own_name(name: str) -> str:
        """A name a shader may define or undefine (GL_ names and `defined` are reserved)."""
        if name.startswith("GL_") or name == "defined":
            raise PreprocessError(_ERROR)
        return name

    def is_defined(self, name: str) -> bool:
        """Whether `name` is a macro; refused for a GL_ name only the implementation knows."""
        if name.startswith("GL_") and name not in PREDEFINED:
            raise PreprocessError(_ERROR)
        return name in self.macros

    def condition(self, toks: list[Tok]) -> bool:
        """The value of an `#if` / `#elif` expression."""
        resolved: list[Tok] = []
        i = 0
        while i < len(toks):
            tok = toks[i]
            if tok.text != "defined":
                resolved.append(tok)
                i += 1
                continue
            parens = i + 1 < len(toks) and toks[i + 1].text == "("
            j = i + 2 if parens else i + 1
            if j >= len(toks) or toks[j].kind != "ident" or (
                parens and (j + 1 >= len(toks) or toks[j + 1].text != ")")
            ):
                raise PreprocessError(_ERROR)
            resolved.append(Tok("1" if self.is_defined(toks[j].text) else "0", "number"))
            i = j + 2 if parens else j + 1
        expanded = self.expand(resolved, final=True)
        if not expanded:
            raise PreprocessError(_ERROR)
        return _Expression(expanded).value() != 0

    def ifdef(self, toks: list[Tok]) -> bool:
        if len(toks) != 1 or toks[0].kind != "ident":
            raise PreprocessError(_ERROR)
        return self.is_defined(toks[0].text)


# --- #if expressions -------------------------------------------------------------------

_BINARY = {
    "||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, ">": 7, "<=": 7,
    ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10,
}
_INTEGER = re.compile(r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*")


class _Expression:
    """Integer `#if` arithmetic with C's operators and precedence (no `?:`), every value
    kept within 32 bits: outside them compilers disagree, so it is refused."""

    def __init__(self, toks: list[Tok]) -> None:
        self.toks = toks
        self.i = 0
        self.depth = 0

    def value(self) -> int:
        result = self._binary(1)
        if self.i != len(self.toks):
            raise PreprocessError(_ERROR)
        return result

    def _next(self) -> Tok:
        if self.i >= len(self.toks):
            raise PreprocessError(_ERROR)
        self.i += 1
        return self.toks[self.i - 1]

    def _binary(self, level: int) -> int:
        left = self._unary()
        while self.i < len(self.toks):
            op = self.toks[self.i].text
            prec = _BINARY.get(op)
            if prec is None or prec < level:
                break
            self.i += 1
            left = _checked(_apply(op, left, self._binary(prec + 1)))
        return left

    def _unary(self) -> int:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise PreprocessError(_ERROR)
        tok = self._next()
        if tok.text == "(":
            value = self._binary(1)
            if self._next().text != ")":
                raise PreprocessError(_ERROR)
        elif tok.text in ("+", "-", "~", "!"):
            operand = self._unary()
            value = {"+": operand, "-": -operand, "~": ~operand,
                     "!": int(not operand)}[tok.text]
        elif tok.kind == "number" and _INTEGER.fullmatch(tok.text):
            text = tok.text
            value = int(text, 16 if text[1:2] in ("x", "X") else 8 if text[0] == "0" else 10)
        else:  # an undefined name (not 0 in GLSL ES), a float, or a stray token
            raise PreprocessError(_ERROR)
        self.depth -= 1
        return _checked(value)


def _checked(value: int) -> int:
    if not INT_MIN <= value <= INT_MAX:
        raise PreprocessError(_ERROR)
    return value


def _apply(op: str, a: int, b: int) -> int:
    if op in ("/", "%"):
        if b == 0:
            raise PreprocessError(_ERROR)
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # C truncates toward zero
        return q if op == "/" else a - b * q
    if op in ("<<", ">>") and (a < 0 or not 0 <= b < 32):
        raise PreprocessError(_ERROR)
    return {
        "||": lambda: int(bool(a) or bool(b)), "&&": lambda: int(bool(a) and bool(b)),
        "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b, "==": lambda: int(a == b),
        "!=": lambda: int(a != b), "<": lambda: int(a < b), ">": lambda: int(a > b),
        "<=": lambda: int(a <= b), ">=": lambda: int(a >= b), "<<": lambda: a << b,
        ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
    }[op]()


# --- the whole body --------------------------------------------------------------------


def preprocess(body: str) -> str:
    """The body as the compiler reads it after preprocessing (see the module docstring);
    raises PreprocessError with the rejection reason."""
    joined = join_lines(body)
    if "#" not in joined and not any(name in joined for name in PREDEFINED):
        return blank_comments(joined)  # no directive and no macro: nothing to run
    if comment_ends_a_directive(joined):
        raise PreprocessError(_ERROR)
    pp = _Preprocessor()
    frames: list[_Frame] = []
    out: list[str] = []
    block: list[Tok] = []

    def flush(final: bool) -> None:
        if block:
            out.append(join(pp.expand(block, final=final)))
            block.clear()

    for line in blank_comments(joined).split("\n"):
        active = not frames or frames[-1].active
        stripped = line.lstrip()
        if not stripped.startswith("#"):
            if active:
                toks = tokenize(line, "\n")
                if any(t.text in ("#", "##") for t in toks):
                    raise PreprocessError(_ERROR)
                block.extend(toks)
            continue
        flush(final=False)
        toks = tokenize(stripped[1:])
        name = toks[0].text if toks else ""
        args = toks[1:]
        if name in ("if", "ifdef", "ifndef"):
            if len(frames) >= MAX_DEPTH:
                raise PreprocessError(_ERROR)
            if not active:
                frames.append(_Frame(False, False, True))
                continue
            value = pp.condition(args) if name == "if" else pp.ifdef(args) == (name == "ifdef")
            frames.append(_Frame(True, value, value))
        elif name in ("elif", "else"):
            if not frames or frames[-1].seen_else:
                raise PreprocessError(_ERROR)
            f = frames[-1]
            value = f.parent and not f.taken and (name == "else" or pp.condition(args))
            frames[-1] = _Frame(f.parent, value, f.taken or value, name == "else")
        elif name == "endif":
            if not frames:
                raise PreprocessError(_ERROR)
            frames.pop()
        elif not active:
            continue
        elif name == "define":
            pp.define(args)
        elif name == "undef":
            pp.undef(args)
        elif name in _KEPT:
            out.append("#" + stripped[1:])
        elif name:  # #error, or a directive GLSL ES does not have
            raise PreprocessError(_ERROR)
    if frames:
        raise PreprocessError(_ERROR)
    flush(final=True)
    return "\n".join(out) + "\n"
