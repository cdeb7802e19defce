"""Deterministic setup: setup prose -> LifeConfig + rule graph by a fixed keyword table.

The table only selects values from closed vocabularies; it never generates logic. Every
field has a default, every valid answer set gives a valid config and graph, and the
result is labelled `deterministic_fallback`. A stem matches at the start of a word
(case-insensitive); for each field the first row whose stem occurs wins.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from actors.ecosystem.graph import BASAL_ROLES, SPECIES_IDS, validate_rule_graph
from actors.ecosystem.setup import (
    canonical_answers,
    normalize_fitness,
    validate_config,
)

FALLBACK_SOURCE = "deterministic_fallback"

# field -> (answers it reads, [(value, stems)], default); first matching row wins.
SETTING_TABLE: dict[str, tuple[tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...], str]] = {
    "environment.abundance": (("world",), (
        ("scarce", ("barren", "scarce", "desert", "harsh", "sparse", "poor", "starv")),
        ("rich", ("lush", "rich", "abundan", "fertile", "jungle", "plenty", "thick")),
    ), "balanced"),
    "environment.distribution": (("world",), (
        ("clustered", ("patch", "cluster", "oasis", "island", "pocket", "pond")),
        ("seasonal", ("season", "winter", "summer", "monsoon", "spring", "autumn")),
    ), "scattered"),
    "environment.hazard": (("threat",), (
        ("toxin", ("toxi", "poison", "pollut", "acid", "venom", "disease")),
        ("heat", ("heat", "fire", "burn", "hot", "sun", "lava")),
        ("crowding", ("crowd", "overpopul", "cramp", "dense", "invasi")),
        ("drought", ("drought", "dry", "thirst", "water")),
    ), "drought"),
    "environment.volatility": (("threat", "world"), (
        ("chaotic", ("chao", "random", "unpredict", "storm", "wild", "sudden")),
        ("pulsing", ("pulse", "cycle", "tide", "wave", "rhythm", "return")),
    ), "stable"),
    "founders.balance": (("world",), (
        ("prey_heavy", ("teeming", "herd", "crowded with", "full of", "many prey")),
        ("predator_heavy", ("infested", "dominated", "ruled", "many predator")),
    ), "balanced"),
    "founders.diversity": (("world",), (
        ("focused", ("single", "lone", "monocult", "one kind", "focus")),
    ), "varied"),
    "founders.preyStrategy": (("reward", "world"), (
        ("armored", ("armor", "armour", "shell", "tough", "defen", "shield")),
        ("swarming", ("swarm", "flock", "school", "colony")),
        ("early_brood", ("breed", "brood", "fast", "quick", "multiply")),
        ("dispersal", ("spread", "scatter", "dispers", "migrat", "roam")),
    ), "efficient_grazing"),
    "founders.predatorStrategy": (("threat",), (
        ("ambush", ("ambush", "lurk", "hidden", "stealth", "trap")),
        ("pack_hunting", ("pack", "group", "together")),
        ("efficient_kill", ("kill", "lethal", "deadly", "precise")),
        ("brood_hunting", ("brood", "breed", "spawn")),
    ), "pursuit"),
    "graph.regeneration": (("world",), (
        ("depletion_feedback", ("deplet", "exhaust", "overgraz", "fragile")),
        ("pulsed", ("bloom", "tide", "pulse", "flood")),
    ), "steady"),
    "graph.pressure": (("threat",), (
        ("toxin_wave", ("toxi", "poison", "pollut", "acid")),
        ("heat_wave", ("heat", "fire", "burn", "hot")),
        ("fragmentation", ("fragment", "split", "divid", "wall", "road", "fence")),
        ("nutrient_bloom", ("bloom", "flood", "nutrient", "feast")),
        ("drought", ("drought", "dry", "thirst")),
    ), "stability"),
    "graph.volatility": (("threat",), (
        ("chaotic", ("chao", "random", "unpredict", "storm")),
        ("pulsing", ("pulse", "cycle", "tide", "wave", "season")),
    ), "stable"),
    "graph.intensity": (("threat",), (
        ("low", ("mild", "gentle", "slight", "small", "weak")),
        ("high", ("severe", "deadly", "extreme", "catastroph", "brutal", "massive")),
    ), "medium"),
    "graph.duration": (("threat",), (
        ("short", ("brief", "sudden", "short", "flash")),
        ("persistent", ("endless", "forever", "perman", "constant", "never end")),
        ("long", ("long", "slow", "lasting")),
        ("medium", ("while", "season", "weeks")),
    ), "persistent"),
}

# reward stems that add emphasis (+2 on a base of 1) to a fitness component.
FITNESS_EMPHASIS: dict[str, tuple[str, ...]] = {
    "survive": ("surviv", "endure", "last", "persist", "alive"),
    "replicate": ("grow", "multipl", "breed", "populat", "number", "biggest"),
    "cooperate": ("cooperat", "together", "balance", "harmony", "share", "coexist"),
    "explore": ("explor", "roam", "territor", "cover", "expand", "spread"),
    "adapt": ("adapt", "resilien", "recover", "change", "evolv", "bounce"),
}

# organism stems -> role; names are read from `world` then `threat`, in order of mention.
ORGANISM_ROLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("producer", ("grass", "plant", "alga", "moss", "tree", "kelp", "plankton", "fern",
                  "flower", "seaweed", "lichen", "shrub")),
    ("grazer", ("deer", "rabbit", "sheep", "snail", "cow", "mice", "mouse", "insect", "krill",
                "goat", "hare", "caterpillar", "bee", "ant", "minnow", "fish", "shrimp")),
    ("hunter", ("wolf", "wolves", "fox", "hawk", "shark", "lion", "owl", "spider", "cat",
                "snake", "eagle", "tiger", "pike", "predator")),
    ("scavenger", ("vulture", "crow", "crab", "beetle", "rat", "hyena", "fung", "worm",
                   "scaveng", "maggot", "fly", "flies")),
    ("omnivore", ("bear", "human", "boar", "raccoon", "pig", "monkey", "badger", "ape")),
)
# Pair modifiers (read from `world`) for pairs where neither eats the other.
PAIR_MODIFIERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("mutualism", ("symbio", "together", "cooperat", "partner", "help")),
    ("avoidance", ("avoid", "hide", "shy", "flee", "apart")),
)
# Self-interaction for consumers (hunters, scavengers, omnivores), read from all answers.
SELF_MODIFIERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cannibalistic", ("cannibal", "eat each other", "devour their own")),
    ("cooperative", ("pack", "colony", "cooperat", "together")),
    ("territorial", ("territor", "rival", "solitary")),
)
FALLBACK_SPECIES = ({"name": "grazers", "role": "grazer"}, {"name": "hunters", "role": "hunter"})

# Which roles eat which, as tiers of preference: an eater takes every species of the first
# tier with a species present (so a hunter eats the grazers, not the scavengers beside
# them, and turns to producers only when nothing else is there).
EATS: dict[str, tuple[tuple[str, ...], ...]] = {
    "hunter": (("grazer", "omnivore"), ("scavenger",), ("producer",)),
    "scavenger": (("grazer", "omnivore"), ("producer",)),
    "omnivore": (("producer", "grazer"),),
    "grazer": (("producer",),),
    "producer": (),
}
_WORD = re.compile(r"[a-z][a-z'-]*")


def _position(text: str, stems: tuple[str, ...]) -> int | None:
    """Earliest index where one of the stems starts a word, or None."""
    hits = [m.start() for stem in stems for m in re.finditer(r"\b" + re.escape(stem), text)]
    return min(hits) if hits else None


def _pick(text: str, rows: tuple[tuple[str, tuple[str, ...]], ...], default: str) -> str:
    """The value of the first row with a stem in `text`."""
    return next((value for value, stems in rows if _position(text, stems) is not None), default)


def _names(word: str, stem: str) -> bool:
    """Organism stems match a word's start; short ones (< 4 letters) only a whole word
    or its plural, so that "ant" is not read in "another" nor "cat" in "catastrophe"."""
    if len(stem) < 4:
        return word in (stem, stem + "s", stem + "es")
    return word.startswith(stem)


def _organisms(text: str) -> list[dict[str, str]]:
    """Up to four distinct organisms in order of mention, each with a role."""
    found: list[tuple[int, str, str]] = []
    for m in _WORD.finditer(text):
        for role, stems in ORGANISM_ROLES:
            if any(_names(m.group(), stem) for stem in stems):
                found.append((m.start(), m.group()[:40], role))
                break
    out: list[dict[str, str]] = []
    for _, name, role in sorted(found):
        if name not in {o["name"] for o in out} and len(out) < len(SPECIES_IDS):
            out.append({"name": name, "role": role})
    return out


def _diet(role: str, present: set[str]) -> tuple[str, ...]:
    """The roles an eater of `role` eats, given the roles present in the world."""
    return next((tier for tier in EATS[role] if present & set(tier)), ())


def _pair_mode(role_a: str, role_b: str, present: set[str], modifier: str) -> str:
    """Mode for the canonical pair (a, b) from the roles and the world's pair modifier."""
    if role_b in _diet(role_a, present):
        return "a_consumes_b"
    if role_a in _diet(role_b, present):
        return "b_consumes_a"
    if role_a == role_b and role_a in ("producer", "grazer", "hunter"):
        return "competition"
    return modifier


