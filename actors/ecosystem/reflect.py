"""The end of a run: the score broken down by fitness weight, and a reflection made only of
facts the engine derived from the frames (peaks, crashes, extinctions, which decisions
took effect and what followed them). A model may phrase these facts later (an effect of
the run's actor); the facts themselves never come from a model.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from actors.ecosystem.schedule import CRASH
from actors.ecosystem.setup import FITNESS_KEYS

ENGINE_SOURCE = "engine"
AFTER = 6  # generations over which a decision's swing is measured
MATTERS = 0.1  # a swing of at least 10% of total biomass counts as mattering
MAX_CRASHES = 5  # the deepest ones


def breakdown(frame: dict[str, Any], weights: dict[str, float]) -> dict[str, Any]:
    """`{"total", "components": {name: {"weight", "value", "points"}}}` of a frame."""
    score = frame["score"]
    return {"total": score["total"],
            "components": {k: {"weight": weights[k], "value": score[k],
                               "points": round(weights[k] * score[k], 6)}
                           for k in FITNESS_KEYS}}


def _total(frame: dict[str, Any]) -> float:
    return sum(frame["biomass"].values())


def reflection(frames: Sequence[dict[str, Any]], decisions: Sequence[dict[str, Any]],
               vias: Sequence[str]) -> dict[str, Any]:
    """Engine-derived facts about a finished run (`vias[k]`: how decision k came, patch or
    schedule).

    - peaks: each species' highest biomass and its generation
    - crashes: the deepest generations whose total biomass fell below 0.9x the one before
      (the seed's `population_crash` rule)
    - extinctions: species and generation
    - decisions: each one's outcomes and, for those that changed the graph, the swing of
      total biomass over the 6 generations after it first fired; `mattered` when that
      swing is at least 10% (what followed, not a counterfactual)
    """
    ids = list(frames[0]["biomass"])
    peaks = []
    for sid in ids:
        best = max(frames, key=lambda f: f["biomass"][sid])
        peaks.append({"species": sid, "generation": best["generation"],
                      "biomass": best["biomass"][sid]})
    falls = []
    for before, now in itertools.pairwise(frames):
        if _total(now) < CRASH * _total(before):
            falls.append({"generation": now["generation"], "from": round(_total(before), 6),
                          "to": round(_total(now), 6)})
    falls.sort(key=lambda c: c["to"] / c["from"] if c["from"] else 0.0)
    extinctions = [{"species": e["species"], "generation": e["generation"]}
                   for f in frames for e in f["events"] if e["outcome"] == "extinct"]
    outcomes: dict[int, list[dict[str, Any]]] = {k: [] for k in range(len(decisions))}
    for f in frames:
        for e in f["events"]:
            if "decision" in e:
                outcomes[e["decision"]].append({"generation": e["generation"],
                                                "outcome": e["outcome"]})
    report = []
    for k, decision in enumerate(decisions):
        item: dict[str, Any] = {"decision": k, "via": vias[k], "accepted": decision["generation"],
                                "patch": decision["change"]["patch"], "outcomes": outcomes[k],
                                "mattered": False}
        fired = next((o["generation"] for o in outcomes[k] if o["outcome"] == "applied"), None)
        if fired is not None:
            before = _total(frames[fired - 1])
            after = _total(frames[min(fired + AFTER, len(frames) - 1)])
            swing = (after - before) / before if before > 0.0 else 0.0
            item.update(swing=round(swing, 6), mattered=abs(swing) >= MATTERS)
        report.append(item)
    last = frames[-1]
    return {"source": ENGINE_SOURCE, "generations": last["generation"],
            "alive": [sid for sid in ids if last["alive"][sid]],
            "final_biomass": last["biomass"], "peaks": peaks, "crashes": falls[:MAX_CRASHES],
            "extinctions": extinctions, "decisions": report}
