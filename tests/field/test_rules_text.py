"""Every number in the rules text is one of the code's constants."""

from __future__ import annotations

import inspect
import re

from actors.field import health
from actors.field.events import GameRules
from actors.field.geometry import G_MAX, M_ABOVE, M_BOUNDS, m_for
from actors.field.observe import OBSERVE_RADIUS
from actors.field.propagate import propagate
from actors.field.rules_text import MCP_RULES_TEXT, RULES_TEXT
from tests.conftest import shared_path


def _pct(x: float) -> str:
    return f"{x * 100:g}%"


# (pattern, the values its groups must read); together they must account for every number.
CHECKS = [
    (r"has (\d+)\.\.m solutions", [2]),  # at least two solutions: the lower end of 2..m
    (r"\((\d+) up to (\d+) cells, (\d+) up to (\d+), (\d+) above\)",
     [M_BOUNDS[0][1], M_BOUNDS[0][0], M_BOUNDS[1][1], M_BOUNDS[1][0], M_ABOVE]),
    (r"can keep (\d+) or more solutions", [2]),
    (r"everything within (\d+) cells of it", [OBSERVE_RADIUS]),
    (r"your last ([\d,]+) committed cells", [f"{health.HEALTH_WINDOW:,}"]),
    (r"under ([\d.]+%) healthy", [_pct(health.HEALTH_WARN)]),
    (r"([\d.]+%) to ([\d.]+%) warning", [_pct(health.HEALTH_WARN), _pct(health.HEALTH_DEATH)]),
    (r"([\d.]+%) and above, once at least (\d+) cells",
     [_pct(health.HEALTH_DEATH), health.HEALTH_MIN]),
    (r"configured depth, default (\d+)", [GameRules().depth]),
    (r"G up to (\d+)", [G_MAX]),
]


def test_each_number_matches_its_constant() -> None:
    for pattern, expect in CHECKS:
        found = re.findall(pattern, RULES_TEXT)
        assert len(found) == 1, f"{pattern!r} occurs {len(found)} times"
        got = found[0] if isinstance(found[0], tuple) else (found[0],)
        assert list(got) == [str(v) for v in expect], pattern


def test_m_bounds_are_the_ones_the_generator_uses() -> None:
    # the text's "2 up to 64 cells, 3 up to 196, 4 above" read through m_for itself
    assert [m_for(1), m_for(64), m_for(65), m_for(196), m_for(197), m_for(10_000)] == [
        2, 2, 3, 3, 4, 4]


def test_default_depth_is_the_propagation_default() -> None:
    assert GameRules().depth == inspect.signature(propagate).parameters["depth"].default


def test_no_number_goes_unchecked() -> None:
    # numbers inside identifiers (x0, y0), digits of 0s/1s and len/2 are rule words, not figures
    text = re.sub(r"\b[xy]0\b|\b[01]s\b|len/2", "", RULES_TEXT)
    numbers = re.findall(r"\d[\d,.]*\d%?|\d%?", text)
    numbers = [n.rstrip(",.") for n in numbers]
    checked = [str(v) for _, expect in CHECKS for v in expect]
    assert sorted(numbers) == sorted(checked)


def _seed_rules_text() -> str:
    """The seed's RULES_TEXT as its diff leaves it (the `70+` line of the rules constant)."""
    seed = shared_path("seeds", "002_f01888e294bc5fcb.txt").read_text()
    start = seed.index("70+ `Rules of a mosaic.") + len("70+ `")
    return seed[start:seed.index("`;", start)]


def test_every_word_but_the_transport_paragraph_is_the_seeds() -> None:
    seed = _seed_rules_text()
    for text in (seed, RULES_TEXT):
        assert text.count(" TRANSPORT: ") == 1 and text.count(" GROWING FIELDS AND FOG: ") == 1
    before, after = (RULES_TEXT.split(" TRANSPORT: ")[0],
                     RULES_TEXT.split(" GROWING FIELDS AND FOG: ")[1])
    assert before == seed.split(" TRANSPORT: ")[0]
    assert after == seed.split(" GROWING FIELDS AND FOG: ")[1]
    transport = RULES_TEXT.split(" TRANSPORT: ")[1].split(" GROWING FIELDS AND FOG: ")[0]
    assert "Mcp-Session-Id" not in transport and "/ws" in transport  # this project's transport


def test_the_mcp_text_is_the_seeds_to_the_letter() -> None:
    assert MCP_RULES_TEXT == _seed_rules_text()
