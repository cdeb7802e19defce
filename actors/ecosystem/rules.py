"""The run world, `ecosystem:<run id>`, as one `World` value. Pure.

A run is created from three answers (the caller becomes its owner), starts at generation
0 and advances one generation per `advance` up to 180, where it ends with the score
breakdown and the reflection. Its owner plays, pauses and steps it, patches its rule graph
for the next generation (with graph-version evidence) and schedules changes; anyone may
view it and read any generation it reached.

The effects live in the run's actor (`actor.py`), never here: the generation timer (each
tick folds `advance(state, t)` while playing), the model setup (network I/O off the task:
`prepare_create` checks the call, the model's `Interpretation` goes to `setup_events` in
place of the deterministic one `decide_create` uses; meanwhile `setting_up` holds the
request in memory) and the model's phrasing of the reflection (a `Phrased` event).

A stored `generation` event folds by stepping the engine again (a decided one carries the
stepped engine): a restart re-simulates the run from its setup, at most 180 generations,
and refuses a stream whose digests the engine no longer reproduces.
"""

from __future__ import annotations

import hashlib
from typing import Any

import attrs

from actors.ecosystem.density import Coarse, coarse, density_frame, spectator_side
from actors.ecosystem.engine import MAX_SEED, RunState, start, step
from actors.ecosystem.errors import EcosystemError
from actors.ecosystem.events import (
    Controlled,
    Ended,
    Event,
    Generated,
    Patched,
    Phrased,
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
class PendingSetup:
    """A create the model is interpreting: canonical answers, owner, engine seed, size."""

    answers: dict[str, str]
    owner: str
    seed: int
    size: int


@attrs.frozen
class Run:
    """The folded state: setup, the engine at the latest generation, every frame, the
    accepted decisions (and how each came), the controls, the end and its phrasing; for
    history, each graph version and a coarse picture of every generation.

    `setting_up` (a create the model is interpreting) and `blocked` (the last setup the
    fidelity review did not approve) are kept in memory only, by the actor."""

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
    phrasing: Phrased | None = None
    graphs: dict[int, dict[str, Any]] = attrs.field(factory=dict, eq=False, repr=False)
    densities: tuple[Coarse, ...] = attrs.field(default=(), eq=False, repr=False)
    setting_up: PendingSetup | None = None
    blocked: dict[str, Any] | None = None

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


def refold(state: Run, frame: dict[str, Any]) -> RunState:
    """The engine after a stored generation, simulated again from the state before it; an
    `invalid_record` EcosystemError when its digest is not the stored frame's (the engine
    no longer reproduces the stream: the run cannot go on exactly)."""
    assert state.setup is not None
    s = state.setup
    engine = (step(state.engine, state.due)[0] if state.engine is not None else
              start(s.config, s.graph, s.seed, s.size))
    if engine.frame["digest"] != frame.get("digest"):
        g = engine.generation
        raise EcosystemError("invalid_record", f"Invalid run record: generation {g} simulates "
                             f"to digest {engine.frame['digest']}, the stream holds "
                             f"{frame.get('digest')}", f"frames[{g}].digest")
    return engine


def evolve(state: Run, event: Event) -> Run:
    """The state after one event (a decoded `Generated` steps the engine again)."""
    state = attrs.evolve(state, rev=state.rev + 1)
    if isinstance(event, SetUp):
        return attrs.evolve(state, setup=event, setting_up=None, blocked=None)
    if isinstance(event, Generated):
        engine = event.engine if event.engine is not None else refold(state, event.frame)
        version = engine.graph["version"]
        graphs = state.graphs if version in state.graphs else {**state.graphs,
                                                               version: engine.graph}
        return attrs.evolve(state, engine=engine, frames=state.frames + (event.frame,),
                            graphs=graphs, densities=state.densities + (coarse(engine),))
    if isinstance(event, Patched | Scheduled):
        via = "patch" if isinstance(event, Patched) else "schedule"
        return attrs.evolve(state, decisions=state.decisions + (event.decision,),
                            vias=state.vias + (via,))
    if isinstance(event, Controlled):
        return attrs.evolve(state, playing=event.playing, speed=event.speed)
    if isinstance(event, Phrased):
        return attrs.evolve(state, phrasing=event)
    return attrs.evolve(state, ended=event, playing=False)


# ---------------------------------------------------------------- pure effects' halves


def setup_events(answers: dict[str, str], interpretation: Interpretation, owner: str,
                 seed: int, size: int, t: int | None = None) -> list[Event] | Refusal:
    """The first events of a run from an interpretation of its answers: `SetUp` and
    generation 0 (made at `t`). A blocked interpretation (the fidelity review did not
    approve) is refused with its finite review focus, its failure and named intent."""
    if interpretation.status == "blocked":
        return Refusal(EcosystemCode.SETUP_BLOCKED,
                       "the model's fidelity review did not approve this setup",
                       {"review_focus": interpretation.review_focus,
                        "failure": interpretation.failure,
                        "named_intent": interpretation.named_intent,
                        "calls": interpretation.calls})
    assert interpretation.config is not None and interpretation.source is not None
    engine = start(interpretation.config, interpretation.graph, seed, size)
    setup = SetUp(owner, answers, hash_setup_request(answers), engine.config, engine.graph,
                  config_hash(engine.config, engine.graph), interpretation.source, seed, size,
                  interpretation.failure, interpretation.named_intent, interpretation.calls)
    return [setup, Generated(engine.frame, t, engine)]


def advance(state: Run, t: int | None = None) -> list[Event]:
    """One generation (made at `t`): its frame and, at 180, the end. Nothing once ended
    (or before the setup). The generation timer of `actor.py` folds this on every tick
    while playing."""
    if state.engine is None or state.ended is not None:
        return []
    engine, frame = step(state.engine, state.due)
    events: list[Event] = [Generated(frame, t, engine)]
    if frame["generation"] == MAX_GENERATION:
        assert state.setup is not None
        events.append(Ended(breakdown(frame, state.setup.config["fitness"]),
                            reflection(state.frames + (frame,), state.decisions, state.vias)))
    return events


# ---------------------------------------------------------------- moves


def unready(state: Run) -> Refusal | None:
    """No run yet: being set up by the model, or never created."""
    if state.setup is not None:
        return None
    if state.setting_up is not None:
        return Refusal(EcosystemCode.SETTING_UP, "the model is interpreting this run's "
                       "answers; its setup follows")
    return Refusal(ErrorCode.UNKNOWN_ACTOR, "this run has not been created")


def _guard(state: Run, ctx: Ctx) -> Refusal | None:
    """The refusals every owner's write shares: no run, not the owner, ended."""
    if (refusal := unready(state)) is not None:
        return refusal
    assert state.setup is not None
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


def prepare_create(state: Run, args: ops.CreateArgs, ctx: Ctx) -> PendingSetup | Refusal:
    """A create's checks and its engine seed (drawn from the run's generator unless
    given), before any interpretation."""
    if state.setup is not None:
        return Refusal(ErrorCode.ALREADY_EXISTS, "this run exists")
    if state.setting_up is not None:
        return Refusal(ErrorCode.ALREADY_EXISTS, "this run is being set up")
    try:
        answers = canonical_answers(attrs.asdict(args.answers))
    except EcosystemError as err:
        return Refusal(EcosystemCode.INVALID_ANSWERS, err.message, {"path": err.path})
    seed = args.seed if args.seed is not None else int(
        ctx.rng.integers(0, MAX_SEED, endpoint=True))
    return PendingSetup(answers, ctx.caller.name, seed, args.size)


def decide_create(state: Run, args: ops.CreateArgs, ctx: Ctx) -> list[Event] | Refusal:
    """Set the run up with the deterministic setup (labelled as the fallback). With a
    model configured the actor's create effect interprets the answers instead."""
    pending = prepare_create(state, args, ctx)
    if isinstance(pending, Refusal):
        return pending
    return setup_events(pending.answers, DeterministicInterpreter().interpret(pending.answers),
                        pending.owner, pending.seed, pending.size, ctx.t)


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
        events += advance(state, ctx.t)
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
                              decision["graphVersion"],
                              max(decision["change"]["generation"], decision["generation"] + 1))


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
            "decisions": [{"decision": k, "via": via, **d} for k, (d, via) in
                          enumerate(zip(state.decisions, state.vias, strict=True))],
            "end": None if state.ended is None else attrs.asdict(state.ended),
            "phrasing": None if state.phrasing is None else attrs.asdict(state.phrasing)}


def answer_view(state: Run, _args: ops.ViewArgs, _ctx: Ctx) -> ops.RunView:
    """The `view` read."""
    return ops.RunView(view(state))


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
