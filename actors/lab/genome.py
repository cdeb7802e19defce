"""Shader organisms without a model: a grammar of building blocks, valid by construction.

A `ShaderGenome` names one choice per block (coordinate warp, fold, field, palette,
motion, audio response) and `render_shader` writes the GLSL ES 3.00 body that the
contract's prelude is prepended to. Construction keeps the contract's clauses:
motion is integer cycles of the 20-second `u_time` loop (seamless, at most 0.2 Hz, so
no whole-frame flash); every field varies across the frame; `u_audio` only adds
spatial detail, so silence leaves the organism fully alive; loops have constant
bounds of at most 6, a worst nested cost of 9 (the 3x3 cell search) and at most 21
iterations per pixel in all (two fbm calls of the flow warp and the cell search).
"""

from __future__ import annotations

import attrs
import numpy as np

from actors.lab.gene_groups import cross_groups, draw_groups

WARPS = ("none", "rotate", "swirl", "zoom", "ripple", "flow")
FOLDS = ("none", "mirror", "polar", "kaleido")
FIELDS = ("fbm", "circles", "boxes", "rings", "waves", "cells")
# Gene groups: crossover takes a whole group from one parent, mutation redraws whole groups.
_GROUPS = {
    "warp": ("warp", "warp_amount"),
    "fold": ("fold", "segments"),
    "field": ("field", "octaves", "scale"),
    "palette": ("palette",),
    "motion": ("cycles", "drift"),
    "audio": ("audio",),
}


@attrs.frozen
class ShaderGenome:
    """One shader organism's genes; every value is inside the bounds `random_genome` draws from."""

    warp: str
    warp_amount: float  # 0.2 .. 1.5
    fold: str
    segments: int  # 3 .. 9 (polar and kaleido folds)
    field: str
    octaves: int  # 2 .. 6 (fbm loop bound)
    scale: float  # 1.5 .. 6.0
    palette: tuple[float, ...]  # 12 floats: offset, amplitude, frequency, phase (vec3 each)
    cycles: int  # 1 .. 4 cycles of the 20 s loop
    drift: float  # 0.2 .. 1.2 radius of the circular drift
    audio: float  # 0 (deaf) or 0.3 .. 1.0


def _palette(rng: np.random.Generator) -> tuple[float, ...]:
    offset = rng.uniform(0.35, 0.6, 3)
    amplitude = rng.uniform(0.3, 0.5, 3)  # at least 0.3: never a near-uniform frame
    frequency = rng.uniform(0.5, 1.5, 3)
    phase = rng.uniform(0.0, 1.0, 3)
    return tuple(round(float(x), 3) for x in np.concatenate([offset, amplitude, frequency, phase]))


def _draw_group(group: str, rng: np.random.Generator) -> dict:
    """Fresh values for one gene group."""
    if group == "warp":
        return {
            "warp": str(rng.choice(WARPS)),
            "warp_amount": round(float(rng.uniform(0.2, 1.5)), 3),
        }
    if group == "fold":
        return {"fold": str(rng.choice(FOLDS)), "segments": int(rng.integers(3, 10))}
    if group == "field":
        return {
            "field": str(rng.choice(FIELDS)),
            "octaves": int(rng.integers(2, 7)),
            "scale": round(float(rng.uniform(1.5, 6.0)), 3),
        }
    if group == "palette":
        return {"palette": _palette(rng)}
    if group == "motion":
        return {"cycles": int(rng.integers(1, 5)), "drift": round(float(rng.uniform(0.2, 1.2)), 3)}
    deaf = rng.random() < 0.4
    return {"audio": 0.0 if deaf else round(float(rng.uniform(0.3, 1.0)), 3)}


def random_genome(rng: np.random.Generator) -> ShaderGenome:
    """A fresh genome drawn from the grammar."""
    return ShaderGenome(**draw_groups(_GROUPS, _draw_group, rng))


def crossover(a: ShaderGenome, b: ShaderGenome, rng: np.random.Generator) -> ShaderGenome:
    """A child taking each whole gene group from one parent or the other."""
    return ShaderGenome(**cross_groups(a, b, _GROUPS, rng))


def mutate(g: ShaderGenome, rng: np.random.Generator) -> ShaderGenome:
    """A copy with one or two gene groups redrawn."""
    names = list(_GROUPS)
    picked = rng.choice(len(names), size=int(rng.integers(1, 3)), replace=False)
    changes: dict = {}
    for i in sorted(picked):
        changes.update(_draw_group(names[i], rng))
    return attrs.evolve(g, **changes)


def _f(x: float) -> str:
    """A GLSL float literal (always with a decimal point: strict typing)."""
    return f"{x:.3f}"


def _vec3(xs) -> str:
    return f"vec3({', '.join(_f(x) for x in xs)})"


