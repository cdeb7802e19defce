"""The run world, `ecosystem:<run id>`, as one `World` value. Pure.

A run is created from three answers (the caller becomes its owner), starts at generation
0 and advances one generation per `advance` up to 180, where it ends with the score
breakdown and the reflection. Its owner plays, pauses and steps it, patches its rule graph
for the next generation (with graph-version evidence) and schedules changes; anyone may
view it and read any generation it reached.

Two effects plug in from the run's actor (`actor.py`, next phase), never from here:
the generation timer (`every(1 / speed)` while playing; each tick folds `advance(state)`)
and the model setup (network I/O off the task; its `Interpretation` goes to
`setup_events` in place of the deterministic one `decide_create` uses).
"""

from __future__ import annotations

import hashlib
from typing import Any

import attrs

from actors.ecosystem.engine import MAX_SEED, RunState, start, step
from actors.ecosystem.errors import EcosystemError
from actors.ecosystem.events import (
    Controlled,
    Ended,
    Event,
    Generated,
    Patched,
    Scheduled,
    SetUp,
    config_hash,
    decode,
    encode,
)
from actors.ecosystem.graph import apply_patch, validate_patch
from actors.ecosystem.interpret import DeterministicInterpreter, Interpretation
from actors.ecosystem.reflect import breakdown, reflection
from actors.ecosystem.schedule import (
    MAX_DECISIONS,
    MAX_GENERATION,
    validate_change,
    validate_decision,
)
from actors.ecosystem.setup import canonical_answers, hash_setup_request
from actors.world import Codec, Ctx, Move, Read, Refusal, World
from protocol.errors import ErrorCode
from protocol.ops import ecosystem as ops
from protocol.ops.ecosystem import EcosystemCode

DEFAULT_SPEED = 10  # generations a second
SEED_PURPOSE = 1  # `ctx.rng` purpose: the engine seed drawn at create


@attrs.frozen
class Run:
    """The folded state: setup, the engine at the latest generation, every frame, the
    accepted decisions (and how each came), the controls and the end."""

    name: str
    rev: int = 0
    setup: SetUp | None = None
    engine: RunState | None = attrs.field(default=None, eq=False, repr=False)
    frames: tuple[dict[str, Any], ...] = ()
    decisions: tuple[dict[str, Any], ...] = ()
    vias: tuple[str, ...] = ()  # "patch" or "schedule", per decision
    playing: bool = False
    speed: int = DEFAULT_SPEED
    ended: Ended | None = None

    @property
    def generation(self) -> int:
        """The latest generation (-1 before the setup)."""
        return len(self.frames) - 1

    @property
    def due(self) -> tuple[dict[str, Any], ...]:
        """Decisions accepted since the last generation, for the next step."""
        handed = len(self.engine.decisions) if self.engine is not None else 0
        return self.decisions[handed:]

    @property
    def graph(self) -> dict[str, Any]:
        """The current rule graph."""
        assert self.engine is not None
        return self.engine.graph


def initial(name: str) -> Run:
    """A run that was never created."""
    return Run(name)


def run_seed(state: Run) -> int:
    """The world's seed for `ctx.rng`: from the run's name, so runs draw apart."""
    return int.from_bytes(hashlib.sha256(state.name.encode()).digest()[:8], "big")


def evolve(state: Run, event: Event) -> Run:
    """The state after one event (a decoded `Generated` steps the engine again)."""
    state = attrs.evolve(state, rev=state.rev + 1)
    if isinstance(event, SetUp):
        return attrs.evolve(state, setup=event)
    if isinstance(event, Generated):
        engine = event.engine
        if engine is None:
            assert state.setup is not None
            engine = (step(state.engine, state.due)[0] if state.engine is not None else
                      start(state.setup.config, state.setup.graph, state.setup.seed,
                            state.setup.size))
        return attrs.evolve(state, engine=engine, frames=state.frames + (event.frame,))
    if isinstance(event, Patched | Scheduled):
        via = "patch" if isinstance(event, Patched) else "schedule"
        return attrs.evolve(state, decisions=state.decisions + (event.decision,),
                            vias=state.vias + (via,))
    if isinstance(event, Controlled):
        return attrs.evolve(state, playing=event.playing, speed=event.speed)
    return attrs.evolve(state, ended=event, playing=False)


# ---------------------------------------------------------------- pure effects' halves


