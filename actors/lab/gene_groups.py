"""Gene groups, shared by the shader and the panel genome: genes that only make sense
together (a fold and its segment count, a hue and its accents) are drawn, inherited and
redrawn as one group, so a child never holds half of one parent's idea."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

Groups = Mapping[str, tuple[str, ...]]


def draw_groups(
    groups: Groups, draw: Callable[[str, np.random.Generator], dict], rng: np.random.Generator
) -> dict[str, Any]:
    """Fresh values for every group, drawn in the groups' order."""
    genes: dict[str, Any] = {}
    for group in groups:
        genes.update(draw(group, rng))
    return genes


def cross_groups(a: Any, b: Any, groups: Groups, rng: np.random.Generator) -> dict[str, Any]:
    """Every group's genes taken whole from parent `a` or parent `b` (one draw a group)."""
    genes: dict[str, Any] = {}
    for fields in groups.values():
        source = a if rng.random() < 0.5 else b
        genes.update({k: getattr(source, k) for k in fields})
    return genes
