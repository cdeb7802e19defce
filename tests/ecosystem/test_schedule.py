"""Scheduled changes: validation, triggers, graph-version evidence, reverts, ramps and pulses."""

from __future__ import annotations

import re

import pytest

from actors.ecosystem.engine import effective_rates
from actors.ecosystem.errors import EcosystemError
from actors.ecosystem.graph import default_rule_graph
from actors.ecosystem.rates import compute_rates
from actors.ecosystem.run import simulate
from actors.ecosystem.schedule import (
    ACTIVATIONS,
    Schedule,
    is_due,
    transition_weight,
    validate_change,
    validate_decision,
)
from actors.ecosystem.setup import default_config
from actors.ecosystem.sim import Metrics

TOXIN = {"kind": "environment", "field": "pressure", "value": "toxin_wave"}


def decision(activation: str = "immediate", at: int = 3, version: int = 1,
             duration: str = "persistent", transition: str = "abrupt", patch=None,
             accepted: int = 0) -> dict:
    return {"generation": accepted, "graphVersion": version,
            "change": {"generation": at, "activation": activation, "duration": duration,
                       "transition": transition, "patch": patch or TOXIN}}


def test_activation_vocabulary_is_the_seeds() -> None:
    assert ACTIVATIONS == ("immediate", "after_6", "after_12", "after_24", "resources_low",
                           "population_boom", "population_crash", "species_emergence",
                           "species_extinction", "predation_high")


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d["change"].update(generation=181),
     "Invalid scheduled change: decision.change.generation must be 0..180"),
    (lambda d: d["change"].update(generation=-1),
     "Invalid scheduled change: decision.change.generation must be 0..180"),
    (lambda d: d["change"].update(activation="later"),
     "Invalid scheduled change: decision.change.activation must be one of "
     + ", ".join(ACTIVATIONS)),
    (lambda d: d["change"].update(transition="fade"),
     "Invalid scheduled change: decision.change.transition must be one of abrupt, ramp, pulse"),
    (lambda d: d["change"].update(duration="forever"),
     ("Invalid scheduled change: decision.change.duration must be one of short, medium, long, "
     "persistent")),
    (lambda d: d["change"].update(extra=1),
     "Invalid scheduled change: decision.change.extra is not an accepted key"),
    (lambda d: d.update(graphVersion=0),
     "Invalid scheduled change: decision.graphVersion must be >= 1"),
    (lambda d: d.update(generation=5),
     "Invalid scheduled change: decision.change.generation must not precede the decision"),
    (lambda d: d["change"].update(patch={"kind": "pair", "pair": "A-B"}),
     "Invalid rule patch"),
])
def test_invalid_decisions(mutate, message: str) -> None:
    value = decision()
    mutate(value)
    with pytest.raises(EcosystemError, match=f"^{re.escape(message)}$"):
        validate_decision(value)


def test_change_binds_generations_0_to_180() -> None:
    for g in (0, 180):
        assert validate_change(decision(at=g)["change"])["generation"] == g


