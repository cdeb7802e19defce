"""The five fitness components, computed from each generation's metrics and weighted.

With T_t the total biomass of generation t, S the species count and p_i the biomass
shares of the living species:

- survive   = living species / S
- replicate = min(1, T_t / (2 T_0))                 (doubling the founders scores 1)
- cooperate = Pielou evenness -sum p_i ln p_i / ln S (0 when one species holds all)
- explore   = share of cells whose total density exceeds `sim.OCCUPIED`
- adapt     = max(0, 1 - 2 |T_t - T_{t-1}| / T_{t-1}) (steadiness under change)

`total` is the config-weighted sum. Logarithms run on scalars through `math`.
"""

from __future__ import annotations

import math

from actors.ecosystem.setup import FITNESS_KEYS
from actors.ecosystem.sim import Metrics

ADAPT_SENSITIVITY = 2.0


def components(now: Metrics, previous: Metrics, founding: Metrics) -> dict[str, float]:
    """The five unweighted components, each within 0..1."""
    species = len(now.totals)
    total, before, start = sum(now.totals), sum(previous.totals), sum(founding.totals)
    living = [t for t, alive in zip(now.totals, now.alive, strict=True) if alive and t > 0.0]
    evenness = 0.0
    if len(living) > 1:
        shares = [t / sum(living) for t in living]
        evenness = -math.fsum(p * math.log(p) for p in shares) / math.log(species)
    change = abs(total - before) / before if before > 0.0 else 1.0
    return {
        "survive": sum(now.alive) / species,
        "replicate": min(1.0, total / (2.0 * start)) if start > 0.0 else 0.0,
        "cooperate": min(1.0, evenness),
        "explore": now.occupied,
        "adapt": max(0.0, 1.0 - ADAPT_SENSITIVITY * change),
    }


def score(now: Metrics, previous: Metrics, founding: Metrics,
          weights: dict[str, float]) -> dict[str, float]:
    """Components plus their weighted `total`, rounded to 6 digits."""
    parts = components(now, previous, founding)
    parts["total"] = math.fsum(weights[k] * parts[k] for k in FITNESS_KEYS)
    return {key: round(value, 6) for key, value in parts.items()}
