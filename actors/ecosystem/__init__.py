"""LifePot: a petri-dish ecosystem. Setup answers (world, threat, reward) become a
validated LifeConfig and rule graph; a seeded, deterministic density-field simulation
advances it a generation at a time; rule patches and scheduled changes steer it; a run
record replays bit for bit without any model.

- `errors`      the one error type (closed codes, exact messages) and strict-shape checks
- `setup`       answers schema, `hash_setup_request`, LifeConfig, `normalize_fitness`
- `keywords`    `deterministic_setup`: the fixed keyword table, the labelled fallback
- `rules`       rule graph validation, `default_rule_graph`, RulePatch and `apply_patch`
- `schedule`    accepted decisions, triggers, durations, ramps and pulses
- `rates`       config + graph + generation -> per-species rates (scalars, `math`)
- `sim`         the numpy fields and the per-generation update, metrics, digests
- `score`       the five fitness components
- `run`         one run: frames and a replayable record
- `replay`      re-run a record and compare digests
- `model_client` the chat-completions client and the call budget
- `intent`      the named-intent contract (organisms as spans, stated roles and links)
- `interpret`   the live interpretation pipeline with its labelled fallback
- `cli`         `petridish ecosystem setup | validate-graph | run | replay`

What `server/` and the actor may import is re-exported below.
"""

from __future__ import annotations

import importlib
from typing import Any

# Public name -> module. Resolved on first use so that `petridish --help`, which imports
# `actors.ecosystem.cli`, does not pay for numpy and httpx.
_EXPORTS = {
    "EcosystemError": "errors",
    "canonical_answers": "setup", "hash_setup_request": "setup", "validate_config": "setup",
    "normalize_fitness": "setup", "default_config": "setup",
    "deterministic_setup": "keywords",
    "validate_rule_graph": "rules", "default_rule_graph": "rules", "apply_patch": "rules",
    "validate_decision": "schedule",
    "simulate": "run",
    "replay": "replay", "ReplayReport": "replay",
    "ChatClient": "model_client", "ModelSettings": "model_client",
    "Interpreter": "interpret", "Interpretation": "interpret",
    "ModelInterpreter": "interpret", "DeterministicInterpreter": "interpret",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import the public name's module on first access."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'actors.ecosystem' has no attribute {name!r}")
    return getattr(importlib.import_module(f"actors.ecosystem.{_EXPORTS[name]}"), name)
