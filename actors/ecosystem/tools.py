"""The ecosystem's MCP tools: runs an agent can create, watch and steer over `/mcp`.

`create_run`, `view_run`, `run_history`, `control_run`, `patch_run`, `schedule_change`.
Each is the run's websocket op underneath (server/mcp.py hosts them and sends the ops as
the caller), so the same rules, bounds, refusals (`stale_graph_version`, `forbidden`,
`invalid_patch`, ...) and durability apply. Results are one line of text and the payload
once, as `structuredContent`; the views leave out the density fields (pictures for pages:
an agent reads the frames).

Identity: a caller with a token is its token's name and owns the runs it creates. An
anonymous caller (an open server) is nobody between calls, so `create_run` hands it the run
id with a key, `<run>~<key>`: carrying that id is what makes its later `control_run`,
`patch_run` and `schedule_change` calls the owner's. Reads take either form.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from actors.world import KEYED_NAME, Refusal, Tool, ToolCall, ToolResult, with_keywords
from protocol.bounds import bounded
from protocol.envelope import ACTOR_ID_RE
from protocol.errors import ErrorCode
from protocol.ops import ecosystem as ops

KEY_SEP = "~"  # an anonymous caller's run id: <run>~<key>
MAX_RUN_ID = 120  # a uuid, the separator and a key
NO_RUN = ("run_id", "there is no such run; create_run makes one")
RUN_ID = "The run id create_run answered (with its key, for an anonymous caller)."


@attrs.frozen
class CreateRunArgs:
    """Create a run from three answers."""

    world: str = bounded(length=ops.MAX_RAW_ANSWER)
    threat: str = bounded(length=ops.MAX_RAW_ANSWER)
    reward: str = bounded(length=ops.MAX_RAW_ANSWER)
    seed: int | None = bounded(None, lo=0, hi=ops.MAX_SEED)
    size: int = bounded(32, lo=16, hi=64)


@attrs.frozen
class RunArgs:
    """A run."""

    run_id: str = bounded(length=MAX_RUN_ID)


@attrs.frozen
class HistoryToolArgs:
    """Frames of a run from a generation on."""

    run_id: str = bounded(length=MAX_RUN_ID)
    generation: int = bounded(0, lo=0, hi=ops.MAX_GENERATION)
    count: int = bounded(ops.MAX_FRAMES, lo=1, hi=ops.MAX_FRAMES)


@attrs.frozen
class ControlRunArgs:
    """Play, pause or step a run."""

    run_id: str = bounded(length=MAX_RUN_ID)
    action: Literal["play", "pause", "step"]
    speed: int | None = bounded(None, lo=ops.MIN_SPEED, hi=ops.MAX_SPEED)


@attrs.frozen
class PatchRunArgs:
    """Patch a run's rule graph for the next generation."""

    run_id: str = bounded(length=MAX_RUN_ID)
    patch: ops.RulePatch
    expected_graph_version: int = bounded(lo=1, hi=ops.MAX_GRAPH_VERSION)


@attrs.frozen
class ScheduleChangeArgs:
    """Schedule a change of a run's rule graph."""

    run_id: str = bounded(length=MAX_RUN_ID)
    change: ops.Change


def _run(call: ToolCall, run_id: str) -> tuple[str, str | None] | Refusal:
    """(the run's actor id, the caller name a keyed id speaks as)."""
    name, sep, key = run_id.partition(KEY_SEP)
    actor = f"ecosystem:{name}"
    if not ACTOR_ID_RE.match(actor) or (sep and not key):
        return Refusal(ErrorCode.BAD_REQUEST, "run_id: the id create_run answered",
                       {"path": "run_id"})
    return actor, call.keyed(key) if key else None


def _lean(view: dict[str, Any]) -> dict[str, Any]:
    """A view without its density pictures."""
    return {k: v for k, v in view.items() if k != "density"}


def _figures(frame: dict[str, Any]) -> str:
    parts = [f"{sid} {b:g}{'' if frame['alive'][sid] else ' (extinct)'}"
             for sid, b in frame["biomass"].items()]
    return (f"generation {frame['generation']}: biomass {', '.join(parts)}; resource "
            f"{frame['resource']:g}; score {frame['score']['total']:g}; graph version "
            f"{frame['graphVersion']}")


async def create_run(call: ToolCall, a: CreateRunArgs) -> ToolResult | Refusal:
    """Create a run under a new uuid (its owner: this caller, or the key it is handed)."""
    name = call.fresh_id()
    key, caller = call.key() if call.anonymous else (None, None)
    info = await call.ask(f"ecosystem:{name}", "ecosystem.create", ops.CreateArgs(
        ops.Answers(a.world, a.threat, a.reward), a.seed, a.size), caller=caller)
    run_id = name if key is None else f"{name}{KEY_SEP}{key}"
    if info.status == "setting_up":
        how = "the model is setting it up (view_run shows when it is ready)"
    else:
        how = f"set up ({info.source}), at generation 0, graph version {info.graph_version}"
    return ToolResult(f"Created run {run_id}: {how}. Carry run_id {run_id} on control_run, "
                      "patch_run and schedule_change; control_run play starts it.",
                      {"run_id": run_id, **attrs.asdict(info)})


