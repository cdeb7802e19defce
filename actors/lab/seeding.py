"""Seeded generators, one independent stream per purpose (SeedSequence spawn keys)."""

from __future__ import annotations

import numpy as np

# One spawn-key root per purpose, so a shader stream never shares draws with a panel stream.
PURPOSES = {"shader": 1, "panel": 2, "crossover": 3, "mutation": 4, "directive": 5, "dealing": 6,
            "birth": 7, "loop": 8}


def rng_for(seed: int, purpose: str, index: int = 0) -> np.random.Generator:
    """The generator for draw `index` of `purpose` under `seed`.

    The same inputs always give the same stream; different purposes never share draws.
    """
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(PURPOSES[purpose], index)))
