"""The contract: the fixed technical specification every organism must satisfy.

Module constants, never genes: nothing the lab evolves can rewrite them. The birth
prompt is `contract_text(track)` followed by the aesthetic directive.
"""

from __future__ import annotations

from typing import Final

import attrs

TRACKS: Final = ("shader", "panel")

# Both tracks: the character bounds that static validation enforces.
MIN_CHARS: Final = 60
MAX_CHARS: Final = 24_000

# Shader loops: the contract's per-loop bound and the cost ceiling of nested loops
# (two nested 64-step loops already take seconds per frame in software WebGL).
MAX_LOOP_BOUND: Final = 64
MAX_LOOP_COST: Final = 4_096

SHADER_PRELUDE: Final = (
    "#version 300 es\n"
    "precision highp float;\n"
    "out vec4 fragColor;\n"
    "uniform float u_time;\n"
    "uniform vec2 u_res;\n"
    "uniform vec4 u_audio;\n"
)

# What each prelude uniform carries, in the seed's words, stated to the model after the
# prelude (the prelude itself stays bare: the browser compiles it as it stands).
SHADER_UNIFORMS: Final = (
    ("u_time", "float", "Seconds, wrapped to a 20-second loop by both renderers."),
    ("u_res", "vec2", "The canvas backing-store size in pixels, measured from the live element."),
    ("u_audio", "vec4",
     "Music levels in 0 to 1: x overall, y bass, z mid, w high. All zero when silent."),
)

SHADER_CLAUSES: Final = (
    (
        "One fenced glsl block and nothing else, except one optional TITLE: line of at most "
        "four words before it."
    ),
    "void main() is defined and writes to fragColor.",
    "No other uniforms, no textures, no samplers, no #version, no extensions.",
    "GLSL ES 3.00 only, with strict integer and float typing.",
    "Continuous animation off u_time, never resolving to a flat or near-uniform frame.",
    (
        "No whole-frame brightness flash, pulse or inversion faster than four times per second. "
        "Fast flicker confined to a small region is permitted."
    ),
    "u_audio is optional input, and the shader must remain fully alive when it is vec4(0.0).",
    "Under 140 lines, no infinite loops, every loop bounded by a constant of 64 or less.",
)

PANEL_CLAUSES: Final = (
    (
        "One fenced html block containing a single <style> element plus markup, and nothing "
        "else, except one optional TITLE: line of at most four words before it."
    ),
    "No <html>, <head> or <body>.",
    "No script, no network requests, no external fonts or images.",
    "System or generic font families only.",
    "Every selector scoped under a root element the organism creates.",
    "Under 160 lines.",
    (
        "The frame is fixed at 520 by 400 pixels on a dark ground: fit it without scrolling and "
        "stay legible without hover."
    ),
    "Display every field of the data block below, with no invented numbers.",
)


@attrs.frozen
class Reading:
    """One labelled reading of the panel data block; delta, unit and state are optional."""

    label: str
    value: str
    delta: str | None = None
    unit: str | None = None
    state: str | None = None


@attrs.frozen
class Strain:
    """The strain block: name, generation and value."""

    name: str
    generation: str
    value: str


@attrs.frozen
class PanelData:
    """The one identical data block every panel must display, which makes panels comparable."""

    name: str
    readings: tuple[Reading, ...]
    strain: Strain
    action: str
    warning: str


PANEL_DATA: Final = PanelData(
    name="Culture Dish 7",
    readings=(
        Reading("population", "48,210", delta="+3.2%"),
        Reading("biomass", "12.7", unit="g"),
        Reading("pH", "6.8", state="stable"),
        Reading("temperature", "37.2", unit="°C", delta="-0.4"),
        Reading("divergence", "0.41", state="rising"),
    ),
    strain=Strain(name="Rorschach-9", generation="142", value="0.87"),
    action="Isolate strain",
    warning="Contamination risk above threshold in sector 4",
)


def _panel_data_text(data: PanelData) -> str:
    """The data block as the plain lines the model is shown."""
    lines = [f"Panel name: {data.name}", "Readings:"]
    for r in data.readings:
        extras = [
            f"{k} {v}"
            for k, v in (("delta", r.delta), ("unit", r.unit), ("state", r.state))
            if v is not None
        ]
        lines.append(f"- {r.label}: {r.value}" + (f" ({', '.join(extras)})" if extras else ""))
    s = data.strain
    lines += [
        f"Strain: name {s.name}, generation {s.generation}, value {s.value}",
        f"Action label: {data.action}",
        f"Warning line: {data.warning}",
    ]
    return "\n".join(lines)


def contract_text(track: str) -> str:
    """The contract string for `track` as it opens every birth prompt."""
    if track == "shader":
        head = (
            "You write one GLSL ES 3.00 fragment shader body. This prelude is prepended "
            "at compile time; never repeat any of it:\n" + SHADER_PRELUDE + "\nUniforms:\n"
            + "".join(f"- {name} ({kind}): {carries}\n" for name, kind, carries in SHADER_UNIFORMS)
        )
        clauses = SHADER_CLAUSES
        tail = ""
    elif track == "panel":
        head = "You write one HTML/CSS status panel."
        clauses = PANEL_CLAUSES
        tail = "\nData block:\n" + _panel_data_text(PANEL_DATA)
    else:
        raise ValueError(f"unknown track {track!r}; expected one of {TRACKS}")
    return head + "\nRules:\n" + "\n".join(f"- {c}" for c in clauses) + tail + "\n"
