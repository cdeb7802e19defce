"""The contract constants: prelude, clauses and the fixed panel data block."""

from __future__ import annotations

import pytest

from actors.lab.contract import (
    PANEL_CLAUSES,
    PANEL_DATA,
    SHADER_CLAUSES,
    SHADER_PRELUDE,
    SHADER_UNIFORMS,
    contract_text,
)


def test_shader_prelude_is_exactly_the_seed_one() -> None:
    assert SHADER_PRELUDE.splitlines() == [
        "#version 300 es",
        "precision highp float;",
        "out vec4 fragColor;",
        "uniform float u_time;",
        "uniform vec2 u_res;",
        "uniform vec4 u_audio;",
    ]


def test_the_prompt_says_what_each_uniform_carries_in_the_seeds_words() -> None:
    assert [u[:2] for u in SHADER_UNIFORMS] == [("u_time", "float"), ("u_res", "vec2"),
                                                ("u_audio", "vec4")]
    text = contract_text("shader")
    assert text.index(SHADER_PRELUDE) < text.index("Uniforms:\n") < text.index("Rules:\n")
    for line in (
        "- u_time (float): Seconds, wrapped to a 20-second loop by both renderers.",
        "- u_res (vec2): The canvas backing-store size in pixels, measured from the live element.",
        ("- u_audio (vec4): Music levels in 0 to 1: x overall, y bass, z mid, w high. All zero "
         "when silent."),
    ):
        assert line + "\n" in text


def test_clauses_carry_the_seed_limits() -> None:
    shader = " ".join(SHADER_CLAUSES)
    for phrase in (
        "TITLE:",
        "void main()",
        "no #version",
        "no extensions",
        "GLSL ES 3.00",
        "four times per second",
        "vec4(0.0)",
        "Under 140 lines",
        "64 or less",
    ):
        assert phrase in shader
    panel = " ".join(PANEL_CLAUSES)
    for phrase in (
        "<style>",
        "No <html>, <head> or <body>",
        "No script",
        "generic font",
        "root element",
        "Under 160 lines",
        "520 by 400",
    ):
        assert phrase in panel


def test_panel_data_block_has_every_field() -> None:
    assert [r.label for r in PANEL_DATA.readings] == [
        "population",
        "biomass",
        "pH",
        "temperature",
        "divergence",
    ]
    assert any(r.delta for r in PANEL_DATA.readings)
    assert any(r.unit for r in PANEL_DATA.readings)
    assert any(r.state for r in PANEL_DATA.readings)
    assert PANEL_DATA.name and PANEL_DATA.action and PANEL_DATA.warning
    s = PANEL_DATA.strain
    assert s.name and s.generation and s.value


@pytest.mark.parametrize("track", ["shader", "panel"])
def test_contract_text_lists_every_clause(track: str) -> None:
    text = contract_text(track)
    for clause in SHADER_CLAUSES if track == "shader" else PANEL_CLAUSES:
        assert f"- {clause}" in text
    if track == "shader":
        assert SHADER_PRELUDE in text
    else:
        assert PANEL_DATA.warning in text and "Rorschach-9" in text
