"""Static checks of a shader organism's body: the seed's table, the hardening rules, and
the compile step (`glslangValidator`, a subprocess: the one part that is not pure).

The seed's rules read the raw body exactly as the seed words them (so a comment that
says `while` is an `unbounded loop`) and again the body as the compiler reads it
(`glsl_preprocess`): a macro, a continuation or an `#if` branch cannot hide a row. The
hardening rules read the normalized text; the loop rules (`shader_loops`) read both.
"""

from __future__ import annotations

import functools
import logging
import re
import shutil
import subprocess

from actors.lab.contract import SHADER_PRELUDE
from actors.lab.glsl_preprocess import PreprocessError, preprocess
from actors.lab.glsl_text import blank_comments, join_lines
from actors.lab.shader_loops import loop_reason

log = logging.getLogger(__name__)

# --- the seed's table, in the seed's order --------------------------------------------

# The seed's test, on the raw body: no `void main(` anywhere (comments included, as every
# row reads the raw body). The preprocessed body, where comments and dead branches are
# gone, also needs a `main` the compiler reads, whatever whitespace the preprocessor left.
SEED_MAIN = "void main("
_MAIN = re.compile(r"\bvoid\s+main\s*\(")
_VERSION = re.compile(r"#\s*version")
_TEXTURE = re.compile(r"\b[iu]?sampler\w*|\btexture\s*\(")
_FRAGCOLOR = re.compile(r"\bout\s+(?:(?:lowp|mediump|highp)\s+)?vec4\s+fragColor\b")
_UNIFORM = re.compile(r"\buniform\b([^;{]*)")
_ALLOWED_UNIFORMS = {"float u_time", "vec2 u_res"}
_WHILE = re.compile(r"\bwhile\b")
_FOR = re.compile(r"\bfor\s*\(")
_HEADER_STOP = re.compile(r"[;{}]")
_EMPTY_CONDITION = re.compile(r";\s*;")


def _unbounded(body: str) -> bool:
    """True for a `while`, or a `for` whose condition is empty.

    A header's first `;` ends its init, whatever calls the init nests (no `;` or brace
    can stand in one), so an empty condition is a `;` right after it. Every `for` before
    one stop shares it, so each stop is read once (a body of `for(`s stays linear).
    """
    if _WHILE.search(body):
        return True
    stop = -1
    for header in _FOR.finditer(body):
        if header.end() <= stop:
            continue
        found = _HEADER_STOP.search(body, header.end())
        if found is None:
            return False
        stop = found.start()
        if _EMPTY_CONDITION.match(body, stop):
            return True
    return False


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
    ("unbounded loop", _unbounded),
)

# --- hardening -------------------------------------------------------------------------

_EXTENSION = re.compile(r"#\s*extension\b")
_PASTING = re.compile(r"##")
_LOOP_MACRO = re.compile(r"^[ \t]*#[ \t]*define\b.*\b(?:for|while|do)\b", re.MULTILINE)
_RESERVED = re.compile(r"\b_?webgl_\w*|\b\w*__\w*")


def normalize(body: str) -> str:
    """The body as the compiler reads its characters: line ends unified, continuations
    joined, comments blanked (directives not run: see glsl_preprocess.preprocess)."""
    return blank_comments(join_lines(body))


def text_reason(src: str) -> str | None:
    """The first hardening rule the normalized text breaks, or None."""
    if _EXTENSION.search(src):
        return "uses extension"
    if _PASTING.search(src):
        return "token pasting"
    if _LOOP_MACRO.search(src):
        return "loop in macro"
    if _RESERVED.search(src):
        return "reserved identifier"
    return loop_reason(src)


def shader_reason(body: str) -> str | None:
    """Every static rule, without compiling; None when the body passes.

    The seed's table holds for two views, row by row in the seed's order: the raw body
    (as the seed words it, comments included: its `no main()` is the literal `void main(`)
    and the body as the compiler reads it after preprocessing. Then the hardening rules
    read the normalized text (every branch, `#define` constants substituted), then the
    preprocessing itself may refuse, then the loop rules read the preprocessed body.
    """
    try:
        compiled: str | None = preprocess(body)
        refused = None
    except PreprocessError as exc:
        compiled, refused = None, str(exc)
    views = (body,) if compiled is None else (body, compiled)
    if SEED_MAIN not in body:
        return "no main()"
    for reason, broken in SEED_RULES:
        if any(broken(view) for view in views):
            return reason
    text = normalize(body)
    reason = text_reason(text)
    if reason is not None or compiled is None:
        return reason or refused
    return None if compiled == text else loop_reason(compiled)


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
