"""Ops of the ecosystem ("LifePot") runs, `ecosystem:<run id>`, and their world error codes.

`create` (agent) sets a run up from three answers; the caller who created it is its
owner, and only the owner may `control`, `patch` or `schedule` it (others: `forbidden`).
`view` and `history` are spectators' reads. A run has generations 0..180 and ends at 180.
With a model configured, `create` answers `setting_up` at once and the setup event follows
when the model's interpretation (or its labelled fallback) is back.

Every field a client sends is bounded. Answers are checked here only for size (1024
characters, room for the whitespace the seed trims); the seed's own rule (trimmed,
nonempty, at most 140 characters) is the run's, refused with `invalid_answers` and the
seed's message. Patches and changes are checked against the seed's vocabularies by the run
(`invalid_patch`, `invalid_change`), so the vocabularies have one home: the engine.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

import attrs

from protocol.bounds import bounded
from protocol.convert import absent_not_null
from protocol.errors import register_world_codes
from protocol.registry import OpSpec

MAX_GENERATION = 180
MAX_SEED = 2**53 - 1  # a seed a JavaScript client holds exactly (the engine takes up to 2^63-1)
MAX_RAW_ANSWER = 1024  # characters before trimming; the seed allows 140 after
MAX_WORD = 40  # a vocabulary word, species id or pair in a patch
MIN_SPEED, MAX_SPEED = 1, 30  # generations a second
MAX_GRAPH_VERSION = 10**6
MAX_FRAMES = MAX_GENERATION + 1  # frames one history read may return


@register_world_codes
class EcosystemCode(StrEnum):
    """World codes a run answers with, beyond the protocol's own (see docs/ecosystem.md)."""

    INVALID_ANSWERS = "invalid_answers"  # the answers break the seed's schema
    SETTING_UP = "setting_up"  # the model is interpreting the run's answers; not ready yet
    SETUP_BLOCKED = "setup_blocked"  # the model's fidelity review did not approve the setup
    INVALID_PATCH = "invalid_patch"  # a word outside the vocabularies, a missing target or
    # a broken invariant (a malformed shape is bad_request at the converter)
    INVALID_CHANGE = "invalid_change"  # a scheduled change breaks the seed's schema
    STALE_GRAPH_VERSION = "stale_graph_version"  # expected_graph_version is not the graph's
    TOO_MANY_DECISIONS = "too_many_decisions"  # the run holds its maximum of decisions
    TOO_MANY_CONTROLS = "too_many_controls"  # the run stored its maximum of controls
    RUN_ENDED = "run_ended"  # the run reached generation 180
    NOT_REACHED = "generation_not_reached"  # history of a generation the run has not reached


@attrs.frozen
class Answers:
    """The three setup answers (the seed: each trimmed, nonempty, at most 140 characters)."""

    world: str = bounded(length=MAX_RAW_ANSWER)
    threat: str = bounded(length=MAX_RAW_ANSWER)
    reward: str = bounded(length=MAX_RAW_ANSWER)


@attrs.frozen
class CreateArgs:
    """Set a run up from the answers; `seed` (default: drawn) and `size` (grid side)."""

    answers: Answers
    seed: int | None = bounded(None, lo=0, hi=MAX_SEED)
    size: int = bounded(64, lo=16, hi=64)


@absent_not_null
@attrs.frozen
class RulePatch:
    """One of {kind: pair, pair, mode}, {kind: self, species, value} or
    {kind: environment, field, value} (the seed's RulePatch; other fields absent, never
    null)."""

    kind: str = bounded(length=MAX_WORD)
    pair: str | None = bounded(None, length=MAX_WORD)
    mode: str | None = bounded(None, length=MAX_WORD)
    species: str | None = bounded(None, length=MAX_WORD)
    field: str | None = bounded(None, length=MAX_WORD)
    value: str | None = bounded(None, length=MAX_WORD)


@attrs.frozen
class ControlArgs:
    """play | pause | step (one generation, then paused); `speed` 1..30 generations a second."""

    action: Literal["play", "pause", "step"]
    speed: int | None = bounded(None, lo=MIN_SPEED, hi=MAX_SPEED)


