"""The events of a run, `ecosystem:<run id>`, and their stored JSON.

A run's stream is: `SetUp` (always first: the validated config and graph, their hash,
the source label), one `Generated` per generation 0..180 (its frame), `Patched` and
`Scheduled` (accepted decisions), `Controlled` (play, pause, step, speed), at 180
`Ended` (the score breakdown and the reflection) and, with a model configured, `Phrased`
(the model's wording of the reflection, or why there is none). Stored JSON is
`{"type": ..., ...}` with the fields below; `decode(encode(e)) == e` for every event.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import attrs

from actors.ecosystem.engine import RunState
from actors.ecosystem.rates import LEGACY_MODEL


def config_hash(config: dict[str, Any], graph: dict[str, Any]) -> str:
    """`config_` + SHA-256 of the canonical JSON of the validated config and graph."""
    body = json.dumps({"config": config, "graph": graph}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)
    return "config_" + hashlib.sha256(body.encode("utf-8")).hexdigest()


@attrs.frozen
class SetUp:
    """The run exists: owner, canonical answers and their hash, the validated config and
    starting graph and their hash, the source label (`model` or `deterministic_fallback`),
    the engine seed and grid size. `failure` (the model path's `{stage, code, conflicts}`
    when it fell back), `named_intent` and `calls` are metadata outside the replay
    contract. `model` is the simulation's version (`rates.MODEL`); a setup stored before
    versions has none and is model 1, which its run replays under."""

    owner: str
    answers: dict[str, str]
    answers_hash: str
    config: dict[str, Any]
    graph: dict[str, Any]
    config_hash: str
    source: str
    seed: int
    size: int
    failure: dict[str, Any] | None = None
    named_intent: dict[str, Any] | None = None
    calls: int = 0
    model: int = LEGACY_MODEL


@attrs.frozen
class Generated:
    """One generation's frame, and `t` (ms since the epoch) when it was made: outside the
    replay contract, it shows how the generation timer kept its schedule. `engine` is the
    run state after it when the event was just decided (the host folds it without
    simulating twice); it is never stored, and a decoded event folds by stepping the engine
    again."""

    frame: dict[str, Any]
    t: int | None = None
    engine: RunState | None = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class Patched:
    """A RulePatch accepted for the next generation, as a decision (immediate, persistent,
    abrupt) carrying its graph-version evidence."""

    decision: dict[str, Any]


@attrs.frozen
class Scheduled:
    """A scheduled change accepted, as a decision carrying the graph version of its time."""

    decision: dict[str, Any]


@attrs.frozen
class Controlled:
    """The owner played, paused or stepped the run, or changed its speed."""

    action: str
    playing: bool
    speed: int


@attrs.frozen
class Ended:
    """Generation 180 was reached: the score breakdown by fitness weight and the
    reflection (engine-derived facts; `source` says who phrased it)."""

    breakdown: dict[str, Any]
    reflection: dict[str, Any]


@attrs.frozen
class Phrased:
    """The reflection in the model's words (`source` "model", `model` its name, `text`), or,
    when the model could not phrase it, `source` "engine" and the finite `failure`
    `{stage, code}`: the engine's facts stand alone. Only runs with a model configured get
    one; the facts in `Ended` never change."""

    source: str
    text: str | None = None
    model: str | None = None
    failure: dict[str, Any] | None = None
    calls: int = 0


Event = SetUp | Generated | Patched | Scheduled | Controlled | Ended | Phrased

_TYPES: dict[str, type] = {"setup": SetUp, "generation": Generated, "patch": Patched,
                           "schedule": Scheduled, "control": Controlled, "end": Ended,
                           "phrased": Phrased}
_NAMES = {cls: name for name, cls in _TYPES.items()}


def encode(event: Event) -> dict[str, Any]:
    """The stored JSON of an event."""
    if isinstance(event, Generated):
        if event.t is None:
            return {"type": "generation", "frame": event.frame}
        return {"type": "generation", "frame": event.frame, "t": event.t}
    return {"type": _NAMES[type(event)], **attrs.asdict(event, recurse=False)}


def decode(data: dict[str, Any]) -> Event:
    """The event of stored JSON (KeyError or TypeError on a shape this module never wrote)."""
    cls = _TYPES[data["type"]]
    fields = {k: v for k, v in data.items() if k != "type"}
    return cls(**fields)
