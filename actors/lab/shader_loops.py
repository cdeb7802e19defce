"""The loop rules of a shader body: every `for` has a constant header whose simulated trip
count is at most 64, its index is never written in its body, and the whole body costs at
most 4096 iterations per pixel.

`loop_reason(src)` reads a body with comments blanked and continuations joined, either
as written (its `#define` constants substituted) or as preprocessed (glsl_preprocess).

- A header is `TYPE i = literal; i OP literal; step` with the index declared in it (an
  index declared outside could be written by any function the body calls); a name in it
  is a constant only when declared once (`const`, or an object-like `#define`), with one
  literal value, and never declared again (a local, a parameter or a member of the same
  name would shadow it).
- The trip count is simulated in the index's precision: float32 for highp float, float16
  for mediump float, 2^-8 steps within (-2, 2) for lowp float; int and uint within their
  precision's guaranteed range (an unqualified int is mediump in a fragment shader). A
  value outside that range is `loop counter out of range`: hardware may wrap it.
- The cost is the iterations one pixel may run: sequential loops and call sites add,
  nesting multiplies, calls are followed into user functions (every overload of a name),
  and a loop body is the statement the compiler reads as its body (`if`/`else`, nested
  `for`, blocks). A chain of loops and calls nested more than MAX_NESTING deep is
  refused rather than costed.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from actors.lab.contract import MAX_LOOP_BOUND, MAX_LOOP_COST

_NUM = r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?[uUfF]?"
_PRECISIONS = ("lowp", "mediump", "highp")
_CONST_DEF = re.compile(
    rf"#\s*define\s+(\w+)[ \t]+\(?({_NUM})\)?[ \t]*$"
    rf"|\bconst\s+(?:(?:lowp|mediump|highp)\s+)?(?:int|uint|float)\s+(\w+)\s*=\s*({_NUM})\s*;",
    re.MULTILINE,
)
_INIT = re.compile(rf"^(?:(lowp|mediump|highp)\s+)?(int|uint|float)\s+(\w+)\s*=\s*({_NUM})$")
_COND = re.compile(rf"^(\w+)\s*(<=|>=|<|>|!=)\s*({_NUM})$|^({_NUM})\s*(<=|>=|<|>|!=)\s*(\w+)$")
_PAREN_LITERAL = re.compile(rf"\(\s*({_NUM})\s*\)")
_OUT_PARAM_FN = re.compile(r"\b(\w+)\s*\(([^()]*\b(?:inout|out)\b[^()]*)\)\s*\{")
_CALL = re.compile(r"\b(\w+)\s*\(")
_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "!=": "!="}
_TYPES = (
    r"(?:void|bool|int|uint|float|[biu]?vec[234]|mat[234](?:x[234])?"
    r"|[iu]?sampler\w*)"
)
# Guaranteed ranges of integer loop indices by precision (GLSL ES 3.00, 4.5.2).
_INT_RANGE = {
    ("int", "highp"): (-(2**31), 2**31 - 1), ("int", "mediump"): (-(2**15) + 1, 2**15 - 1),
    ("int", "lowp"): (-(2**8) + 1, 2**8 - 1), ("uint", "highp"): (0, 2**32 - 1),
    ("uint", "mediump"): (0, 2**16 - 1), ("uint", "lowp"): (0, 2**9 - 1),
}
_MEDIUMP_FLOAT_RANGE = 2.0**14
_STATEMENT_DEPTH = 200  # unbraced nesting deeper than this: the body runs to the end
MAX_NESTING = 64  # loops and calls nested in one another (the cost's recursion)
_TOO_DEEP = f"loops and calls nested over {MAX_NESTING} deep"


@attrs.frozen
class Loop:
    """One `for` loop: where its header starts, its body span and its trip count."""

    start: int
    body: tuple[int, int]
    trips: int


class LoopError(ValueError):
    """A loop the rules refuse; the message is the rejection reason."""


_BRACKETS = {"(": re.compile(r"[()]"), "{": re.compile(r"[{}]")}


def _match_close(src: str, i: int, open_ch: str) -> int:
    """Index just past the bracket closing the one at `i` (or the end of `src`)."""
    depth = 0
    for m in _BRACKETS[open_ch].finditer(src, i):
        depth += 1 if m.group() == open_ch else -1
        if depth == 0:
            return m.end()
    return len(src)


_CONTROL = re.compile(r"(for|while|if|switch)\b\s*\(")
_ELSE = re.compile(r"\s*else\b")


def _statement_end(src: str, i: int, depth: int = 0) -> int:
    """Index just past the statement starting at `i`, as the compiler reads it: a block,
    a control statement with its own body (and an `if`'s `else`), or up to `;`."""
    while i < len(src) and src[i].isspace():
        i += 1
    if depth > _STATEMENT_DEPTH:
        return len(src)
    if i < len(src) and src[i] == "{":
        return _match_close(src, i, "{")
    control = _CONTROL.match(src, i)
    if control:
        end = _statement_end(src, _match_close(src, control.end() - 1, "("), depth + 1)
        if control.group(1) == "if" and (other := _ELSE.match(src, end)):
            end = _statement_end(src, other.end(), depth + 1)
        return end
    nesting = 0
    for j in range(i, len(src)):
        c = src[j]
        if c in "([{":
            nesting += 1
        elif c in ")]}":
            nesting -= 1
            if nesting < 0:
                return j
        elif c == ";" and nesting == 0:
            return j + 1
    return len(src)


def _number(text: str) -> float:
    value = float(text.rstrip("uUfF"))
    if not math.isfinite(value):  # `1e999`: no constant a compiler agrees on
        raise LoopError("loop bound not constant")
    return value


def _precision(qualifier: str | None, kind: str, src: str) -> str:
    """The precision of a loop index: its qualifier, else the lowest default in force
    anywhere in the body (highp float from the prelude, mediump int in a fragment shader)."""
    if qualifier:
        return qualifier
    defaults = re.findall(rf"\bprecision\s+(lowp|mediump|highp)\s+{kind}\b", src)
    base = "highp" if kind == "float" else "mediump"
    return min([base, *defaults], key=_PRECISIONS.index)


Make = Callable[[float], Any]  # a number as the index's precision stores it
Check = Callable[[Any], None]  # raises LoopError outside the precision's range


def _arithmetic(kind: str, precision: str) -> tuple[Make, Check]:
    """(make, check) for index values of `kind` at `precision`: `make` rounds a number the
    way that precision stores it, `check` raises when it leaves the guaranteed range."""
    if kind != "float":
        lo, hi = _INT_RANGE[kind, precision]

        def check_int(v: float) -> None:
            if not lo <= v <= hi:
                raise LoopError("loop counter out of range")

        return int, check_int
    if precision == "highp":
        return np.float32, lambda v: None
    if precision == "mediump":

        def check_half(v: float) -> None:
            if not abs(float(v)) <= _MEDIUMP_FLOAT_RANGE:
                raise LoopError("loop counter out of range")

        return np.float16, check_half

    def check_low(v: float) -> None:
        if not abs(float(v)) < 2.0:
            raise LoopError("loop counter out of range")

    return (lambda v: round(float(v) * 256) / 256), check_low


def _trip_count(header: list[str], consts: dict[str, str], src: str) -> tuple[str, int]:
    """The index name and the trip count of a header, simulated; LoopError when the
    header is not constant, runs over 64 or leaves its precision's range."""

    def sub(text: str) -> str:  # named constants become their literal values
        text = re.sub(r"\b\w+\b", lambda m: consts.get(m.group(0), m.group(0)), text.strip())
        return _PAREN_LITERAL.sub(r"\1", text)

    init, cond, step = header
    mi, mc = _INIT.match(sub(init)), _COND.match(sub(cond))
    if mi is None or mc is None:
        raise LoopError("loop bound not constant")
    qualifier, kind, var, start = mi.groups()
    if mc.group(1) is not None:
        cvar, op, bound = mc.group(1), mc.group(2), mc.group(3)
    else:
        cvar, op, bound = mc.group(6), _FLIP[mc.group(5)], mc.group(4)
    ms = re.fullmatch(
        rf"(?:{var}\s*(\+\+|--)|(\+\+|--)\s*{var}|{var}\s*([-+])=\s*({_NUM})"
        rf"|{var}\s*=\s*{var}\s*([-+])\s*({_NUM}))",
        sub(step),
    )
    if cvar != var or ms is None:
        raise LoopError("loop bound not constant")
    if ms.group(1) or ms.group(2):
        delta = 1.0 if (ms.group(1) or ms.group(2)) == "++" else -1.0
    else:
        sign, amount = (ms.group(3), ms.group(4)) if ms.group(3) else (ms.group(5), ms.group(6))
        delta = _number(amount) * (1.0 if sign == "+" else -1.0)
    make, check = _arithmetic(kind, _precision(qualifier, kind, src))
    with np.errstate(all="ignore"):  # float16 overflows to inf, which the test then reads
        return var, _simulate(make, check, start, bound, delta, op)


def _simulate(make: Make, check: Check, start: str, bound: str, delta: float, op: str) -> int:
    # only the values the index takes are checked: the bound may lie past a range the
    # simulation leaves first (then it is the trip count that fails)
    i, b, d = make(_number(start)), make(_number(bound)), make(delta)
    check(i)
    test = {"<": lambda: i < b, "<=": lambda: i <= b, ">": lambda: i > b,
            ">=": lambda: i >= b, "!=": lambda: i != b}[op]
    trips = 0
    while test():
        trips += 1
        if trips > MAX_LOOP_BOUND:
            raise LoopError(f"loop bound over {MAX_LOOP_BOUND}")
        i = make(i + d)
        check(i)
    return trips


# One pass over the body for every declaration site: `;` `{` `}` end a statement, `(` `)`
# nest, a `,` may start a later declarator, and a word may be a type followed by a name
# (lookaheads, so a name is still read as the next word).
_SITES = re.compile(
    r"(?P<end>[;{}])|(?P<open>\()|(?P<close>\))"
    r"|,(?=\s*+(?P<listed>\w++)\s*+(?:=(?!=)|[;,\[]))"
    r"|\b(?P<word>\w++)(?=(?:\s*+\[[^\][]*+\])?\s++(?P<named>\w++))"
)
_TYPE = re.compile(_TYPES)


def _declaration_sites(src: str) -> Counter[str]:
    """How many times each name is declared: after a type (variables, parameters,
    members, functions; a struct's name is a type) or as a later declarator of a list
    outside parentheses (`int a = 1, name;`)."""
    structs = set(re.findall(r"\bstruct\s+(\w+)", src))
    sites: Counter[str] = Counter()
    depth = 0  # parentheses opened in the current statement
    for m in _SITES.finditer(src):
        kind = m.lastgroup
        if kind == "end":
            depth = 0
        elif kind in ("open", "close"):
            depth += 1 if kind == "open" else -1
        elif m.group("listed"):
            sites[m.group("listed")] += depth <= 0
        elif (word := m.group("word")) in structs or _TYPE.fullmatch(word):
            sites[m.group("named")] += 1
    return sites


def constants(src: str) -> dict[str, str]:
    """Names a loop header may use as literals: defined once with one literal value."""
    values: dict[str, set[str]] = {}
    for m in _CONST_DEF.finditer(src):
        name, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        values.setdefault(name, set()).add(value)
    sites = _declaration_sites(src)
    # a #define counts no declaration site, a `const T N = v;` counts one
    return {name: next(iter(vs)) for name, vs in values.items()
            if len(vs) == 1 and sites[name] <= 1}


def find_loops(src: str) -> list[Loop]:
    """Every `for` loop of a body, checked against the header and index rules."""
    consts = constants(src)
    # functions that can write an argument: user ones with out/inout parameters, and modf
    out_fns = {m.group(1) for m in _OUT_PARAM_FN.finditer(src)} | {"modf"}
    loops = []
    for m in re.finditer(r"\bfor\s*\(", src):
        close = _match_close(src, m.end() - 1, "(")
        parts = _split_top(src[m.end() : close - 1])
        if len(parts) != 3:
            raise LoopError("loop bound not constant")
        var, trips = _trip_count(parts, consts, src)
        end = _statement_end(src, close)
        if _modifies(src, close, end, var, out_fns):
            raise LoopError("loop index modified")
        loops.append(Loop(m.start(), (close, end), trips))
    return loops


_ASSIGN = r"(?:[-+*/%&|^]|<<|>>)?=(?!=)"


def _modifies(src: str, lo: int, hi: int, var: str, out_fns: set[str]) -> bool:
    """True when src[lo:hi] assigns `var`, steps it, or passes it to an out parameter."""
    body = src[lo:hi]
    if re.search(rf"\b{var}\s*(?:{_ASSIGN}|\+\+|--)|(?:\+\+|--)\s*{var}\b", body):
        return True
    for call in _CALL.finditer(body):
        if call.group(1) in out_fns:
            args = body[call.end() : _match_close(body, call.end() - 1, "(") - 1]
            if re.search(rf"\b{var}\b", args):
                return True
    return False


def _split_top(text: str) -> list[str]:
    """Split a for header on `;` outside parentheses."""
    parts, depth, last = [], 0, 0
    for j, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if c == ";" and depth == 0:
            parts.append(text[last:j])
            last = j + 1
    return parts + [text[last:]]


def _functions(src: str) -> dict[str, list[tuple[int, int]]]:
    """Top-level function definitions: name -> the body span of each overload."""
    found: dict[str, list[tuple[int, int]]] = {}
    depth, last, opened = 0, 0, 0
    for m in re.finditer(r"[{};]", src):
        c, j = m.group(), m.start()
        if c == "{":
            if depth == 0:
                opened = j
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                header = src[last:opened].rstrip()
                name = (
                    re.search(r"(\w+)\s*$", src[last : header.rfind("(") + last])
                    if header.endswith(")")
                    else None
                )
                if name:
                    found.setdefault(name.group(1), []).append((opened, j + 1))
                last = j + 1
        elif depth == 0:
            last = j + 1
    return found


def loop_cost(src: str, loops: list[Loop]) -> int:
    """The iterations one pixel may run in the costliest function (see the module
    docstring); 0 for a body without loops. LoopError when a chain of nested loops and
    calls runs deeper than MAX_NESTING."""
    funcs = _functions(src)
    starts = [lp.start for lp in loops]
    memo: dict[str, tuple[int, int]] = {}  # function -> (cost, nesting depth inside it)

    def span_cost(lo: int, hi: int, seen: frozenset[str], depth: int) -> tuple[int, int]:
        if depth > MAX_NESTING:  # (also bounds this recursion)
            raise LoopError(_TOO_DEEP)
        total, height, covered, gaps = 0, 0, lo, []
        for k in range(bisect.bisect_left(starts, lo), bisect.bisect_left(starts, hi)):
            loop = loops[k]
            if loop.start >= covered:  # not inside a loop counted already
                cost, inner = span_cost(*loop.body, seen, depth + 1)
                total += loop.trips * max(1, cost)
                height = max(height, inner + 1)
                gaps.append((covered, loop.start))
                covered = loop.body[1]
        gaps.append((covered, hi))
        for a, b in gaps:
            for call in _CALL.finditer(src, a, b):
                name = call.group(1)
                if name in funcs and name not in seen:
                    cost, inner = fn_cost(name, seen, depth + 1)
                    total += cost
                    height = max(height, inner + 1)
        if depth + height > MAX_NESTING:  # a function costed earlier, deeper down
            raise LoopError(_TOO_DEEP)
        return total, height

    def fn_cost(name: str, seen: frozenset[str], depth: int) -> tuple[int, int]:
        if name not in memo:
            spans = [span_cost(lo, hi, seen | {name}, depth) for lo, hi in funcs[name]]
            memo[name] = (max(c for c, _ in spans), max(h for _, h in spans))
        return memo[name]

    return max([fn_cost(n, frozenset(), 0)[0] for n in funcs] or [0])


def loop_reason(src: str) -> str | None:
    """The first loop rule a body breaks, or None."""
    try:
        cost = loop_cost(src, find_loops(src))
    except LoopError as exc:
        return str(exc)
    if cost > MAX_LOOP_COST:
        return f"loop cost over {MAX_LOOP_COST}"
    return None
