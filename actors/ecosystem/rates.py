"""Model rates: config + rule graph + generation -> the numbers the field update uses.

Everything here is per generation and per species (tiny arrays and scalars), so
trigonometry runs through `math` on scalars and never touches a cell. `Rates` is linear
data: ramps and pulses blend them with a weight (see `Rates.shifted`).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from actors.ecosystem.graph import BASAL_ROLES, SPECIES_IDS, feeding_edges

# role -> basal uptake, conversion efficiency, mortality, crowding, dispersal, attack
ROLE_TABLE: dict[str, tuple[float, float, float, float, float, float]] = {
    "producer": (3.0, 0.70, 0.06, 0.10, 0.06, 0.0),
    "grazer": (4.0, 0.60, 0.10, 0.10, 0.15, 0.0),
    "omnivore": (2.5, 0.50, 0.10, 0.15, 0.12, 0.8),
    "hunter": (0.0, 0.50, 0.12, 0.25, 0.20, 3.0),
    "scavenger": (0.0, 0.45, 0.08, 0.20, 0.15, 1.5),
}
GRAZING_ATTACK = 0.35       # a basal-only role that is given a consumes edge (grazer on producer)
SCAVENGING = 0.5           # scavenger gain per unit of its carrion's mortality
# Model versions: a run carries the one it was made with, so stored runs replay bit for bit.
# 1: a scavenger's carrion is every other species' dead (runs stored before version 2);
# 2: only the dead of species it consumes along a pair edge.
LEGACY_MODEL, MODEL = 1, 2
MAX_DISPERSAL = 0.3        # base share moved per generation (avoidance may raise it)
SELF_TABLE = {"cooperative": 0.2, "territorial": 0.3, "cannibalistic": 0.3}
COMPETITION, MUTUALISM, AVOIDANCE = 0.3, 0.15, 0.5

ABUNDANCE = {"scarce": (0.7, 0.8), "balanced": (1.0, 1.0), "rich": (1.3, 1.2)}  # K, regrowth
INTENSITY = {"low": 0.5, "medium": 1.0, "high": 1.5}
# share of each 24-generation cycle during which the pressure episode is on
DURATION_ON = {"short": 6, "medium": 12, "long": 18, "persistent": 24}
PRESSURE_CYCLE = 24
SEASON_PERIOD, PULSE_PERIOD = 30.0, 20.0

PREY_STRATEGY = {  # multipliers: uptake, efficiency, mortality, dispersal, attack-on, coop+
    "efficient_grazing": (1.15, 1.0, 1.0, 1.0, 1.0, 0.0),
    "early_brood": (1.0, 1.15, 1.1, 1.0, 1.0, 0.0),
    "armored": (0.9, 1.0, 1.0, 1.0, 0.75, 0.0),
    "swarming": (1.0, 1.0, 1.0, 1.2, 1.0, 0.15),
    "dispersal": (1.0, 1.0, 1.0, 1.8, 1.0, 0.0),
}
PREDATOR_STRATEGY = {  # multipliers: attack, efficiency, mortality, dispersal, coop+
    "ambush": (1.15, 1.0, 0.95, 0.6, 0.0),
    "pursuit": (1.1, 1.0, 1.0, 1.3, 0.0),
    "pack_hunting": (1.0, 1.0, 1.0, 1.0, 0.2),
    "efficient_kill": (1.0, 1.2, 1.0, 1.0, 0.0),
    "brood_hunting": (1.0, 1.1, 0.9, 1.0, 0.0),
}


@attrs.frozen(eq=False)  # numpy fields: equality would be ambiguous
class Rates:
    """Per-generation rates; arrays are per species (S) or per ordered pair (S, S)."""

    uptake: np.ndarray       # basal resource attack rate
    efficiency: np.ndarray   # conversion of food into biomass
    mortality: np.ndarray    # linear loss
    crowding: np.ndarray     # quadratic self-limitation
    cooperation: np.ndarray  # saturating self-benefit
    cannibalism: np.ndarray  # quadratic self-predation (the sim converts half back)
    dispersal: np.ndarray    # share that moves to the 4 neighbours per generation
    scavenging: np.ndarray   # gain from its carrion's mortality
    carrion: np.ndarray      # carrion[s, k]: share of k's dead that scavenger s eats (0..1)
    attack: np.ndarray       # attack[j, i]: j eats i
    competition: np.ndarray  # symmetric
    mutualism: np.ndarray    # mutualism[i, k]: benefit of k to i
    avoidance: np.ndarray    # avoidance[i, k]: i moves away from k
    regrowth: float          # logistic resource regrowth rate
    capacity: float          # resource carrying capacity multiplier
    feedback: float          # depletion feedback: extra regrowth where resource is low
    fragmentation: float     # barrier depth of the fragmentation stripes

    def shifted(self, before: Rates, after: Rates, scale: float) -> Rates:
        """self + scale * (after - before), field by field.

        A change at transition weight w contributes its full effect to the current
        graph's rates; shifting by (w - 1) * (after - before) leaves w of it.
        """
        return Rates(*(c + scale * (a - b) for c, b, a in
                       zip(attrs.astuple(self, recurse=False),
                           attrs.astuple(before, recurse=False),
                           attrs.astuple(after, recurse=False), strict=True)))


def pressure_strength(environment: dict[str, str], generation: int, chaos: float) -> float:
    """Strength of the graph's pressure episode at `generation` (0 when off)."""
    if environment["pressure"] == "stability":
        return 0.0
    on = DURATION_ON[environment["duration"]]
    if generation % PRESSURE_CYCLE >= on:
        return 0.0
    return INTENSITY[environment["intensity"]] * volatility_factor(
        environment["volatility"], generation, chaos)


