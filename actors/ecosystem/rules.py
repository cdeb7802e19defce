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

The state and its fold are in `state.py`, the replies and reads in `reads.py`.
"""

from __future__ import annotations

from typing import Any

import attrs

from actors.ecosystem.engine import start, step
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
from actors.ecosystem.reads import (
    answer_history,
    answer_view,
    control_result,
    decision_result,
    run_info,
    view,
)
from actors.ecosystem.reflect import breakdown, reflection
from actors.ecosystem.schedule import (
    MAX_DECISIONS,
    MAX_GENERATION,
    first_generation,
    validate_change,
    validate_decision,
)
from actors.ecosystem.setup import canonical_answers, hash_setup_request
from actors.ecosystem.snapshot import dump, load
from actors.ecosystem.state import PendingSetup, Run, evolve, initial, run_seed, unready
from actors.ecosystem.tools import TOOLS
from actors.world import Codec, Ctx, Move, Read, Refusal, StateCodec, World
from protocol.convert import unstructure
from protocol.errors import ErrorCode
from protocol.ops import ecosystem as ops
from protocol.ops.ecosystem import EcosystemCode

SEED_PURPOSE = 1  # `ctx.rng` purpose: the engine seed drawn at create
MAX_CONTROLS = 1000  # stored controls of one run (its stream, and export, stay bounded)
# Events between snapshots: a stored generation is simulated again to fold it (~0.5 ms at
# 64 x 64), so a whole run (183 events) loads in 10-34 ms from one, against 217-256 ms.
SNAPSHOT_EVERY = 60


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
                  interpretation.failure, interpretation.named_intent, interpretation.calls,
                  engine.cache.model)
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


def _under(root: str, path: str) -> str:
    """An engine error's path (inside a patch) as a path of the op's args."""
    return f"{root}.{path}" if path else root


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
        ctx.rng.integers(0, ops.MAX_SEED, endpoint=True))
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
        # Past the bound the owner may still pause (once: playing again is refused) and step.
        if state.controls >= MAX_CONTROLS and (playing or not state.playing):
            return Refusal(EcosystemCode.TOO_MANY_CONTROLS,
                           f"a run stores at most {MAX_CONTROLS} controls; it may still pause "
                           "and step")
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
    patch = unstructure(args.patch)  # (its unset fields left out)
    try:
        apply_patch(state.graph, patch)
    except EcosystemError as err:  # (an invariant the patched graph breaks: the patch's)
        where = err.path if err.code == "invalid_patch" else ""
        return Refusal(EcosystemCode.INVALID_PATCH, err.message,
                       {"path": _under("args.patch", where)})
    version = state.graph["version"]
    detail: dict[str, Any] = {"graph_version": version,
                              "expected_graph_version": args.expected_graph_version}
    if args.expected_graph_version != version:
        return Refusal(EcosystemCode.STALE_GRAPH_VERSION,
                       f"the graph is at version {version}, not "
                       f"{args.expected_graph_version}", detail)
    # Patches accepted at this generation land first, in order, against this graph: the
    # first that changes it moves the version this patch was decided against (one that
    # changes nothing keeps it, and every later one is stale then).
    moving = next((k for k, via in enumerate(state.vias) if via == "patch"
                   and k >= len(state.decisions) - len(state.due)
                   and apply_patch(state.graph, state.decisions[k]["change"]["patch"])[1]),
                  None)
    if moving is not None:
        return Refusal(EcosystemCode.STALE_GRAPH_VERSION,
                       f"patch {moving} lands at the next generation first",
                       {**detail, "pending_patch": moving})
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
             "transition": c.transition, "patch": unstructure(c.patch)}
    try:
        change = validate_change(value)
        validate_patch(change["patch"], state.graph)
    except EcosystemError as err:
        if err.code == "invalid_patch":  # (a patch's paths are the patch's own)
            return Refusal(EcosystemCode.INVALID_PATCH, err.message,
                           {"path": _under("args.change.patch", err.path)})
        return Refusal(EcosystemCode.INVALID_CHANGE, err.message, {"path": _under("args", err.path)})
    g = state.generation
    if change["generation"] < g:
        return Refusal(EcosystemCode.INVALID_CHANGE,
                       f"Invalid scheduled change: change.generation must not precede the "
                       f"run's generation {g}", {"path": "args.change.generation"})
    decision = {"generation": g, "graphVersion": state.graph["version"], "change": change}
    first = first_generation(decision)
    if first > MAX_GENERATION:  # it could never fire: the run ends first
        return Refusal(EcosystemCode.INVALID_CHANGE,
                       f"Invalid scheduled change: it could first fire at generation {first}, "
                       f"after the run's last, {MAX_GENERATION}",
                       {"path": "args.change", "from_generation": first})
    return [Scheduled(decision)]


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
    snapshot=StateCodec(dump, load, every=SNAPSHOT_EVERY),
    tools=TOOLS,
)
