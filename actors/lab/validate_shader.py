"""Static checks of a shader organism's body: the seed's table, then the hardening rules.

The seed's rules read the raw body exactly as the seed words them (so a comment that
says `while` is an `unbounded loop`). The hardening rules read the body with comments
removed and line continuations joined, because that is what the GLSL compiler reads.
"""

from __future__ import annotations

import functools
import logging
import re
import shutil
import subprocess

import attrs
import numpy as np

from actors.lab.contract import MAX_LOOP_BOUND, MAX_LOOP_COST, SHADER_PRELUDE

log = logging.getLogger(__name__)

# --- the seed's table, in the seed's order --------------------------------------------

_MAIN = re.compile(r"\bvoid\s+main\s*\(")
_VERSION = re.compile(r"#\s*version")
_TEXTURE = re.compile(r"\b[iu]?sampler\w*|\btexture\s*\(")
_FRAGCOLOR = re.compile(r"\bout\s+(?:(?:lowp|mediump|highp)\s+)?vec4\s+fragColor\b")
_UNIFORM = re.compile(r"\buniform\b([^;{]*)")
_ALLOWED_UNIFORMS = {"float u_time", "vec2 u_res"}
# The init may hold calls (`int(floor(x))`, two levels of parentheses) before `; ;`.
_INIT_TEXT = r"(?:[^;()]|\((?:[^;()]|\([^;()]*\))*\))*"
_UNBOUNDED = re.compile(rf"\bwhile\b|\bfor\s*\({_INIT_TEXT};\s*;")


def _extra_uniform(body: str) -> bool:
    """True when a uniform other than `float u_time` or `vec2 u_res` is declared."""
    for m in _UNIFORM.finditer(body):
        decl = re.sub(r"\b(?:lowp|mediump|highp)\b", " ", m.group(1))
        if " ".join(decl.split()) not in _ALLOWED_UNIFORMS:
            return True
    return False


SEED_RULES = (
    ("no main()", lambda s: _MAIN.search(s) is None),
    ("redeclared #version", lambda s: _VERSION.search(s) is not None),
    ("uses textures", lambda s: _TEXTURE.search(s) is not None),
    ("redeclared fragColor", lambda s: _FRAGCOLOR.search(s) is not None),
    ("extra uniform", _extra_uniform),
    ("unbounded loop", lambda s: _UNBOUNDED.search(s) is not None),
)

# --- hardening -------------------------------------------------------------------------

_COMMENTS = re.compile(r"/\*.*?(?:\*/|$)|//[^\n]*", re.DOTALL)
_EXTENSION = re.compile(r"#\s*extension\b")
_PASTING = re.compile(r"##")
_LOOP_MACRO = re.compile(r"^[ \t]*#[ \t]*define\b.*\b(?:for|while|do)\b", re.MULTILINE)
_RESERVED = re.compile(r"\b_?webgl_\w*|\b\w*__\w*")
_NUM = r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?[uU]?"
_CONST_DEF = re.compile(
    rf"#\s*define\s+(\w+)[ \t]+\(?({_NUM})\)?[ \t]*$"
    rf"|\bconst\s+(?:(?:lowp|mediump|highp)\s+)?(?:int|uint|float)\s+(\w+)\s*=\s*({_NUM})\s*;",
    re.MULTILINE,
)
_INIT = re.compile(rf"^(?:(?:lowp|mediump|highp)\s+)?(?:int|uint|float)?\s*(\w+)\s*=\s*({_NUM})$")
_COND = re.compile(rf"^(\w+)\s*(<=|>=|<|>|!=)\s*({_NUM})$|^({_NUM})\s*(<=|>=|<|>|!=)\s*(\w+)$")
_OUT_PARAM_FN = re.compile(r"\b(\w+)\s*\(([^()]*\b(?:inout|out)\b[^()]*)\)\s*\{")
_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "!=": "!="}


@attrs.frozen
class Loop:
    """One `for` loop: where its header starts, its body span and its trip count."""

    start: int
    body: tuple[int, int]
    trips: int


class LoopError(ValueError):
    """A loop the static rules refuse; the message is the rejection reason."""


