"""Seed rules the engine got wrong before the step API (issue 14, item 4).

Each test below failed on the code of d27f0b3 (checked by running this file against it):
a temporary change that reverted over a later change to the same field, a revert that
broke an invariant was reported as an ordinary `rejected`, and a persistent nonapproval
could carry no focus (or free provider text) as its review focus.
"""

from __future__ import annotations

import copy
from typing import Any

from actors.ecosystem.run import simulate
from actors.ecosystem.setup import default_config
from tests.ecosystem.model_script import APPROVE, COUNCIL, HAPPY, LINKS, ROLES, interpret

SELF_A = {"kind": "self", "species": "A"}


def decided(accepted: int, version: int, at: int, duration: str, patch: dict[str, Any]
            ) -> dict[str, Any]:
    return {"generation": accepted, "graphVersion": version,
            "change": {"generation": at, "activation": "immediate", "duration": duration,
                       "transition": "abrupt", "patch": patch}}


def outcomes(result: dict[str, Any]) -> list[tuple]:
    return [(e["generation"], e["decision"], e["outcome"], e.get("version"))
            for f in result["generations"] for e in f["events"] if "decision" in e]


def test_a_short_change_does_not_undo_a_later_persistent_change() -> None:
    """Seed: "Temporary changes revert according to duration; persistent changes do not
    automatically revert." A short change at generation 3 reverting (at 9) after a
    persistent change at generation 5 to the same field leaves the persistent value."""
    short = decided(0, 1, 3, "short", {**SELF_A, "value": "cooperative"})
    persistent = decided(4, 2, 5, "persistent", {**SELF_A, "value": "territorial"})
    result = simulate(default_config(), 1, 14, decisions=[short, persistent], size=16)
    assert outcomes(result) == [(3, 0, "applied", 2), (5, 1, "applied", 3),
                                (9, 0, "superseded", None)]
    assert result["generations"][-1]["graphVersion"] == 3  # no revert to neutral (v4)


def test_a_persistent_change_to_the_same_value_is_not_reverted_either() -> None:
    """Seed: "persistent changes do not automatically revert". The persistent change finds
    the value already set by the short one (`unchanged`); the short one's expiry must not
    take the field back to its value before both."""
    short = decided(0, 1, 3, "short", {**SELF_A, "value": "cooperative"})
    persistent = decided(4, 2, 5, "persistent", {**SELF_A, "value": "cooperative"})
    result = simulate(default_config(), 1, 14, decisions=[short, persistent], size=16)
    assert outcomes(result) == [(3, 0, "applied", 2), (5, 1, "unchanged", 2),
                                (9, 0, "superseded", None)]
    assert result["generations"][-1]["graphVersion"] == 2


def test_an_invariant_breaking_revert_is_refused_and_reported() -> None:
    """Seed: a graph needs a basal path ("Roles alone do not authorize predation: directional
    pair edges control inter-species consumption") and "Temporary changes revert according
    to duration". Here the pike (C) is fed through A-C by a short change, then a persistent
    change stops it eating the snails (B-C neutral); reverting A-C would starve it of any
    feeding path, so the revert is refused as a reported scheduled-change failure
    (`revert_refused`, with the invariant's message) and the change stays in force."""
    config = default_config()
    config["rules"] = {
        "version": 1,
        "species": [{"id": "A", "name": "algae", "role": "producer", "self": "neutral"},
                    {"id": "B", "name": "snails", "role": "grazer", "self": "neutral"},
                    {"id": "C", "name": "pike", "role": "hunter", "self": "territorial"}],
        "interactions": [{"pair": "A-B", "mode": "b_consumes_a"},
                         {"pair": "A-C", "mode": "neutral"},
                         {"pair": "B-C", "mode": "b_consumes_a"}],
        "environment": copy.deepcopy(config["rules"]["environment"])}
    feed = decided(0, 1, 3, "short", {"kind": "pair", "pair": "A-C", "mode": "b_consumes_a"})
    cut = decided(4, 2, 5, "persistent", {"kind": "pair", "pair": "B-C", "mode": "neutral"})
    result = simulate(config, 2, 30, decisions=[feed, cut], size=16)
    events = [e for f in result["generations"] for e in f["events"] if "decision" in e]
    assert [(e["generation"], e["decision"], e["outcome"]) for e in events] == [
        (3, 0, "applied"), (5, 1, "applied"), (9, 0, "revert_refused")]
    assert events[-1]["reason"] == (
        "Species C (hunter) has no feeding path to a basal-feeding species")
    assert result["generations"][-1]["graphVersion"] == 3


# Seed: "A persistent nonapproval gets a finite, model-selected review focus; that focus is
# not independent proof of a semantic mismatch. Failure inside correction preserves the
# nonapproval instead of silently returning a seedable fallback."
FOCUSES = {"A", "B", "C", "A-B", "A-C", "B-C", "environment"}  # the three-species pond


def test_a_persistent_nonapproval_always_carries_a_finite_focus(fake_model) -> None:
    """Every way a review can stay unapproved ends `blocked` with a focus from the graph's
    finite parts, selected by the model (the first review's when the correction fails)."""
    reject = {"verdict": "reject", "focus": "B-C"}
    cases = {  # script after the four setup calls -> the focus the blocked result carries
        "rejected twice": ([reject, ROLES, LINKS, {"verdict": "reselect", "focus": "C"}], "C"),
        "correction fails": ([reject, "not json"], "B-C"),
        "correction review without focus": ([reject, ROLES, LINKS, {"verdict": "reject"}],
                                            "B-C"),
        "correction review with free text": (
            [reject, ROLES, LINKS, {"verdict": "reject", "focus": "the pike, really"}], "B-C"),
    }
    for name, (tail, focus) in cases.items():
        result = interpret(fake_model, HAPPY[:4] + tail)
        assert (result.status, result.review_focus) == ("blocked", focus), name
        assert result.review_focus in FOCUSES and result.config is None, name
    request = fake_model.requests[4]["task"]
    assert set(request["focus_options"]) == FOCUSES


def test_a_nonapproval_without_a_finite_focus_is_invalid_output(fake_model) -> None:
    """The first review's nonapproval must select its focus from the finite set; one that
    selects none, or answers free text, breaks the review contract: the labelled fallback,
    never a blocked result without a finite focus."""
    for review in ({"verdict": "reject"}, {"verdict": "reselect", "focus": "the pike!"}):
        result = interpret(fake_model, HAPPY[:4] + [review, ROLES, LINKS, APPROVE, COUNCIL])
        assert result.status == "fallback", review
        assert (result.failure["stage"], result.failure["code"]) == ("fidelity",
                                                                     "invalid_output")
        assert "the pike!" not in str(result.as_dict())
        assert result.calls == 5