def volatility_factor(volatility: str, generation: int, chaos: float) -> float:
    """stable: 1; pulsing: a sine of the generation; chaotic: the drawn `chaos` scalar."""
    if volatility == "pulsing":
        return 1.0 + 0.5 * math.sin(2.0 * math.pi * generation / PULSE_PERIOD)
    if volatility == "chaotic":
        return chaos
    return 1.0


def species_rates(config: dict[str, Any], graph: dict[str, Any], model: int = MODEL) -> Rates:
    """The generation-independent part: roles, self-interactions, pair modes and the
    founders' strategies (environment fields neutral), under model version `model`. Runs
    cache it per graph."""
    species = graph["species"]
    n = len(species)
    index = {sid: k for k, sid in enumerate(SPECIES_IDS[:n])}
    table = np.array([ROLE_TABLE[s["role"]] for s in species])
    uptake, eff, mort, crowd, disp, attack_scale = (table[:, c].copy() for c in range(6))
    coop, cann = np.zeros(n), np.zeros(n)
    scav = np.array([SCAVENGING if s["role"] == "scavenger" else 0.0 for s in species])
    for k, s in enumerate(species):
        if s["self"] == "cooperative":
            coop[k] += SELF_TABLE["cooperative"]
        elif s["self"] == "territorial":
            crowd[k] += SELF_TABLE["territorial"]
        elif s["self"] == "cannibalistic":
            cann[k] += SELF_TABLE["cannibalistic"]

    attack, carrion = np.zeros((n, n)), np.zeros((n, n))
    for eater, eaten in feeding_edges(graph):
        attack[index[eater], index[eaten]] = attack_scale[index[eater]] or GRAZING_ATTACK
        carrion[index[eater], index[eaten]] = 1.0
    if model == LEGACY_MODEL:
        carrion = 1.0 - np.eye(n)
    comp, mutual, avoid = np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n))
    for item in graph["interactions"]:
        a, b = (index[x] for x in item["pair"].split("-"))
        target = {"competition": comp, "mutualism": mutual, "avoidance": avoid}.get(item["mode"])
        if target is not None:
            target[a, b] = target[b, a] = {"competition": COMPETITION, "mutualism": MUTUALISM,
                                           "avoidance": AVOIDANCE}[item["mode"]]

    # Founders' strategies: prey are basal feeders that eat no one, predators eat someone.
    founders = config["founders"]
    eaters = {index[e] for e, _ in feeding_edges(graph)}
    for k, s in enumerate(species):
        if k in eaters:
            a_m, e_m, m_m, d_m, c_p = PREDATOR_STRATEGY[founders["predatorStrategy"]]
            attack[k] *= a_m
        elif s["role"] in BASAL_ROLES:
            u_m, e_m, m_m, d_m, on_m, c_p = PREY_STRATEGY[founders["preyStrategy"]]
            uptake[k] *= u_m
            attack[:, k] *= on_m
        else:
            continue
        eff[k] *= e_m
        mort[k] *= m_m
        disp[k] *= d_m
        coop[k] += c_p
    return Rates(uptake, eff, mort, crowd, coop, cann, disp, scav, carrion, attack, comp, mutual,
                 avoid, 1.0, 1.0, 0.0, 0.0)


def compute_rates(config: dict[str, Any], graph: dict[str, Any], generation: int,
                  chaos: tuple[float, float], base: Rates | None = None) -> Rates:
    """All rates for one generation; `chaos` holds the two drawn volatility scalars
    (config hazard, graph pressure), each within 0.5..1.5; `base` is the graph's
    `species_rates` when the caller has it already."""
    if base is None:
        base = species_rates(config, graph)
    uptake, mort, crowd, disp = base.uptake, base.mortality, base.crowding, base.dispersal
    capacity, regrowth = ABUNDANCE[config["environment"]["abundance"]]
    if config["environment"]["distribution"] == "seasonal":
        capacity *= 1.0 + 0.35 * math.sin(2.0 * math.pi * generation / SEASON_PERIOD)
    hazard = volatility_factor(config["environment"]["volatility"], generation, chaos[0])
    match config["environment"]["hazard"]:
        case "drought":
            regrowth *= 1.0 - 0.15 * hazard
        case "toxin":
            mort = mort + 0.03 * hazard
        case "heat":
            mort = mort + 0.02 * hazard
            uptake = uptake * (1.0 - 0.1 * hazard)
        case "crowding":
            crowd = crowd + 0.1 * hazard

    env = graph["environment"]
    if env["regeneration"] == "pulsed":
        regrowth *= 1.5 if generation % 8 < 2 else 0.85
    feedback = 0.5 if env["regeneration"] == "depletion_feedback" else 0.0
    strength = pressure_strength(env, generation, chaos[1])
    fragmentation = 0.0
    match env["pressure"]:
        case "drought":
            regrowth *= 1.0 - 0.3 * min(strength, 2.0)
        case "toxin_wave":
            mort = mort + 0.08 * strength
        case "heat_wave":
            mort = mort + 0.05 * strength
            uptake = uptake * (1.0 - 0.1 * min(strength, 2.0))
        case "fragmentation":
            fragmentation = min(0.6 * strength, 0.9)
            disp = disp * (1.0 - 0.5 * min(strength, 1.0))
        case "nutrient_bloom":
            capacity *= 1.0 + 0.3 * strength
            regrowth *= 1.0 + 0.3 * strength
    # Every adjustment above built new arrays, so `base` is never modified.
    return attrs.evolve(base, uptake=uptake, mortality=mort, crowding=crowd,
                        dispersal=np.minimum(disp, MAX_DISPERSAL), regrowth=float(regrowth),
                        capacity=float(capacity), feedback=feedback,
                        fragmentation=fragmentation)