def normalize(body: str) -> str:
    """The body as the compiler reads it: continuations joined, comments blanked."""
    joined = body.replace("\\\r\n", "").replace("\\\n", "")
    return _COMMENTS.sub(
        lambda m: (
            " " * len(m.group(0)) if "\n" not in m.group(0) else re.sub(r"[^\n]", " ", m.group(0))
        ),
        joined,
    )


_BRACKETS = {"(": re.compile(r"[()]"), "{": re.compile(r"[{}]")}


def _match_close(src: str, i: int, open_ch: str) -> int:
    """Index just past the bracket closing the one at `i` (or the end of `src`)."""
    depth = 0
    for m in _BRACKETS[open_ch].finditer(src, i):
        depth += 1 if m.group() == open_ch else -1
        if depth == 0:
            return m.end()
    return len(src)


def _statement_end(src: str, i: int) -> int:
    """Index just past the statement starting at `i`: a braced block or up to `;`."""
    while i < len(src) and src[i].isspace():
        i += 1
    if i < len(src) and src[i] == "{":
        return _match_close(src, i, "{")
    depth = 0
    for j in range(i, len(src)):
        c = src[j]
        if c in "({":
            depth += 1
        elif c in ")}":
            depth -= 1
        elif c == ";" and depth == 0:
            return j + 1
    return len(src)


def _number(text: str) -> float:
    return float(text.rstrip("uU"))


def _trip_count(init: str, cond: str, step: str, consts: dict[str, str]) -> int:
    """Iterations of a loop header, simulated; raises LoopError when it is not constant."""

    def sub(text: str) -> str:  # named constants become their literal values
        return re.sub(r"\b\w+\b", lambda m: consts.get(m.group(0), m.group(0)), text.strip())

    mi, mc = _INIT.match(sub(init)), _COND.match(sub(cond))
    if mi is None or mc is None:
        raise LoopError("loop bound not constant")
    var, start = mi.group(1), mi.group(2)
    if mc.group(1) is not None:
        cvar, op, bound = mc.group(1), mc.group(2), mc.group(3)
    else:
        cvar, op, bound = mc.group(6), _FLIP[mc.group(5)], mc.group(4)
    s = sub(step)
    ms = re.fullmatch(
        rf"(?:{var}\s*(\+\+|--)|(\+\+|--)\s*{var}|{var}\s*([-+])=\s*({_NUM})"
        rf"|{var}\s*=\s*{var}\s*([-+])\s*({_NUM}))",
        s,
    )
    if cvar != var or ms is None:
        raise LoopError("loop bound not constant")
    if ms.group(1) or ms.group(2):
        delta = 1.0 if (ms.group(1) or ms.group(2)) == "++" else -1.0
    else:
        sign, amount = (ms.group(3), ms.group(4)) if ms.group(3) else (ms.group(5), ms.group(6))
        delta = _number(amount) * (1.0 if sign == "+" else -1.0)
    is_float = any("." in t or "e" in t.lower() for t in (start, bound))
    f = np.float32 if is_float else int
    i, b, d = f(_number(start)), f(_number(bound)), f(delta)
    test = {
        "<": lambda: i < b,
        "<=": lambda: i <= b,
        ">": lambda: i > b,
        ">=": lambda: i >= b,
        "!=": lambda: i != b,
    }[op]
    trips = 0
    while test():
        trips += 1
        if trips > MAX_LOOP_BOUND:
            raise LoopError(f"loop bound over {MAX_LOOP_BOUND}")
        i = f(i + d)
    return trips


def find_loops(src: str) -> list[Loop]:
    """Every `for` loop of a normalized body, checked against the loop rules."""
    values: dict[str, set[str]] = {}
    for m in _CONST_DEF.finditer(src):
        name, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        values.setdefault(name, set()).add(value)
    # a name defined with two values (#undef and redefine, or shadowing) is not a constant
    consts = {name: vs.pop() for name, vs in values.items() if len(vs) == 1}
    # functions that can write an argument: user ones with out/inout parameters, and modf
    out_fns = {m.group(1) for m in _OUT_PARAM_FN.finditer(src)} | {"modf"}
    loops = []
    for m in re.finditer(r"\bfor\s*\(", src):
        close = _match_close(src, m.end() - 1, "(")
        parts = _split_top(src[m.end() : close - 1])
        if len(parts) != 3:
            raise LoopError("loop bound not constant")
        trips = _trip_count(*parts, consts)
        end = _statement_end(src, close)
        var = _INIT.match(parts[0].strip())
        if var and _modifies(src, close, end, var.group(1), out_fns):
            raise LoopError("loop index modified")
        loops.append(Loop(m.start(), (close, end), trips))
    return loops