async def view_run(call: ToolCall, a: RunArgs) -> ToolResult | Refusal:
    """The run as spectators see it (no density pictures) and the patch vocabulary."""
    target = _run(call, a.run_id)
    if isinstance(target, Refusal):
        return target
    result = await call.ask(target[0], "ecosystem.view", ops.ViewArgs())
    view = result.view
    if not view["created"]:
        state = "blocked by the fidelity review" if view["blocked"] else (
            "being set up by the model" if view["setting_up"] else "not created")
        return ToolResult(f"Run {a.run_id} is {state}.", {"view": view})
    play = ("ended" if view["end"] else
            f"playing at {view['speed']}/s" if view["playing"] else "paused")
    return ToolResult(f"Run {a.run_id} ({play}), {_figures(view['frame'])}; "
                      f"{len(view['decisions'])} decisions.",
                      {"view": _lean(view), "vocabulary": result.vocabulary})


async def run_history(call: ToolCall, a: HistoryToolArgs) -> ToolResult | Refusal:
    """Frames from a generation on, and the graph in force at it."""
    target = _run(call, a.run_id)
    if isinstance(target, Refusal):
        return target
    h = await call.ask(target[0], "ecosystem.history", ops.HistoryArgs(a.generation, a.count))
    last = h.frames[-1]
    return ToolResult(f"{len(h.frames)} frames of run {a.run_id}, generations {a.generation} to "
                      f"{last['generation']}; the last: {_figures(last)}.",
                      {"frames": h.frames, "graph": h.graph})


async def control_run(call: ToolCall, a: ControlRunArgs) -> ToolResult | Refusal:
    """Play, pause or step (owner only)."""
    target = _run(call, a.run_id)
    if isinstance(target, Refusal):
        return target
    r = await call.ask(target[0], "ecosystem.control", ops.ControlArgs(a.action, a.speed),
                       caller=target[1])
    state = "ended" if r.ended else f"playing at {r.speed}/s" if r.playing else "paused"
    return ToolResult(f"Run {a.run_id} is {state}, at generation {r.generation}.",
                      attrs.asdict(r))


async def patch_run(call: ToolCall, a: PatchRunArgs) -> ToolResult | Refusal:
    """A RulePatch for the next generation, with graph-version evidence (owner only)."""
    target = _run(call, a.run_id)
    if isinstance(target, Refusal):
        return target
    r = await call.ask(target[0], "ecosystem.patch", ops.PatchArgs(
        a.patch, a.expected_graph_version), caller=target[1])
    return ToolResult(f"Decision {r.decision} accepted at generation {r.generation} against "
                      f"graph version {r.graph_version}: it lands at generation "
                      f"{r.from_generation}.", attrs.asdict(r))


async def schedule_change(call: ToolCall, a: ScheduleChangeArgs) -> ToolResult | Refusal:
    """A scheduled change, its evidence the graph's version now (owner only)."""
    target = _run(call, a.run_id)
    if isinstance(target, Refusal):
        return target
    r = await call.ask(target[0], "ecosystem.schedule", ops.ScheduleArgs(a.change),
                       caller=target[1])
    return ToolResult(f"Decision {r.decision} scheduled at generation {r.generation} against "
                      f"graph version {r.graph_version}: it may fire from generation "
                      f"{r.from_generation}.", attrs.asdict(r))


TOOLS = (
    Tool("create_run", "Create an ecosystem run",
         "Create a LifePot run from three answers (world, threat, reward; each at most 140 "
         "characters after trimming): the model sets it up when the server has one, else the "
         "labelled deterministic setup. You own it; it starts paused at generation 0.",
         CreateRunArgs, create_run, role="agent",
         describe={"world": "The world the species live in.",
                   "threat": "What threatens them.", "reward": "What counts as doing well.",
                   "seed": "The engine seed (default: drawn).", "size": "Grid side, 16..64."}),
    Tool("view_run", "View a run",
         "The run: setup (source label, answers, failure), config, rule graph and version, "
         "the latest frame, decisions, controls, the end; and the patch vocabulary.",
         RunArgs, view_run, describe={"run_id": RUN_ID}, unknown=NO_RUN),
    Tool("run_history", "A run's frames",
         "Frames (per-species biomass and population, resource, events) from a generation "
         "on, and the rule graph in force at that generation.",
         HistoryToolArgs, run_history, describe={
             "run_id": RUN_ID, "generation": "The first frame's generation (default 0).",
             "count": "How many frames, 1..181 (default 181: every one the run has made)."},
         unknown=NO_RUN),
    Tool("control_run", "Play, pause or step a run",
         "Owner: play (at speed 1..30 generations a second), pause, or step one generation.",
         ControlRunArgs, control_run, role="agent", describe={
             "run_id": RUN_ID, "action": "play, pause, or step one generation (then paused).",
             "speed": "Generations a second, 1..30 (default: the run's, 10 at first)."},
         unknown=NO_RUN),
    Tool("patch_run", "Patch a run's rule graph",
         "Owner: a RulePatch for the next generation ({kind: pair, pair, mode} | {kind: self, "
         "species, value} | {kind: environment, field, value}) with the graph version you "
         "decided against; a stale version is refused and changes nothing.",
         PatchRunArgs, patch_run, role="agent", describe={
             "run_id": RUN_ID, "expected_graph_version": "The graph version (view_run's "
             "graph_version) you decided against."}, unknown=NO_RUN),
    Tool("schedule_change", "Schedule a rule change",
         "Owner: a change {generation, activation, duration, transition, patch} that fires "
         "when its trigger is due, if the graph is still at today's version.",
         ScheduleChangeArgs, schedule_change, role="agent", describe={"run_id": RUN_ID},
         unknown=NO_RUN),
)
TOOLS = with_keywords(TOOLS, {"run_id": {"pattern": KEYED_NAME}})
