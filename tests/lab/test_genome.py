"""Organisms without a model: generated shaders and panels are valid; operators are seeded."""

from __future__ import annotations

import functools
import html
import os
import re
from concurrent.futures import ThreadPoolExecutor

import attrs
import pytest

from actors.lab.breed import child, generate, genome_dict, random_for, render
from actors.lab.contract import PANEL_DATA
from actors.lab.genome import ShaderGenome, crossover, mutate, random_genome, render_shader
from actors.lab.panel_genome import crossover_panel, mutate_panel, random_panel_genome
from actors.lab.seeding import rng_for
from actors.lab.shader_loops import find_loops, loop_cost
from actors.lab.validate_shader import normalize
from actors.lab.validation import static_reason, validate


def test_1000_generated_shaders_pass_validate() -> None:
    """The full gate, compile step included, on every one of the 1,000 (the compiles are
    subprocesses, so a thread per core overlaps them)."""
    codes = [code for _, code in generate("shader", 2026, 1000)]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        reasons = list(pool.map(functools.partial(validate, "shader"), codes))
    assert {i: r for i, r in enumerate(reasons) if r} == {}


def test_generated_shaders_keep_the_contract_clauses() -> None:
    for genome, code in generate("shader", 5, 200):
        src = normalize(code)
        assert "u_time" in src  # animated
        # at most the flow warp's two fbm calls (2 x 6) and the 3 x 3 cell search
        assert loop_cost(src, find_loops(src)) <= 21
        assert len(code.splitlines()) < 140
        # audio is only ever an extra term: with u_audio zero the organism is unchanged
        assert ("u_audio" in src) == (genome.audio > 0)
        assert all(
            f"u_audio.{c}" in ("u_audio.y", "u_audio.w") for c in re.findall(r"u_audio\.(\w)", src)
        )


def test_every_grammar_block_is_reachable() -> None:
    seen = {"warp": set(), "fold": set(), "field": set()}
    for genome, _ in generate("shader", 11, 300):
        for k, values in seen.items():
            values.add(getattr(genome, k))
    assert {k: len(v) for k, v in seen.items()} == {"warp": 6, "fold": 4, "field": 6}


def test_generation_is_deterministic_per_seed() -> None:
    first = [code for _, code in generate("shader", 9, 5)]
    assert first == [code for _, code in generate("shader", 9, 5)]
    assert first != [code for _, code in generate("shader", 10, 5)]


def test_shader_crossover_and_mutation_are_deterministic_and_valid() -> None:
    parents = [random_genome(rng_for(3, "shader", i)) for i in range(20)]
    for i in range(0, 20, 2):
        a, b = parents[i], parents[i + 1]
        kid = crossover(a, b, rng_for(3, "crossover", i))
        assert kid == crossover(a, b, rng_for(3, "crossover", i))
        for field in attrs.fields(ShaderGenome):
            assert getattr(kid, field.name) in (getattr(a, field.name), getattr(b, field.name))
        mutant = mutate(kid, rng_for(3, "mutation", i))
        assert mutant == mutate(kid, rng_for(3, "mutation", i))
        assert mutant != kid
        for g in (kid, mutant):
            assert validate("shader", render_shader(g)) is None


def test_children_of_many_pairs_pass_static_rules() -> None:
    for i in range(100):
        a = random_for("shader", rng_for(4, "shader", 2 * i))
        b = random_for("shader", rng_for(4, "shader", 2 * i + 1))
        assert static_reason("shader", render(child(a, b, rng_for(4, "crossover", i)))) is None


def _data_block_texts() -> list[str]:
    """Every field of the fixed data block, as text a panel must show."""
    s = PANEL_DATA.strain
    texts = [PANEL_DATA.name, PANEL_DATA.action, PANEL_DATA.warning, s.name, s.generation, s.value]
    for r in PANEL_DATA.readings:
        texts += [r.label, r.value, *(x for x in (r.delta, r.unit, r.state) if x is not None)]
    return texts


def test_200_generated_panels_pass_and_show_the_data_block() -> None:
    expected = _data_block_texts()
    # the only numbers a panel may show are the data block's own
    allowed = set(re.findall(r"\d[\d,.]*", " ".join(expected)))
    for genome, code in generate("panel", 2026, 200):
        assert validate("panel", code) is None, genome
        markup = html.unescape(re.sub(r"<[^>]+>", " ", code.split("</style>", 1)[1]))
        assert [text for text in expected if text not in markup] == [], genome
        assert set(re.findall(r"\d[\d,.]*", markup)) <= allowed, genome


def test_panel_operators_are_deterministic_and_valid() -> None:
    for i in range(10):
        a = random_panel_genome(rng_for(8, "panel", 2 * i))
        b = random_panel_genome(rng_for(8, "panel", 2 * i + 1))
        kid = crossover_panel(a, b, rng_for(8, "crossover", i))
        assert kid == crossover_panel(a, b, rng_for(8, "crossover", i))
        mutant = mutate_panel(kid, rng_for(8, "mutation", i))
        assert mutant == mutate_panel(kid, rng_for(8, "mutation", i))
        for g in (kid, mutant):
            assert validate("panel", render(g)) is None


def test_mixed_track_parents_are_refused() -> None:
    with pytest.raises(TypeError, match=r"^parents must be genomes of one track$"):
        child(
            random_for("shader", rng_for(1, "shader")),
            random_for("panel", rng_for(1, "panel")),
            rng_for(1, "crossover"),
        )


def test_genome_dict_is_json_ready() -> None:
    d = genome_dict(random_for("panel", rng_for(1, "panel")))
    assert d["kind"] == "PanelGenome" and isinstance(d["hue"], int)