def _modifies(src: str, lo: int, hi: int, var: str, out_fns: set[str]) -> bool:
    """True when src[lo:hi] assigns `var`, steps it, or passes it to an out parameter."""
    body = src[lo:hi]
    if re.search(rf"\b{var}\s*(?:[-+*/%]?=(?!=)|\+\+|--)|(?:\+\+|--)\s*{var}\b", body):
        return True
    for call in re.finditer(r"\b(\w+)\s*\(", body):
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


def _functions(src: str) -> dict[str, tuple[int, int]]:
    """Top-level function definitions: name -> body span."""
    found, depth, last, opened = {}, 0, 0, 0
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
                    found[name.group(1)] = (opened, j + 1)
                last = j + 1
        elif depth == 0:
            last = j + 1
    return found


def loop_cost(src: str, loops: list[Loop]) -> int:
    """Worst product of trip counts along nested loops, following calls into functions."""
    funcs = _functions(src)
    memo: dict[str, int] = {}

    def span_cost(lo: int, hi: int, seen: frozenset[str]) -> int:
        cost, covered = 1, lo
        for loop in loops:
            if lo <= loop.start < hi and loop.start >= covered:
                cost = max(cost, loop.trips * span_cost(*loop.body, seen))
                covered = loop.body[1]
        for m in re.finditer(r"\b(\w+)\s*\(", src[lo:hi]):
            name = m.group(1)
            if name in funcs and name not in seen and not _inside(lo + m.start(), loops, lo, hi):
                cost = max(cost, fn_cost(name, seen))
        return cost

    def fn_cost(name: str, seen: frozenset[str]) -> int:
        if name not in memo:
            memo[name] = span_cost(*funcs[name], seen | {name})
        return memo[name]

    return max([fn_cost(n, frozenset()) for n in funcs] or [1])


def _inside(pos: int, loops: list[Loop], lo: int, hi: int) -> bool:
    """True when `pos` falls in a loop header or body that starts within [lo, hi)."""
    return any(lo <= lp.start < hi and lp.start <= pos < lp.body[1] for lp in loops)


def hardening_reason(body: str) -> str | None:
    """The first hardening rule the (seed-clean) body breaks, or None."""
    src = normalize(body)
    if _EXTENSION.search(src):
        return "uses extension"
    if _PASTING.search(src):
        return "token pasting"
    if _LOOP_MACRO.search(src):
        return "loop in macro"
    if _RESERVED.search(src):
        return "reserved identifier"
    try:
        loops = find_loops(src)
    except LoopError as exc:
        return str(exc)
    if loop_cost(src, loops) > MAX_LOOP_COST:
        return f"loop cost over {MAX_LOOP_COST}"
    return None


def shader_reason(body: str) -> str | None:
    """Seed rules then hardening rules, without compiling; None when the body passes."""
    for reason, broken in SEED_RULES:
        if broken(body):
            return reason
    return hardening_reason(body)


# --- the compile step ------------------------------------------------------------------

COMPILE_TIMEOUT = 20.0


@functools.cache
def glslang_path() -> str | None:
    """`glslangValidator` on PATH; logs one warning when it is missing (the step is skipped)."""
    path = shutil.which("glslangValidator")
    if path is None:
        log.warning(
            "glslangValidator not found (Debian glslang-tools): shader compile step "
            "skipped, only static rules apply"
        )
    return path


def compile_reason(body: str) -> str | None:
    """Compile prelude + body with `glslangValidator -l`; the first ERROR: line, or None."""
    exe = glslang_path()
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, "-l", "--stdin", "-S", "frag"],
            input=SHADER_PRELUDE + body,
            capture_output=True,
            text=True,
            timeout=COMPILE_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"compile timed out after {COMPILE_TIMEOUT:g} s"
    if proc.returncode == 0:
        return None
    for line in (proc.stdout + "\n" + proc.stderr).splitlines():
        if line.startswith("ERROR:"):
            return line.strip()
    return f"glslangValidator exited with status {proc.returncode}"
