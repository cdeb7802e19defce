"""Model-free breeding by track: draw, cross and mutate genomes, render them to code."""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import numpy as np

from actors.lab.genome import ShaderGenome, crossover, mutate, random_genome, render_shader
from actors.lab.panel_genome import (
    PanelGenome,
    crossover_panel,
    mutate_panel,
    random_panel_genome,
    render_panel,
)
from actors.lab.seeding import rng_for

Genome = ShaderGenome | PanelGenome


def random_for(track: str, rng: np.random.Generator) -> Genome:
    """A fresh genome of `track`."""
    return random_genome(rng) if track == "shader" else random_panel_genome(rng)


def render(genome: Genome) -> str:
    """The organism source of a genome of either track."""
    return render_shader(genome) if isinstance(genome, ShaderGenome) else render_panel(genome)


def child(a: Genome, b: Genome, rng: np.random.Generator) -> Genome:
    """Crossover of two same-track parents followed by mutation."""
    if isinstance(a, ShaderGenome) and isinstance(b, ShaderGenome):
        return mutate(crossover(a, b, rng), rng)
    if isinstance(a, PanelGenome) and isinstance(b, PanelGenome):
        return mutate_panel(crossover_panel(a, b, rng), rng)
    raise TypeError("parents must be genomes of one track")


def generate(track: str, seed: int, count: int) -> Iterator[tuple[Genome, str]]:
    """`count` organisms of `track`: (genome, source). Organism i depends only on (seed, i)."""
    for i in range(count):
        genome = random_for(track, rng_for(seed, track, i))
        yield genome, render(genome)


def genome_dict(genome: Genome) -> dict:
    """A JSON-ready dict of a genome (kind plus genes)."""
    return {"kind": type(genome).__name__, **attrs.asdict(genome)}
