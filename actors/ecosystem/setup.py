"""Setup contracts: the strict answers schema, its hash, and the strict LifeConfig.

Answers are exactly `world`, `threat` and `reward`, each trimmed, nonempty and at most
140 characters (UTF-16 code units, as the seed's zod counts them: an emoji is two). A
LifeConfig is strict at every level; its optional `rules` is a rule graph (the engine
uses the default when absent).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

from actors.ecosystem.errors import EcosystemError, Shape
from actors.ecosystem.graph import default_rule_graph, validate_rule_graph
from protocol.jsontext import escape_lone_surrogates

ANSWER_KEYS = ("world", "threat", "reward")
MAX_ANSWER = 140

CONFIG_VOCABULARY: dict[str, dict[str, tuple[str, ...]]] = {
    "environment": {
        "abundance": ("scarce", "balanced", "rich"),
        "distribution": ("clustered", "scattered", "seasonal"),
        "hazard": ("drought", "toxin", "heat", "crowding"),
        "volatility": ("stable", "pulsing", "chaotic"),
    },
    "founders": {
        "balance": ("prey_heavy", "balanced", "predator_heavy"),
        "diversity": ("focused", "varied"),
        "preyStrategy": ("efficient_grazing", "early_brood", "armored", "swarming", "dispersal"),
        "predatorStrategy": ("ambush", "pursuit", "pack_hunting", "efficient_kill",
                             "brood_hunting"),
    },
}
FITNESS_KEYS = ("survive", "replicate", "cooperate", "explore", "adapt")
FITNESS_TOLERANCE = 1e-9

_answers = Shape(lambda path, why: EcosystemError(
    "invalid_answers", f"Invalid setup answers: {path} {why}", path))
_config = Shape(lambda path, why: EcosystemError(
    "invalid_config", f"Invalid life config: {path} {why}", path))


def canonical_answers(value: Any) -> dict[str, str]:
    """Validate setup answers strictly and return them trimmed, in canonical key order."""
    _answers.obj(value, "", ANSWER_KEYS)
    return {key: _answers.text(value[key], key, MAX_ANSWER, trim=True) for key in ANSWER_KEYS}


def hash_setup_request(value: Any) -> str:
    """`setup_` + SHA-256 of the canonical ordered (world, threat, reward) tuple, as
    JavaScript's JSON.stringify writes it (a lone surrogate as its escape)."""
    answers = canonical_answers(value)
    body = escape_lone_surrogates(json.dumps([answers[k] for k in ANSWER_KEYS],
                                             ensure_ascii=False, separators=(",", ":")))
    return "setup_" + hashlib.sha256(body.encode("utf-8")).hexdigest()


def validate_fitness(value: Any, path: str = "fitness") -> dict[str, float]:
    """Exactly the five weights, each within 0..1, total within 1e-9 of 1."""
    _config.obj(value, path, FITNESS_KEYS)
    out = {k: _config.number(value[k], f"{path}.{k}", 0.0, 1.0) for k in FITNESS_KEYS}
    if abs(math.fsum(out.values()) - 1.0) > FITNESS_TOLERANCE:
        raise _config.fail(path, "weights must total 1 (within 1e-9)")
    return out


def normalize_fitness(value: Mapping[str, Any]) -> dict[str, float]:
    """Clamp negative/non-finite/non-numeric weights to 0 and scale them to total 1.

    An all-zero input becomes equal weights. Missing keys count as 0 and unknown keys
    are ignored: this repairs internal arithmetic, it does not validate external config.
    """
    raw: dict[str, float] = {}
    for key in FITNESS_KEYS:
        item = value.get(key, 0.0)
        ok = not isinstance(item, bool) and isinstance(item, int | float)
        raw[key] = float(item) if ok and math.isfinite(item) and item > 0 else 0.0
    peak = max(raw.values())
    if peak == 0.0:
        return {key: 1.0 / len(FITNESS_KEYS) for key in FITNESS_KEYS}
    # Dividing by the peak first keeps the sum finite even for weights near float max.
    scaled = {key: v / peak for key, v in raw.items()}
    total = math.fsum(scaled.values())
    return {key: scaled[key] / total for key in FITNESS_KEYS}


def validate_config(value: Any) -> dict[str, Any]:
    """Validate a LifeConfig strictly and return a deep clone."""
    _config.obj(value, "", ("environment", "fitness", "founders"), ("rules",))
    for section, fields in CONFIG_VOCABULARY.items():
        _config.obj(value[section], section, tuple(fields))
        for field, vocabulary in fields.items():
            _config.enum(value[section][field], f"{section}.{field}", vocabulary)
    validate_fitness(value["fitness"])
    out = copy.deepcopy(dict(value))
    if "rules" in value:
        out["rules"] = validate_rule_graph(value["rules"])
    return out


def default_config() -> dict[str, Any]:
    """balanced/scattered/drought/stable, equal weights, balanced/varied founders,
    efficient grazing / pursuit, and the default rule graph."""
    return {
        "environment": {"abundance": "balanced", "distribution": "scattered",
                        "hazard": "drought", "volatility": "stable"},
        "fitness": {key: 1.0 / len(FITNESS_KEYS) for key in FITNESS_KEYS},
        "founders": {"balance": "balanced", "diversity": "varied",
                     "preyStrategy": "efficient_grazing", "predatorStrategy": "pursuit"},
        "rules": default_rule_graph(),
    }


def config_graph(config: dict[str, Any]) -> dict[str, Any]:
    """The graph a config runs with: its own `rules`, else the default graph."""
    return copy.deepcopy(config["rules"]) if "rules" in config else default_rule_graph()
