"""Recipe for the replay corpus: 20 runs with patches and scheduled changes of every kind.

`replay_records.json` was written before model versions: its records carry no `model` and
are version 1, the corpus that keeps that version replaying. The recipe now makes records
of the current version (`rates.MODEL`), so `python -m tests.ecosystem.records`, which
rewrites the file, would replace that corpus: keep it, and pin a new version elsewhere.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from actors.ecosystem.keywords import deterministic_setup
from actors.ecosystem.run import simulate
from actors.ecosystem.schedule import ACTIVATIONS, DURATIONS, TRANSITIONS
from actors.ecosystem.setup import default_config

FIXTURE = Path(__file__).with_name("replay_records.json")
SIZE, GENERATIONS = 32, 90
ANSWERS = [
    {"world": "A lush pond with algae, snails and fish", "threat": "A pike and poison",
     "reward": "coexist and grow"},
    {"world": "grass, rabbits and deer on a meadow", "threat": "wolves hunt in packs",
     "reward": "survive"},
    {"world": "a barren desert with moss and beetles", "threat": "toxic heat and vultures",
     "reward": "explore"},
    {"world": "a forest with bears, deer and ferns", "threat": "wolves and a sudden drought",
     "reward": "adapt"},
    {"world": "a quiet meadow", "threat": "a slow season of storms", "reward": "balance"},
]
ENV_PATCHES = [("pressure", "toxin_wave"), ("regeneration", "depletion_feedback"),
               ("volatility", "chaotic"), ("pressure", "fragmentation"),
               ("pressure", "nutrient_bloom"), ("pressure", "heat_wave"),
               ("regeneration", "pulsed"), ("pressure", "drought"), ("intensity", "high"),
               ("duration", "short")]


def _patch(k: int, slot: int) -> dict[str, Any]:
    """The k-th record's patch number `slot`: environment, self or pair forms in turn."""
    field, value = ENV_PATCHES[(k + 3 * slot) % len(ENV_PATCHES)]
    form = (k + slot) % 3
    if form == 0:
        return {"kind": "environment", "field": field, "value": value}
    if form == 1:
        return {"kind": "self", "species": "AB"[slot % 2],
                "value": ("cooperative", "territorial", "cannibalistic")[(k + slot) % 3]}
    return {"kind": "pair", "pair": "A-B", "mode": ("competition", "mutualism")[k % 2]}


def _change(k: int, slot: int, generation: int, activation: str) -> dict[str, Any]:
    durations, transitions = list(DURATIONS), list(TRANSITIONS)
    return {"generation": generation, "activation": activation,
            "duration": durations[(k + slot) % 4], "transition": transitions[(k + slot) % 3],
            "patch": _patch(k, slot)}


def harsh_config() -> dict[str, Any]:
    """A world whose hunter starves within 90 generations: the extinction-trigger records."""
    config = default_config()
    config["environment"].update(abundance="scarce", hazard="toxin", volatility="chaotic")
    config["founders"].update(preyStrategy="armored", predatorStrategy="ambush",
                              balance="prey_heavy")
    config["rules"]["environment"].update(pressure="toxin_wave", intensity="high",
                                          duration="persistent")
    return config


def setup_for(k: int) -> tuple[dict[str, Any], dict[str, str] | None]:
    """Record k's config and, when it comes from answers, the answers.

    Boom records use the meadow (its founders grow fast); extinction records the harsh
    world; the rest cycle through the answers.
    """
    kind = ACTIVATIONS[k % len(ACTIVATIONS)]
    if kind == "species_extinction":
        return harsh_config(), None
    answers = ANSWERS[1] if kind == "population_boom" else ANSWERS[k % len(ANSWERS)]
    return deterministic_setup(answers)["config"], answers


def build_record(k: int, seed: int) -> dict[str, Any]:
    """Record k, decided the way the run actor would: each decision is accepted at some
    generation against the graph version current at that generation."""
    config, answers = setup_for(k)
    kind = ACTIVATIONS[k % len(ACTIVATIONS)]
    first = _change(k, 0, 1, kind)
    stale_at, accept_at = 30, 30 + k
    if kind == "species_extinction":  # nothing else may change the graph before it is due
        first["patch"] = {"kind": "self", "species": "A", "value": "cooperative"}
        stale_at, accept_at = 80, 70 + k % 10
    decisions = [
        # the k-th activation kind, armed at once
        {"generation": 0, "graphVersion": 1, "change": first},
        # decided at generation 1 against version 1, due later: stale if anything fired
        {"generation": 1, "graphVersion": 1, "change": _change(k, 1, stale_at, "after_6")},
    ]
    partial = simulate(config, seed, accept_at, decisions=decisions, size=SIZE)
    version = partial["generations"][accept_at]["graphVersion"]
    decisions.append({"generation": accept_at, "graphVersion": version,
                      "change": _change(k, 2, accept_at + 1, "immediate")})
    result = simulate(config, seed, GENERATIONS, decisions=decisions, size=SIZE,
                      answers=answers if k % 2 == 0 else None)
    return result["record"]


def build_records(seed_base: int = 100, count: int = 20) -> list[dict[str, Any]]:
    """The corpus: `count` records with seeds from `seed_base`."""
    return [build_record(k, seed_base + k) for k in range(count)]


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps(build_records(), separators=(",", ":")) + "\n")
    print(f"wrote {FIXTURE}", file=sys.stderr)
