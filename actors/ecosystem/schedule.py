"""Accepted decisions and scheduled changes: when a patch takes effect, how, and for how long.

A decision is `{"generation": g, "graphVersion": v, "change": {...}}`: accepted after
generation g was shown, against graph version v. Its change binds a generation (0-180,
not before g) from which its activation trigger is armed, a duration, a transition and a
RulePatch. A decision is never due before generation g + 1. When its trigger is due the
change applies only if the graph is still at version v; otherwise the decision ends as
`stale_graph_version`.

Every target (a pair, a species' self-interaction, an environment field) keeps the changes
that hold it in firing order, over the value it had before them. A temporary change that
runs out reverts only what it set and still holds: when a later change holds the target
its expiry reverts nothing (`superseded`); otherwise the target goes back to the value
under it (`reverted`), unless that would break a graph invariant: the revert is refused
(`revert_refused`, reported with the invariant's message) and the change stays in force
for good. Persistent changes never revert, and an earlier temporary change cannot undo
them. Ramps and pulses are pure functions of the generation and only blend the
simulation's rates; the graph itself changes at once.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import attrs

from actors.ecosystem.errors import EcosystemError, Shape
from actors.ecosystem.graph import (
    apply_patch,
    patch_key,
    patch_target,
    patch_value,
    validate_patch,
    with_value,
)
from actors.ecosystem.sim import Metrics

MAX_GENERATION = 180
MAX_DECISIONS = 1000       # accepted decisions one run (or record) may hold
ACTIVATIONS = ("immediate", "after_6", "after_12", "after_24", "resources_low",
               "population_boom", "population_crash", "species_emergence",
               "species_extinction", "predation_high")
TRANSITIONS = ("abrupt", "ramp", "pulse")
DURATIONS = {"short": 6, "medium": 12, "long": 24, "persistent": None}
DELAYS = {"immediate": 0, "after_6": 6, "after_12": 12, "after_24": 24}
# Triggers that compare the last generation with the one before it (so from generation 2)
COMPARED = ("population_boom", "population_crash", "species_emergence", "species_extinction")
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
    generation = _shape.integer(value["generation"], f"{path}.generation", 0, MAX_GENERATION)
    _shape.enum(value["activation"], f"{path}.activation", ACTIVATIONS)
    _shape.enum(value["duration"], f"{path}.duration", tuple(DURATIONS))
    _shape.enum(value["transition"], f"{path}.transition", TRANSITIONS)
    out = copy.deepcopy(dict(value))
    out["generation"], out["patch"] = generation, validate_patch(value["patch"])
    return out


def validate_decision(value: Any, path: str = "decision") -> dict[str, Any]:
    """An accepted decision: acceptance generation, graph-version evidence, change."""
    _shape.obj(value, path, ("generation", "graphVersion", "change"))
    generation = _shape.integer(value["generation"], f"{path}.generation", 0, MAX_GENERATION)
    version = _shape.integer(value["graphVersion"], f"{path}.graphVersion", 1)
    change = validate_change(value["change"], f"{path}.change")
    if change["generation"] < generation:
        raise _shape.fail(f"{path}.change.generation", "must not precede the decision")
    return {"generation": generation, "graphVersion": version, "change": change}


def validate_decisions(decisions: Sequence[Any], first: int = 0) -> list[dict[str, Any]]:
    """Validate decisions numbered from `first` (errors name `decisions[k]`)."""
    return [validate_decision(d, f"decisions[{k}]") for k, d in enumerate(decisions, first)]


def transition_weight(transition: str, generation: int, fired_at: int) -> float:
    """Share of a change's effect at `generation` (pure in the generation)."""
    age = generation - fired_at
    if transition == "ramp":
        return min(1.0, (age + 1) / RAMP_GENERATIONS)
    if transition == "pulse":
        return 1.0 if (age // PULSE_HALF_PERIOD) % 2 == 0 else 0.0
    return 1.0


def armed_from(activation: str, armed: int) -> int:
    """The first generation a trigger armed at `armed` may fire at: never generation 0, a
    delayed one its delay later, one that compares two generations from generation 2."""
    return max(armed + DELAYS.get(activation, 0), 2 if activation in COMPARED else 1)


def first_generation(decision: dict[str, Any]) -> int:
    """The first generation an accepted decision may fire at (after its acceptance)."""
    change = decision["change"]
    return max(decision["generation"] + 1, armed_from(change["activation"], change["generation"]))


def is_due(activation: str, armed: int, generation: int, history: Sequence[Metrics]) -> bool:
    """Whether a trigger armed at `armed` fires at `generation`.

    `history[t]` holds the metrics of generation t; metric triggers read the last
    finished generation (t-1), against t-2 where they compare.
    """
    if generation < armed_from(activation, armed):
        return False
    if activation in DELAYS:
        return True
    last = history[generation - 1]
    if activation == "resources_low":
        return last.resource < RESOURCE_LOW
    if activation == "predation_high":
        return last.predation > PREDATION_HIGH * max(sum(last.totals), 1e-9)
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
class Holding:
    """A fired change holding its target: the value it wrote, until when (None: for good)."""

    index: int
    key: tuple[str, str]
    patch: dict[str, Any]
    until: int | None


@attrs.frozen
class Blend:
    """An unfinished transition: the graphs either side of a change, from when it fired."""

    index: int
    key: tuple[str, str]
    fired_at: int
    transition: str
    before: dict[str, Any]
    after: dict[str, Any]


@attrs.define
class Schedule:
    """Pending decisions, the changes holding each target and their transitions (the
    replayable state of one run's decisions)."""

    pending: list[tuple[int, dict[str, Any]]] = attrs.field(factory=list)
    holdings: list[Holding] = attrs.field(factory=list)  # in firing order
    bases: dict[tuple[str, str], str] = attrs.field(factory=dict)  # value under the holdings
    transitions: list[Blend] = attrs.field(factory=list)

    @classmethod
    def from_decisions(cls, decisions: Sequence[Any]) -> Schedule:
        """Validate decisions (in record order) into a fresh schedule."""
        return cls(list(enumerate(validate_decisions(decisions))))

    def copy(self) -> Schedule:
        """An independent copy (the items themselves are never mutated)."""
        return Schedule(list(self.pending), list(self.holdings), dict(self.bases),
                        list(self.transitions))

    def advance(self, generation: int, graph: dict[str, Any], history: Sequence[Metrics]
                ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Expire changes whose time ran out, then fire due decisions; returns (graph,
        events)."""
        events: list[dict[str, Any]] = []
        for held in [h for h in self.holdings if h.until == generation]:
            graph = self._expire(held, graph, generation, events)
        for item in list(self.pending):
            index, decision = item
            change = decision["change"]
            if generation <= decision["generation"] or not is_due(
                    change["activation"], change["generation"], generation, history):
                continue
            self.pending.remove(item)
            graph = self._fire(index, decision, graph, generation, events)
        return graph, events

    def _fire(self, index: int, decision: dict[str, Any], graph: dict[str, Any],
              generation: int, events: list[dict[str, Any]]) -> dict[str, Any]:
        change = decision["change"]
        event = {"generation": generation, "decision": index, "trigger": change["activation"]}
        if graph["version"] != decision["graphVersion"]:
            events.append({**event, "outcome": "stale_graph_version"})
            return graph
        patch = change["patch"]
        try:
            new, changed = apply_patch(graph, patch)
        except EcosystemError as err:
            events.append({**event, "outcome": "rejected", "reason": err.message})
            return graph
        events.append({**event, "outcome": "applied" if changed else "unchanged",
                       "version": new["version"]})
        span = DURATIONS[change["duration"]]
        key = patch_key(patch)
        if changed:  # an earlier change's transition on this target is over
            self.transitions = [b for b in self.transitions if b.key != key]
            self.transitions.append(Blend(index, key, generation, change["transition"],
                                          graph, new))
        # An unchanged temporary patch set nothing, so it has nothing to revert; an
        # unchanged persistent one still holds its value against earlier temporary ones.
        if changed or span is None:
            if not any(h.key == key for h in self.holdings):
                self.bases[key] = patch_target(graph, patch)
            self.holdings.append(Holding(index, key, patch,
                                         None if span is None else generation + span))
        return new

    def _expire(self, held: Holding, graph: dict[str, Any], generation: int,
                events: list[dict[str, Any]]) -> dict[str, Any]:
        """A temporary change ran out: revert what it set and still holds, if anything."""
        on_target = [h for h in self.holdings if h.key == held.key]
        holds = on_target[-1] is held  # no later change holds the target
        self.holdings.remove(held)
        self.transitions = [b for b in self.transitions if b.index != held.index]
        rest = [h for h in on_target if h is not held]
        value = patch_value(rest[-1].patch) if rest else self.bases[held.key]
        event = {"generation": generation, "decision": held.index}
        if not holds or value == patch_value(held.patch):
            outcome: dict[str, Any] = {"outcome": "superseded"}
            new = graph
        else:
            try:
                new, _ = apply_patch(graph, with_value(held.patch, value))
                outcome = {"outcome": "reverted", "version": new["version"]}
            except EcosystemError as err:
                # The graph cannot take the value back: the change stays in force for good.
                events.append({**event, "outcome": "revert_refused", "reason": err.message})
                self.holdings.append(attrs.evolve(held, until=None))
                return graph
        if not rest:
            del self.bases[held.key]
        events.append({**event, **outcome})
        return new

    def blends(self, generation: int) -> list[tuple[dict[str, Any], dict[str, Any], float]]:
        """(before, after, weight) for each change whose transition is not complete."""
        out = []
        for blend in self.transitions:
            weight = transition_weight(blend.transition, generation, blend.fired_at)
            if weight != 1.0:
                out.append((blend.before, blend.after, weight))
        return out
