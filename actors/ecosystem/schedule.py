"""Accepted decisions and scheduled changes: when a patch takes effect, how, and for how long.

A decision is `{"generation": g, "graphVersion": v, "change": {...}}`: accepted at
generation g against graph version v. Its change binds a generation (0-180, not before g)
from which its activation trigger is armed, a duration, a transition and a RulePatch. When
the trigger is due the change applies only if the graph is still at version v; otherwise
the decision ends as `stale_graph_version`. Temporary changes revert after their duration;
persistent ones stay. Ramps and pulses are pure functions of the generation and only blend
the simulation's rates; the graph itself changes at once.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import attrs

from actors.ecosystem.errors import EcosystemError, Shape
from actors.ecosystem.rules import apply_patch, patch_target, validate_patch
from actors.ecosystem.sim import Metrics

MAX_GENERATION = 180
ACTIVATIONS = ("immediate", "after_6", "after_12", "after_24", "resources_low",
               "population_boom", "population_crash", "species_emergence",
               "species_extinction", "predation_high")
TRANSITIONS = ("abrupt", "ramp", "pulse")
DURATIONS = {"short": 6, "medium": 12, "long": 24, "persistent": None}
DELAYS = {"immediate": 0, "after_6": 6, "after_12": 12, "after_24": 24}
RAMP_GENERATIONS = 6       # a ramp reaches full effect on its 6th generation
PULSE_HALF_PERIOD = 3      # a pulse is on 3 generations, off 3, ...
RESOURCE_LOW = 0.35        # mean resource below this is "low"
BOOM, CRASH = 1.15, 0.9    # total biomass ratio to the previous generation
EMERGENCE = 1.5            # a species first passing 1.5x its founding biomass
PREDATION_HIGH = 0.15      # predation flux per unit of total biomass, per generation

SCHEDULE_ERROR = "Invalid scheduled change"
_shape = Shape(lambda path, why: EcosystemError(
    "invalid_schedule", f"{SCHEDULE_ERROR}: {path} {why}", path))


def validate_change(value: Any, path: str = "change") -> dict[str, Any]:
    """A scheduled change: generation 0-180, activation, duration, transition, patch."""
    _shape.obj(value, path, ("generation", "activation", "duration", "transition", "patch"))
    _shape.integer(value["generation"], f"{path}.generation", 0, MAX_GENERATION)
    _shape.enum(value["activation"], f"{path}.activation", ACTIVATIONS)
    _shape.enum(value["duration"], f"{path}.duration", tuple(DURATIONS))
    _shape.enum(value["transition"], f"{path}.transition", TRANSITIONS)
    out = copy.deepcopy(dict(value))
    out["patch"] = validate_patch(value["patch"])
    return out


def validate_decision(value: Any, path: str = "decision") -> dict[str, Any]:
    """An accepted decision: acceptance generation, graph-version evidence, change."""
    _shape.obj(value, path, ("generation", "graphVersion", "change"))
    _shape.integer(value["generation"], f"{path}.generation", 0, MAX_GENERATION)
    _shape.integer(value["graphVersion"], f"{path}.graphVersion", 1)
    change = validate_change(value["change"], f"{path}.change")
    if change["generation"] < value["generation"]:
        raise _shape.fail(f"{path}.change.generation", "must not precede the decision")
    return {"generation": value["generation"], "graphVersion": value["graphVersion"],
            "change": change}


def transition_weight(transition: str, generation: int, fired_at: int) -> float:
    """Share of a change's effect at `generation` (pure in the generation)."""
    age = generation - fired_at
    if transition == "ramp":
        return min(1.0, (age + 1) / RAMP_GENERATIONS)
    if transition == "pulse":
        return 1.0 if (age // PULSE_HALF_PERIOD) % 2 == 0 else 0.0
    return 1.0


def is_due(activation: str, armed: int, generation: int, history: Sequence[Metrics]) -> bool:
    """Whether a trigger armed at `armed` fires at `generation`.

    `history[t]` holds the metrics of generation t; metric triggers read the last
    finished generation (t-1), against t-2 where they compare.
    """
    if generation < max(armed, 1):
        return False
    if activation in DELAYS:
        return generation >= armed + DELAYS[activation]
    last = history[generation - 1]
    if activation == "resources_low":
        return last.resource < RESOURCE_LOW
    if activation == "predation_high":
        return last.predation > PREDATION_HIGH * max(sum(last.totals), 1e-9)
    if generation < 2:
        return False
    before = history[generation - 2]
    if activation == "population_boom":
        return sum(last.totals) > BOOM * sum(before.totals)
    if activation == "population_crash":
        return sum(last.totals) < CRASH * sum(before.totals)
    if activation == "species_extinction":
        return any(b and not a for a, b in zip(last.alive, before.alive, strict=True))
    # species_emergence
    founding = history[0].totals
    return any(a >= EMERGENCE * f > b for a, b, f in zip(last.totals, before.totals, founding,
                                                          strict=True))


@attrs.frozen
class Active:
    """A change in force: the graphs either side of it (for blending) and its revert."""

    index: int
    fired_at: int
    transition: str
    until: int | None
    revert: dict[str, Any]
    before: dict[str, Any]
    after: dict[str, Any]


@attrs.define
class Schedule:
    """Pending decisions and active changes of one run (replayable state)."""

    pending: list[tuple[int, dict[str, Any]]]
    active: list[Active] = attrs.field(factory=list)

    @classmethod
    def from_decisions(cls, decisions: Sequence[Any]) -> Schedule:
        """Validate decisions (in record order) into a fresh schedule."""
        return cls([(k, validate_decision(d, f"decisions[{k}]")) for k, d in enumerate(decisions)])

    def advance(self, generation: int, graph: dict[str, Any], history: Sequence[Metrics]
                ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Revert expired changes, then fire due decisions; returns (graph, events)."""
        events: list[dict[str, Any]] = []
        for act in [a for a in self.active if a.until == generation]:
            self.active.remove(act)
            graph = self._apply(graph, act.revert, act.index, "reverted", generation, events)[0]
        for item in list(self.pending):
            index, decision = item
            change = decision["change"]
            if not is_due(change["activation"], change["generation"], generation, history):
                continue
            self.pending.remove(item)
            if graph["version"] != decision["graphVersion"]:
                events.append({"generation": generation, "decision": index,
                               "outcome": "stale_graph_version"})
                continue
            prior = patch_target(graph, change["patch"])
            before = graph
            graph, changed = self._apply(graph, change["patch"], index, "applied", generation,
                                         events)
            if changed:
                span = DURATIONS[change["duration"]]
                revert = dict(change["patch"])
                revert["mode" if revert["kind"] == "pair" else "value"] = prior
                self.active.append(Active(index, generation, change["transition"],
                                          None if span is None else generation + span,
                                          revert, before, graph))
        return graph, events

    @staticmethod
    def _apply(graph: dict[str, Any], patch: dict[str, Any], index: int, outcome: str,
               generation: int, events: list[dict[str, Any]]) -> tuple[dict[str, Any], bool]:
        try:
            new, changed = apply_patch(graph, patch)
        except EcosystemError as err:
            events.append({"generation": generation, "decision": index,
                           "outcome": "rejected", "reason": err.message})
            return graph, False
        events.append({"generation": generation, "decision": index,
                       "outcome": outcome if changed else "unchanged",
                       "version": new["version"]})
        return new, changed

    def blends(self, generation: int) -> list[tuple[dict[str, Any], dict[str, Any], float]]:
        """(before, after, weight) for each active change that is not fully in force."""
        out = []
        for act in self.active:
            weight = transition_weight(act.transition, generation, act.fired_at)
            if weight != 1.0:
                out.append((act.before, act.after, weight))
        return out
