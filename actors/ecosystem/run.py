"""A batch run: config + graph + seed + accepted decisions -> every frame and a record.

`simulate` is `engine.start` followed by `engine.step` per generation (all decisions are
handed to the first step; each stays dormant until the generation after its acceptance),
so a batch run, a live run and a replay share one code path. It drops each state as it
steps, so it steps without forking (`fork=False`). The record holds everything
a replay needs and no model output beyond the accepted config and graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from actors.ecosystem.engine import DEFAULT_SIZE, check_run_parameters, start, step
from actors.ecosystem.errors import EcosystemError
from actors.ecosystem.keywords import deterministic_setup
from actors.ecosystem.rates import MODEL
from actors.ecosystem.schedule import validate_decisions
from actors.ecosystem.setup import canonical_answers, config_graph, validate_config

RECORD_FORMAT = "lifepot-run/1"


def simulate(config: Any, seed: int, generations: int, *, graph: Any = None,
             decisions: Sequence[Any] = (), size: int = DEFAULT_SIZE,
             answers: dict[str, str] | None = None, model: int = MODEL) -> dict[str, Any]:
    """Run a world; returns `{"generations": [frame, ...], "record": {...}}`.

    `graph` defaults to the config's own rules (or the default graph). When `answers`
    is given the record stores them (the config is their deterministic setup). The record
    carries the model version (`rates.MODEL` unless a replay asks for a stored run's).
    """
    config = validate_config(config)
    if answers is not None and deterministic_setup(answers)["config"] != config:
        raise EcosystemError("invalid_run", "config is not the deterministic setup of the answers",
                             "answers")
    check_run_parameters(seed, size, generations)
    accepted = validate_decisions(decisions)
    state = start(config, graph if graph is not None else config_graph(config), seed, size,
                  model)
    start_graph, frames = state.graph, [state.frame]
    due: Sequence[Any] = accepted
    for _ in range(generations):
        state, frame = step(state, due, fork=False)
        frames.append(frame)
        due = ()
    record: dict[str, Any] = {"format": RECORD_FORMAT}
    if answers is not None:
        record["answers"] = canonical_answers(answers)
    else:
        record["config"] = config
    record.update({"graph": start_graph, "seed": seed, "generations": generations,
                   "size": size, "model": model, "decisions": accepted,
                   "digests": [f["digest"] for f in frames]})
    return {"generations": frames, "record": record}