def deterministic_setup(answers: Any) -> dict[str, Any]:
    """Map valid answers to `{"source", "config", "graph"}` by the keyword table.

    Raises the answers schema error for invalid answers; total on valid ones.
    """
    answers = canonical_answers(answers)
    low = {key: value.lower() for key, value in answers.items()}
    values = {}
    for field, (sources, rows, default) in SETTING_TABLE.items():
        values[field] = _pick(" \n ".join(low[s] for s in sources), rows, default)

    weights = {key: 1.0 + (2.0 if _position(low["reward"], stems) is not None else 0.0)
               for key, stems in FITNESS_EMPHASIS.items()}
    species = _organisms(low["world"] + " \n " + low["threat"])
    for extra in FALLBACK_SPECIES:
        if len(species) < 2 and extra["name"] not in {s["name"] for s in species}:
            species.append(dict(extra))
    if not any(s["role"] in BASAL_ROLES for s in species):
        species[0]["role"] = "grazer"  # guarantee a basal feeder
    present = {s["role"] for s in species}
    everything = " \n ".join(low.values())
    consumer_self = _pick(everything, SELF_MODIFIERS, "territorial")
    modifier = _pick(low["world"], PAIR_MODIFIERS, "neutral")
    graph = {
        "version": 1,
        "species": [{"id": SPECIES_IDS[k], "name": s["name"], "role": s["role"],
                     "self": consumer_self if s["role"] in ("hunter", "scavenger", "omnivore")
                     else "neutral"} for k, s in enumerate(species)],
        "interactions": [
            {"pair": f"{SPECIES_IDS[i]}-{SPECIES_IDS[j]}",
             "mode": _pair_mode(species[i]["role"], species[j]["role"], present, modifier)}
            for i in range(len(species)) for j in range(i + 1, len(species))],
        "environment": {field.split(".")[1]: values[field]
                        for field in SETTING_TABLE if field.startswith("graph.")},
    }
    config = {
        section: {field.split(".")[1]: values[field]
                  for field in SETTING_TABLE if field.startswith(section + ".")}
        for section in ("environment", "founders")
    }
    config["fitness"] = normalize_fitness(weights)
    config["rules"] = validate_rule_graph(graph)
    config = validate_config(config)
    return {"source": FALLBACK_SOURCE, "config": config, "graph": copy.deepcopy(config["rules"])}
