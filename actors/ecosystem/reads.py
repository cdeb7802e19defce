"""The replies of a run's moves and its reads: `view` (also every `snapshot` push) and
`history`. Pure."""

from __future__ import annotations

from typing import Any

import attrs

from actors.ecosystem.density import density_frame, spectator_side
from actors.ecosystem.graph import ENVIRONMENT_VOCABULARY, PAIR_MODES, ROLES, SELF_MODES
from actors.ecosystem.schedule import (
    ACTIVATIONS,
    COMPARED,
    DELAYS,
    DURATIONS,
    TRANSITIONS,
    first_generation,
)
from actors.ecosystem.setup import hash_setup_request
from actors.ecosystem.state import PendingSetup, Run, unready
from actors.world import Ctx, Refusal
from protocol.ops import ecosystem as ops
from protocol.ops.ecosystem import EcosystemCode

# The words a patch and a scheduled change may use (their one home is the engine; pages
# read them from `ecosystem.view`).
VOCABULARY: dict[str, Any] = {
    "roles": list(ROLES), "self": list(SELF_MODES), "pair": list(PAIR_MODES),
    "environment": {k: list(v) for k, v in ENVIRONMENT_VOCABULARY.items()},
    "activation": list(ACTIVATIONS), "duration": list(DURATIONS),
    "transition": list(TRANSITIONS),
    # `schedule.armed_from`'s table: a page works out a pushed decision's first generation
    # (`first_generation`) from it, as a stored event carries none.
    "armed_from": {"delays": dict(DELAYS), "compared": list(COMPARED)}}


def run_info(state: Run, *_: Any) -> ops.RunInfo:
    """The reply of `create`, once set up."""
    assert state.setup is not None
    s = state.setup
    return ops.RunInfo("ready", state.generation, s.answers_hash, s.seed, s.source,
                       s.config_hash, state.graph["version"], s.failure)


def pending_info(pending: PendingSetup) -> ops.RunInfo:
    """The reply of `create` while the model interprets the answers."""
    return ops.RunInfo("setting_up", -1, hash_setup_request(pending.answers), pending.seed)


def control_result(state: Run, *_: Any) -> ops.ControlResult:
    """The reply of `control`."""
    return ops.ControlResult(state.playing, state.speed, state.generation,
                             state.ended is not None)


def decision_result(state: Run, *_: Any) -> ops.DecisionResult:
    """The reply of `patch` and `schedule`: the decision just accepted."""
    decision = state.decisions[-1]
    return ops.DecisionResult(len(state.decisions) - 1, decision["generation"],
                              decision["graphVersion"], first_generation(decision))


def view(state: Run) -> dict[str, Any]:
    """What spectators see: setup, graph, the latest frame and the density fields
    (downsampled, quantised), decisions, controls, the end and its phrasing. Before the
    setup: whether the model is interpreting the answers, or the last blocked setup."""
    if state.setup is None:
        pending = state.setting_up
        return {"created": False, "setting_up": pending is not None,
                "owner": None if pending is None else pending.owner,
                "answers": None if pending is None else pending.answers,
                "blocked": state.blocked}
    s = state.setup
    assert state.engine is not None
    return {"created": True, "generation": state.generation, "playing": state.playing,
            "speed": state.speed, "owner": s.owner,
            "setup": {"source": s.source, "answers": s.answers, "answers_hash": s.answers_hash,
                      "config_hash": s.config_hash, "seed": s.seed, "size": s.size,
                      "failure": s.failure, "named_intent": s.named_intent, "calls": s.calls},
            "config": s.config, "graph": state.graph, "graph_version": state.graph["version"],
            "frame": state.frames[-1],
            "density": density_frame(state.engine, spectator_side(s.size)),
            "decisions": [{"decision": k, "via": via, **d, "from_generation": first_generation(d)}
                          for k, (d, via) in enumerate(zip(state.decisions, state.vias,
                                                           strict=True))],
            "end": None if state.ended is None else attrs.asdict(state.ended),
            "phrasing": None if state.phrasing is None else attrs.asdict(state.phrasing)}


def answer_view(state: Run, _args: ops.ViewArgs, _ctx: Ctx) -> ops.RunView:
    """The `view` read, with the vocabulary of patches and changes."""
    return ops.RunView(view(state), VOCABULARY)


def answer_history(state: Run, args: ops.HistoryArgs, _ctx: Ctx) -> ops.History | Refusal:
    """Frames from an earlier generation on, with its graph and coarse density."""
    if (refusal := unready(state)) is not None:
        return refusal
    g = args.generation
    if g > state.generation:
        return Refusal(EcosystemCode.NOT_REACHED,
                       f"the run is at generation {state.generation}",
                       {"generation": state.generation})
    frames = state.frames[g:g + args.count]
    return ops.History(list(frames), state.graphs[frames[0]["graphVersion"]],
                       state.densities[g].as_json())