@attrs.frozen
class PatchArgs:
    """A RulePatch for the next generation, with the graph version it was decided against."""

    patch: RulePatch
    expected_graph_version: int = bounded(lo=1, hi=MAX_GRAPH_VERSION)


@attrs.frozen
class Change:
    """A scheduled change: from `generation` (not before the run's), its activation
    trigger, duration, transition and RulePatch (the seed's vocabularies)."""

    generation: int = bounded(lo=0, hi=MAX_GENERATION)
    activation: str = bounded(length=MAX_WORD)
    duration: str = bounded(length=MAX_WORD)
    transition: str = bounded(length=MAX_WORD)
    patch: RulePatch


@attrs.frozen
class ScheduleArgs:
    """Schedule a change; its graph-version evidence is the graph's version now."""

    change: Change


@attrs.frozen
class ViewArgs:
    """No arguments."""


@attrs.frozen
class HistoryArgs:
    """`count` frames from `generation` (0..the run's generation; fewer when the run has not
    reached them all), with the rule graph and the coarse density of `generation`."""

    generation: int = bounded(lo=0, hi=MAX_GENERATION)
    count: int = bounded(1, lo=1, hi=MAX_FRAMES)


@attrs.frozen
class ExportArgs:
    """No arguments."""


@attrs.frozen
class RunInfo:
    """The run as set up (`status` "ready": its source, model or deterministic_fallback,
    hashes and graph version), or "setting_up" while the model interprets the answers
    (generation -1; the setup event follows)."""

    status: str
    generation: int
    answers_hash: str
    seed: int
    source: str | None = None
    config_hash: str | None = None
    graph_version: int | None = None
    failure: dict[str, Any] | None = None


@attrs.frozen
class ControlResult:
    """Whether the run plays, at what speed, and the generation it is at."""

    playing: bool
    speed: int
    generation: int
    ended: bool


@attrs.frozen
class DecisionResult:
    """The accepted decision's number, when it was accepted, the graph version it carries
    as evidence and the generation from which it can fire."""

    decision: int
    generation: int
    graph_version: int
    from_generation: int


@attrs.frozen
class RunView:
    """A spectator's view of the run (the same value a `snapshot` push carries), and the
    vocabulary of patches and scheduled changes (`roles`, `self`, `pair`, `environment`
    {field: values}, `activation`, `duration`, `transition`)."""

    view: dict[str, Any]
    vocabulary: dict[str, Any]


@attrs.frozen
class History:
    """Frames from a generation on, the rule graph in force at it and its coarse density
    (`{"generation", "side", "species": {id: {"scale", "data"}}, "resource": {...}}`)."""

    frames: list[dict[str, Any]]
    graph: dict[str, Any]
    density: dict[str, Any]


@attrs.frozen
class Export:
    """The run's stored events as JSON lines (setup first), for `petridish ecosystem
    replay`; `events` lines, the last at revision `revision`."""

    lines: str
    events: int
    revision: int


OPS = (
    OpSpec("ecosystem.create", CreateArgs, RunInfo, "agent",
           "Set a run up from three answers (model when configured, else the labelled "
           "deterministic setup); you own it."),
    OpSpec("ecosystem.control", ControlArgs, ControlResult, "agent",
           "Owner: play, pause or step the run; speed 1..30 generations a second."),
    OpSpec("ecosystem.patch", PatchArgs, DecisionResult, "agent",
           "Owner: a RulePatch for the next generation, with graph-version evidence."),
    OpSpec("ecosystem.schedule", ScheduleArgs, DecisionResult, "agent",
           "Owner: schedule a change (trigger, duration, transition, RulePatch)."),
    OpSpec("ecosystem.view", ViewArgs, RunView, "spectator",
           "The run: setup, graph, latest frame, decisions, controls, and the end."),
    OpSpec("ecosystem.history", HistoryArgs, History, "spectator",
           "Frames from an earlier generation, with its graph and density (for scrubbing)."),
    OpSpec("ecosystem.export", ExportArgs, Export, "spectator",
           "The run's stored events as JSON lines, which `petridish ecosystem replay` re-runs "
           "without a model."),
)