def setup_events(answers: dict[str, str], interpretation: Interpretation, owner: str,
                 seed: int, size: int) -> list[Event] | Refusal:
    """The first events of a run from an interpretation of its answers: `SetUp` and
    generation 0. A blocked interpretation (the fidelity review did not approve) is
    refused with its finite review focus."""
    if interpretation.status == "blocked":
        return Refusal(EcosystemCode.SETUP_BLOCKED,
                       "the model's fidelity review did not approve this setup",
                       {"review_focus": interpretation.review_focus,
                        "failure": interpretation.failure})
    assert interpretation.config is not None and interpretation.source is not None
    engine = start(interpretation.config, interpretation.graph, seed, size)
    setup = SetUp(owner, answers, hash_setup_request(answers), engine.config, engine.graph,
                  config_hash(engine.config, engine.graph), interpretation.source, seed, size,
                  interpretation.failure, interpretation.named_intent, interpretation.calls)
    return [setup, Generated(engine.frame, engine)]


def advance(state: Run) -> list[Event]:
    """One generation: its frame and, at 180, the end. Nothing once ended (or before the
    setup). The generation timer of `actor.py` folds this on every tick while playing."""
    if state.engine is None or state.ended is not None:
        return []
    engine, frame = step(state.engine, state.due)
    events: list[Event] = [Generated(frame, engine)]
    if frame["generation"] == MAX_GENERATION:
        assert state.setup is not None
        events.append(Ended(breakdown(frame, state.setup.config["fitness"]),
                            reflection(state.frames + (frame,), state.decisions, state.vias)))
    return events


# ---------------------------------------------------------------- moves


def _guard(state: Run, ctx: Ctx) -> Refusal | None:
    """The refusals every owner's write shares: no run, not the owner, ended."""
    if state.setup is None:
        return Refusal(ErrorCode.UNKNOWN_ACTOR, "this run has not been created")
    if ctx.caller.name != state.setup.owner:
        return Refusal(ErrorCode.FORBIDDEN, "only the run's owner may do this",
                       {"owner": state.setup.owner})
    if state.ended is not None:
        return Refusal(EcosystemCode.RUN_ENDED, f"the run ended at generation {MAX_GENERATION}")
    return None


def _decision_guard(state: Run, ctx: Ctx) -> Refusal | None:
    refusal = _guard(state, ctx)
    if refusal is None and len(state.decisions) >= MAX_DECISIONS:
        return Refusal(EcosystemCode.TOO_MANY_DECISIONS,
                       f"a run holds at most {MAX_DECISIONS} decisions")
    return refusal


def _patch(value: ops.RulePatch) -> dict[str, str]:
    return {k: v for k, v in attrs.asdict(value).items() if v is not None}


def decide_create(state: Run, args: ops.CreateArgs, ctx: Ctx) -> list[Event] | Refusal:
    """Set the run up with the deterministic setup (labelled as the fallback)."""
    if state.setup is not None:
        return Refusal(ErrorCode.ALREADY_EXISTS, "this run exists")
    try:
        answers = canonical_answers(attrs.asdict(args.answers))
    except EcosystemError as err:
        return Refusal(EcosystemCode.INVALID_ANSWERS, err.message, {"path": err.path})
    seed = args.seed if args.seed is not None else int(
        ctx.rng.integers(0, MAX_SEED, endpoint=True))
    # Effect (actor.py): with a model configured, `ModelInterpreter` runs off the task and
    # its Interpretation replaces this one.
    return setup_events(answers, DeterministicInterpreter().interpret(answers),
                        ctx.caller.name, seed, args.size)


def decide_control(state: Run, args: ops.ControlArgs, ctx: Ctx) -> list[Event] | Refusal:
    """Play, pause or step (one generation, then paused); the speed rides along."""
    refusal = _guard(state, ctx)
    if refusal is not None:
        return refusal
    speed = args.speed if args.speed is not None else state.speed
    playing = args.action == "play"
    events: list[Event] = []
    if (playing, speed) != (state.playing, state.speed):
        events.append(Controlled(args.action, playing, speed))
    if args.action == "step":
        events += advance(state)
    # Effect (actor.py): after a Controlled event the actor (re)arms or stops its timer.
    return events


def decide_patch(state: Run, args: ops.PatchArgs, ctx: Ctx) -> list[Event] | Refusal:
    """A RulePatch for the next generation, if it keeps every invariant of the current
    graph and the graph is still at the version the caller decided against."""
    refusal = _decision_guard(state, ctx)
    if refusal is not None:
        return refusal
    patch = _patch(args.patch)
    try:
        apply_patch(state.graph, patch)
    except EcosystemError as err:
        return Refusal(EcosystemCode.INVALID_PATCH, err.message, {"path": err.path})
    version = state.graph["version"]
    detail: dict[str, Any] = {"graph_version": version,
                              "expected_graph_version": args.expected_graph_version}
    if args.expected_graph_version != version:
        return Refusal(EcosystemCode.STALE_GRAPH_VERSION,
                       f"the graph is at version {version}, not "
                       f"{args.expected_graph_version}", detail)
    waiting = [k for k, via in enumerate(state.vias) if via == "patch"
               and k >= len(state.decisions) - len(state.due)]
    if waiting:  # it lands first and moves the version this patch was decided against
        return Refusal(EcosystemCode.STALE_GRAPH_VERSION,
                       f"patch {waiting[0]} lands at the next generation first",
                       {**detail, "pending_patch": waiting[0]})
    g = state.generation
    return [Patched(validate_decision({"generation": g, "graphVersion": version, "change": {
        "generation": g + 1, "activation": "immediate", "duration": "persistent",
        "transition": "abrupt", "patch": patch}}))]