def test_ramps_and_pulses_are_pure_functions_of_the_generation() -> None:
    assert [transition_weight("ramp", 10 + a, 10) for a in range(8)] == [
        1 / 6, 2 / 6, 3 / 6, 4 / 6, 5 / 6, 1.0, 1.0, 1.0]
    assert [transition_weight("pulse", 10 + a, 10) for a in range(8)] == [
        1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    assert {transition_weight("abrupt", 10 + a, 10) for a in range(8)} == {1.0}


def _m(g: int, totals: tuple, resource: float = 0.8, predation: float = 0.0,
       alive: tuple | None = None) -> Metrics:
    return Metrics(g, totals, resource, predation, 1.0,
                   alive or tuple(t > 0 for t in totals), ())


@pytest.mark.parametrize(("activation", "history", "due_at"), [
    ("immediate", [], 3),
    ("after_6", [], 9),
    ("after_12", [], 15),
    ("after_24", [], 27),
    ("resources_low", [((10, 10),)] * 5 + [((10, 10), 0.2)], 6),
    ("population_boom", [((10, 10),)] * 5 + [((12, 12),)], 6),
    ("population_crash", [((10, 10),)] * 5 + [((8, 9),)], 6),
    ("species_emergence", [((10, 10),)] * 5 + [((15, 10),)], 6),
    ("species_extinction", [((10, 10),)] * 5 + [((10, 0),)], 6),
    ("predation_high", [((10, 10),)] * 5 + [((10, 10), 0.8, 4.0)], 6),
])
def test_each_trigger_fires_when_due(activation: str, history: list, due_at: int) -> None:
    frames = [_m(g, *item) for g, item in enumerate(history)]
    frames += [_m(len(frames) + g, (10, 10)) for g in range(40)]
    fired = [g for g in range(1, 40) if is_due(activation, 3, g, frames)]
    assert fired[0] == due_at
    if activation not in ("immediate",) and not activation.startswith("after"):
        assert fired == [due_at]  # a condition, not a clock: only while it holds
    assert not is_due(activation, 50, 40, frames)  # never before it is armed


def _events(result: dict) -> list:
    return [e for f in result["generations"] for e in f["events"]]


def test_stale_graph_version_blocks_a_decision() -> None:
    first = decision(at=3)
    second = decision(at=5, patch={"kind": "self", "species": "A", "value": "cooperative"})
    result = simulate(default_config(), 1, 8, decisions=[first, second], size=16)
    assert [(e["generation"], e["decision"], e["outcome"]) for e in _events(result)] == [
        (3, 0, "applied"), (5, 1, "stale_graph_version")]
    assert result["generations"][7]["graphVersion"] == 2
    fresh = decision(at=5, version=2, patch=second["change"]["patch"])
    result = simulate(default_config(), 1, 8, decisions=[first, fresh], size=16)
    assert [e["outcome"] for e in _events(result)] == ["applied", "applied"]
    assert result["generations"][7]["graphVersion"] == 3


@pytest.mark.parametrize(("duration", "span"), [("short", 6), ("medium", 12), ("long", 24)])
def test_temporary_changes_revert_after_their_duration(duration: str, span: int) -> None:
    result = simulate(default_config(), 2, 40, decisions=[decision(duration=duration)],
                      size=16)
    assert [(e["generation"], e["outcome"], e["version"]) for e in _events(result)] == [
        (3, "applied", 2), (3 + span, "reverted", 3)]


def test_persistent_changes_do_not_revert() -> None:
    result = simulate(default_config(), 2, 40, decisions=[decision()], size=16)
    assert [e["outcome"] for e in _events(result)] == ["applied"]
    assert result["generations"][-1]["graphVersion"] == 2


def test_unchanged_and_rejected_patches() -> None:
    same = decision(patch={"kind": "environment", "field": "pressure", "value": "stability"})
    breaking = decision(at=4, patch={"kind": "pair", "pair": "A-B", "mode": "neutral"})
    result = simulate(default_config(), 2, 6, decisions=[same, breaking], size=16)
    assert [(e["outcome"], e.get("reason")) for e in _events(result)] == [
        ("unchanged", None),
        ("rejected", "Species B (hunter) has no feeding path to a basal-feeding species")]
    assert result["generations"][-1]["graphVersion"] == 1


def test_ramp_blends_rates_between_the_graphs() -> None:
    config = default_config()
    schedule = Schedule.from_decisions([decision(transition="ramp", patch={
        "kind": "self", "species": "B", "value": "cannibalistic"})])
    graph = default_rule_graph()
    graph, _ = schedule.advance(3, graph, [])
    before = compute_rates(config, default_rule_graph(), 3, (1.0, 1.0))
    after = compute_rates(config, graph, 3, (1.0, 1.0))
    for g, weight in ((3, 1 / 6), (5, 3 / 6), (8, 1.0)):
        mid = effective_rates(config, graph, schedule, g, seed=0)
        expected = before.cannibalism + weight * (after.cannibalism - before.cannibalism)
        assert mid.cannibalism.tolist() == pytest.approx(expected.tolist())
        assert mid.crowding.tolist() == pytest.approx(
            (before.crowding + weight * (after.crowding - before.crowding)).tolist())
