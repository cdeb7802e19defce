"""LifePot: a petri-dish ecosystem. Setup answers (world, threat, reward) become a
validated LifeConfig and rule graph; a seeded, deterministic density-field simulation
advances it a generation at a time; rule patches and scheduled changes steer it; a run
replays bit for bit without any model.

The world is a run, `ecosystem:<run id>`: created from three answers (its creator owns
it), advanced generation by generation to 180, steered by its owner, watched by anyone.
`rules.py` is the whole world as one `World` value (`WORLD`); the live effects (the
generation timer, the model setup off the task) will live in `actor.py`, which does not
exist yet. Every module here is pure: no trio, no clock, seeded numpy only.

- `errors`      the one error type (closed codes, exact messages) and strict-shape checks
- `setup`       answers schema, `hash_setup_request`, LifeConfig, `normalize_fitness`
- `keywords`    `deterministic_setup`: the fixed keyword table, the labelled fallback
- `graph`       rule graph validation, `default_rule_graph`, RulePatch and `apply_patch`
- `schedule`    accepted decisions, triggers, durations (reverting only what a change still
                holds), ramps and pulses
- `rates`       config + graph + generation -> per-species rates (scalars, `math`)
- `sim`         `Fields`: the numpy fields and the per-generation update, metrics, digests
- `engine`      the step API: `start(config, graph, seed)`, `step(state, decisions_due)`,
                frames
- `density`     the fields for spectators: downsampled, quantised to bytes
- `score`       the five fitness components
- `run`         `simulate`: a batch run over `engine` and its replayable record
- `replay`      re-run a record and compare digests
- `export`      a run's stored events as JSON lines, and the record they make
- `endpoint`    `ModelEndpoint`: where the model lives (URL, model, key)
- `model_options` the `--model-*` options (argparse only, for a light `petridish --help`)
- `model_client` the chat-completions client and the call budget
- `intent`      the named-intent contract (organisms as spans, stated roles and links)
- `interpret`   the live interpretation pipeline with its labelled fallback
- `events`      the run's events (frozen attrs) and their stored JSON
- `reflect`     the end of a run: score breakdown by fitness weight, engine-derived facts
- `rules`       the run world: state, `evolve`, moves, reads, `advance`, `setup_events`,
                `WORLD`
- `cli`         `petridish ecosystem setup | validate-graph | run | replay`

`server/` may import `WORLD` (and `ModelEndpoint`, to hand the run worlds a model); the
names below are what the actor, the CLI, benches and tests share.
"""

from __future__ import annotations

import importlib
from typing import Any

# Public name -> module. Resolved on first use so that `petridish --help`, which imports
# `actors.ecosystem.cli`, does not pay for numpy and httpx.
_EXPORTS = {
    "WORLD": "rules",
    "EcosystemError": "errors",
    "canonical_answers": "setup", "hash_setup_request": "setup", "validate_config": "setup",
    "normalize_fitness": "setup", "default_config": "setup",
    "deterministic_setup": "keywords",
    "validate_rule_graph": "graph", "default_rule_graph": "graph", "apply_patch": "graph",
    "validate_decision": "schedule",
    "start": "engine", "step": "engine", "RunState": "engine",
    "density_frame": "density",
    "simulate": "run",
    "replay": "replay", "ReplayReport": "replay",
    "ModelEndpoint": "endpoint",
    "ChatClient": "model_client",
    "Interpreter": "interpret", "Interpretation": "interpret",
    "ModelInterpreter": "interpret", "DeterministicInterpreter": "interpret",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import the public name's module on first access."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'actors.ecosystem' has no attribute {name!r}")
    return getattr(importlib.import_module(f"actors.ecosystem.{_EXPORTS[name]}"), name)