def decide_schedule(state: Run, args: ops.ScheduleArgs, ctx: Ctx) -> list[Event] | Refusal:
    """A scheduled change, carrying the graph's version now as its evidence."""
    refusal = _decision_guard(state, ctx)
    if refusal is not None:
        return refusal
    c = args.change
    value = {"generation": c.generation, "activation": c.activation, "duration": c.duration,
             "transition": c.transition, "patch": _patch(c.patch)}
    try:
        change = validate_change(value)
        validate_patch(change["patch"], state.graph)
    except EcosystemError as err:
        code = (EcosystemCode.INVALID_PATCH if err.code == "invalid_patch"
                else EcosystemCode.INVALID_CHANGE)
        return Refusal(code, err.message, {"path": err.path})
    g = state.generation
    if change["generation"] < g:
        return Refusal(EcosystemCode.INVALID_CHANGE,
                       f"Invalid scheduled change: change.generation must not precede the "
                       f"run's generation {g}", {"path": "change.generation"})
    return [Scheduled({"generation": g, "graphVersion": state.graph["version"],
                       "change": change})]


# ---------------------------------------------------------------- replies and reads


def run_info(state: Run, *_: Any) -> ops.RunInfo:
    """The reply of `create`."""
    assert state.setup is not None
    s = state.setup
    return ops.RunInfo(state.generation, s.source, s.answers_hash, s.config_hash, s.seed,
                       state.graph["version"], s.failure)


def control_result(state: Run, *_: Any) -> ops.ControlResult:
    """The reply of `control`."""
    return ops.ControlResult(state.playing, state.speed, state.generation,
                             state.ended is not None)


def decision_result(state: Run, *_: Any) -> ops.DecisionResult:
    """The reply of `patch` and `schedule`: the decision just accepted."""
    decision = state.decisions[-1]
    return ops.DecisionResult(len(state.decisions) - 1, decision["generation"],
                              decision["graphVersion"],
                              max(decision["change"]["generation"], decision["generation"] + 1))


def view(state: Run) -> dict[str, Any]:
    """What spectators see: setup, graph, the latest frame, decisions, controls, the end."""
    if state.setup is None:
        return {"created": False}
    s = state.setup
    return {"created": True, "generation": state.generation, "playing": state.playing,
            "speed": state.speed, "owner": s.owner,
            "setup": {"source": s.source, "answers": s.answers, "answers_hash": s.answers_hash,
                      "config_hash": s.config_hash, "seed": s.seed, "size": s.size,
                      "failure": s.failure, "named_intent": s.named_intent},
            "config": s.config, "graph": state.graph, "graph_version": state.graph["version"],
            "frame": state.frames[-1],
            "decisions": [{"decision": k, "via": via, **d} for k, (d, via) in
                          enumerate(zip(state.decisions, state.vias, strict=True))],
            "end": None if state.ended is None else attrs.asdict(state.ended)}


def answer_view(state: Run, _args: ops.ViewArgs, _ctx: Ctx) -> ops.RunView:
    """The `view` read."""
    return ops.RunView(view(state))


def answer_history(state: Run, args: ops.HistoryArgs, _ctx: Ctx) -> ops.Frame | Refusal:
    """The frame of an earlier generation."""
    if state.setup is None:
        return Refusal(ErrorCode.UNKNOWN_ACTOR, "this run has not been created")
    if args.generation > state.generation:
        return Refusal(EcosystemCode.NOT_REACHED,
                       f"the run is at generation {state.generation}",
                       {"generation": state.generation})
    return ops.Frame(state.frames[args.generation])


WORLD = World(
    kind="ecosystem",
    initial=initial,
    evolve=evolve,
    codec=Codec(lambda event, _after: encode(event), decode),
    view=view,
    ops=ops.OPS,
    moves={"ecosystem.create": Move(decide_create, run_info, purpose=SEED_PURPOSE),
           "ecosystem.control": Move(decide_control, control_result),
           "ecosystem.patch": Move(decide_patch, decision_result),
           "ecosystem.schedule": Move(decide_schedule, decision_result)},
    reads={"ecosystem.view": Read(answer_view), "ecosystem.history": Read(answer_history)},
    create="ecosystem.create",
    create_role="agent",
    codes=EcosystemCode,
    seed=run_seed,
)