_WARP_CODE = {
    "none": "return p;",
    "rotate": "return rot(p, ph * {k});",
    "swirl": "return rot(p, {amt} * length(p) + ph * {k});",
    "zoom": "return p * (1.0 + 0.25 * sin(ph * {k}));",
    "ripple": (
        "return p + 0.2 * {amt} * vec2(sin(p.y * 3.0 + ph * {k}), cos(p.x * 3.0 + ph * {k}));"
    ),
    "flow": "return p + {amt} * vec2(fbm(p + drift(ph)), fbm(p - drift(ph) + 4.1));",
}
_FOLD_CODE = {
    "none": "return p;",
    "mirror": "return abs(p);",
    "polar": "return vec2(atan(p.y, p.x) * {seg} / TAU, length(p));",
    "kaleido": (
        "float s = TAU / {seg};\n    float a = mod(atan(p.y, p.x), s);\n"
        "    a = abs(a - 0.5 * s);\n    return length(p) * vec2(cos(a), sin(a));"
    ),
}
_FIELD_CODE = {
    "fbm": "return fbm(p + drift(ph));",
    "circles": (
        "vec2 q = fract(p + drift(ph)) - 0.5;\n"
        "    float d = length(q) - 0.25 - 0.1 * sin(ph * {k} + p.x);\n"
        "    return 0.6 * smoothstep(0.04, -0.04, d) + 0.4 * fbm(p);"
    ),
    "boxes": (
        "vec2 q = abs(fract(rot(p, ph) + drift(ph)) - 0.5) - vec2(0.22, 0.12);\n"
        "    float d = length(max(q, 0.0)) + min(max(q.x, q.y), 0.0);\n"
        "    return 0.6 * smoothstep(0.03, -0.03, d) + 0.4 * fbm(p * 0.5);"
    ),
    "rings": "return 0.5 + 0.35 * sin(length(p) * 6.0 - ph * {k}) + 0.3 * fbm(p) - 0.15;",
    "waves": "return 0.5 + 0.4 * sin(p.x * 2.0 + sin(p.y * 1.7 + ph * {k}) * 2.0 + fbm(p));",
    "cells": (
        "vec2 cell = floor(p);\n    vec2 f = fract(p);\n    float best = 8.0;\n"
        "    for (int j = -1; j <= 1; j++) {{\n"
        "        for (int i = -1; i <= 1; i++) {{\n"
        "            vec2 o = vec2(float(i), float(j));\n"
        "            vec2 h = vec2(hash(cell + o), hash(cell + o + 7.3));\n"
        "            h = 0.5 + 0.4 * sin(ph * {k} + TAU * h);\n"
        "            best = min(best, length(o + h - f));\n"
        "        }}\n    }}\n    return best;"
    ),
}


def render_shader(g: ShaderGenome) -> str:
    """The GLSL ES 3.00 body of genome `g` (the prelude is not included)."""
    fmt = {"k": _f(float(g.cycles)), "amt": _f(g.warp_amount), "seg": _f(float(g.segments))}
    pal = g.palette
    audio_scale = f"\n    p *= 1.0 + {_f(0.15 * g.audio)} * u_audio.y;" if g.audio else ""
    audio_detail = (
        f"\n    v += {_f(0.1 * g.audio)} * u_audio.w * sin(length(p) * 9.0 - ph * 8.0);"
        if g.audio
        else ""
    )
    return f"""// organism: {g.warp} warp, {g.fold} fold, {g.field} field
const float TAU = 6.28318;
vec2 rot(vec2 p, float a) {{
    float c = cos(a);
    float s = sin(a);
    return mat2(c, s, -s, c) * p;
}}
float hash(vec2 p) {{
    return fract(sin(dot(p, vec2(127.1, 311.7))) * 43758.5453);
}}
float noise(vec2 p) {{
    vec2 i = floor(p);
    vec2 f = fract(p);
    vec2 u = f * f * (3.0 - 2.0 * f);
    return mix(mix(hash(i), hash(i + vec2(1.0, 0.0)), u.x),
               mix(hash(i + vec2(0.0, 1.0)), hash(i + vec2(1.0, 1.0)), u.x), u.y);
}}
float fbm(vec2 p) {{
    float v = 0.0;
    float a = 0.5;
    for (int i = 0; i < {g.octaves}; i++) {{
        v += a * noise(p);
        p = rot(p, 0.5) * 2.03 + vec2(1.7, 9.2);
        a *= 0.5;
    }}
    return v;
}}
vec2 drift(float ph) {{
    return {_f(g.drift)} * vec2(cos(ph * {fmt["k"]}), sin(ph * {fmt["k"]}));
}}
vec2 warp(vec2 p, float ph) {{
    {_WARP_CODE[g.warp].format(**fmt)}
}}
vec2 fold(vec2 p) {{
    {_FOLD_CODE[g.fold].format(**fmt)}
}}
float field(vec2 p, float ph) {{
    {_FIELD_CODE[g.field].format(**fmt)}
}}
vec3 palette(float t) {{
    vec3 offset = {_vec3(pal[0:3])};
    vec3 amplitude = {_vec3(pal[3:6])};
    return offset + amplitude * cos(TAU * ({_vec3(pal[6:9])} * t + {_vec3(pal[9:12])}));
}}
void main() {{
    vec2 uv = (gl_FragCoord.xy - 0.5 * u_res) / min(u_res.x, u_res.y);
    // one phase per 20-second loop of u_time, so motion is seamless and slow
    float ph = u_time * TAU / 20.0;
    vec2 p = fold(warp(uv * {_f(g.scale)}, ph));{audio_scale}
    float v = field(p, ph);{audio_detail}
    vec3 col = palette(v + 0.15 * sin(ph));
    col *= 0.8 + 0.2 * smoothstep(1.4, 0.2, length(uv));
    fragColor = vec4(col, 1.0);
}}
"""
