"""Live setup interpretation against a scripted chat-completions server on 127.0.0.1."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest

from actors.chat_completions import MAX_RETRY_AFTER
from actors.ecosystem.endpoint import ModelEndpoint
from actors.ecosystem.events import config_hash
from actors.ecosystem.graph import validate_rule_graph
from actors.ecosystem.intent import palette
from actors.ecosystem.interpret import DeterministicInterpreter
from actors.ecosystem.keywords import deterministic_setup
from actors.ecosystem.model_client import ATTEMPTS, BACKOFF, ChatClient, ModelFailure
from actors.ecosystem.run import simulate
from tests.ecosystem import conftest
from tests.ecosystem.conftest import FakeModel
from tests.ecosystem.model_script import (
    ANSWERS,
    APPROVE,
    BROKEN_LINKS,
    COUNCIL,
    ENVIRONMENT,
    HAPPY,
    HAPPY_TASKS,
    KEY,
    LINKS,
    MAPPING,
    NONMAXIMAL,
    REJECT,
    ROLES,
    interpret,
    span,
)


def assert_clean(result) -> None:
    """Diagnostics carry neither provider payloads nor the credential."""
    text = json.dumps(result.as_dict())
    assert KEY not in text
    assert "PROVIDER-SECRET-PAYLOAD" not in text
    assert "Bearer" not in text


def assert_fallback(result, stage: str, code: str) -> None:
    assert result.status == "fallback"
    assert result.source == "deterministic_fallback"
    assert result.failure["stage"] == stage and result.failure["code"] == code
    assert result.config == deterministic_setup(ANSWERS)["config"]
    assert result.answers == ANSWERS
    assert_clean(result)


def test_ordinary_answers_are_accepted(fake_model: FakeModel) -> None:
    result = interpret(fake_model, HAPPY)
    assert result.status == "accepted" and result.source == "model"
    assert result.failure is None and result.answers == ANSWERS
    assert [s["name"] for s in result.graph["species"]] == ["algae", "snails", "pike"]
    assert [s["role"] for s in result.graph["species"]] == ["producer", "grazer", "hunter"]
    assert result.graph["council"] == COUNCIL["choice"]  # probabilities kept as returned
    assert result.config["rules"] == result.graph
    assert result.config["fitness"] == ENVIRONMENT["fitness"]
    assert validate_rule_graph(result.graph) == result.graph
    assert result.calls == 6
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (60, 30)
    assert fake_model.tasks() == HAPPY_TASKS
    assert all(r["auth"] == f"Bearer {KEY}" for r in fake_model.requests)
    assert all(r["path"] == "/v1/chat/completions" for r in fake_model.requests)
    assert_clean(result)
    assert [o["name"] for o in result.named_intent["organisms"]] == ["algae", "snails", "pike"]
    # The fidelity request carries the original answers, full config and a decoded food web.
    review = fake_model.requests[4]["task"]
    assert review["answers"] == ANSWERS and review["config"]["rules"] == review["graph"]
    assert "pike (C, hunter) eats snails (B, grazer)" in review["food_web"]
    # Roles come first; the dependent pair request carries the fixed species and roles.
    links = fake_model.requests[3]["task"]
    assert [(s["id"], s["name"], s["role"]) for s in links["species"]] == [
        ("A", "algae", "producer"), ("B", "snails", "grazer"), ("C", "pike", "hunter")]
    assert links["pairs"] == ["A-B", "A-C", "B-C"]
    # The accepted setup runs (and is what a replay would record).
    run = simulate(result.config, 1, 3, size=16)
    assert len(run["record"]["digests"]) == 4


def test_invalid_json_falls_back(fake_model: FakeModel) -> None:
    result = interpret(fake_model, ["{not json"])
    assert_fallback(result, "mapping", "invalid_json")
    assert result.calls == 1


def test_provider_error_payload_never_reaches_diagnostics(fake_model: FakeModel) -> None:
    result = interpret(fake_model, [MAPPING, 503])  # and 500 at the two tries after
    assert_fallback(result, "environment", "unavailable")
    assert result.calls == 1 + ATTEMPTS
    assert result.usage.prompt_tokens == 10  # only the success counted
    result = interpret(fake_model, [MAPPING, 401])
    assert_fallback(result, "environment", "http_status")
    assert result.calls == 2


def test_a_busy_model_is_asked_again(fake_model: FakeModel) -> None:
    """429 or 5xx, or a reset connection: the call is made again, each try reserved, after
    Retry-After's seconds (at most MAX_RETRY_AFTER) or BACKOFF doubled; the setup goes on."""
    waits: list[float] = []
    result = interpret(fake_model, [429, *HAPPY], waits=waits)
    assert (result.status, result.failure, result.calls) == ("accepted", None, 7)
    assert fake_model.tasks() == ["map_organisms", *HAPPY_TASKS]
    assert waits == [BACKOFF]
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (60, 30)
    waits.clear()
    result = interpret(fake_model, [MAPPING, (503, 3), (429, 3600), *HAPPY[1:]], waits=waits)
    assert (result.status, result.calls) == ("accepted", 8)
    assert waits == [3.0, MAX_RETRY_AFTER]
    waits.clear()
    result = interpret(fake_model, [*HAPPY[:3], None, *HAPPY[3:]], waits=waits)
    assert (result.status, result.calls, waits) == ("accepted", 7, [BACKOFF])


def test_a_model_busy_at_every_try_falls_back_labelled(fake_model: FakeModel) -> None:
    waits: list[float] = []
    result = interpret(fake_model, [429] * ATTEMPTS + HAPPY, waits=waits)
    assert_fallback(result, "mapping", "unavailable")
    assert result.calls == ATTEMPTS == len(fake_model.requests)
    assert waits == [BACKOFF * 2 ** k for k in range(ATTEMPTS - 1)]
    # the budget bounds the tries too: a retry it cannot reserve is not waited for
    waits.clear()
    fake_model.requests.clear()
    result = interpret(fake_model, [MAPPING, 429, 429, *HAPPY[1:]], max_calls=2, waits=waits)
    assert_fallback(result, "environment", "unavailable")
    assert (result.calls, len(fake_model.requests), waits) == (2, 2, [])


@pytest.mark.parametrize("count", [math.inf, "12", -5, 1.5, True, [1]],
                         ids=["infinite", "string", "negative", "fraction", "true", "list"])
def test_a_malformed_response_falls_back(fake_model: FakeModel, count: Any) -> None:
    """A response without content, or with a usage count that is not a nonnegative integer."""
    bad_usage = {"choices": [{"message": {"content": json.dumps(MAPPING)}}],
                 "usage": {"prompt_tokens": count}}
    for body in ({"choices": []}, bad_usage):
        result = interpret(fake_model, [json.dumps(body).encode()])
        assert_fallback(result, "mapping", "malformed_response")
        assert result.calls == 1 and result.usage.prompt_tokens == 0


def test_invalid_environment_falls_back_with_contract_conflict(fake_model: FakeModel) -> None:
    bad = copy.deepcopy(ENVIRONMENT)
    bad["fitness"]["survive"] = 0.9  # total 1.5
    result = interpret(fake_model, [MAPPING, bad])
    assert_fallback(result, "environment", "invalid_output")
    assert result.failure["conflicts"] == [
        "Invalid life config: fitness weights must total 1 (within 1e-9)"]


def test_environment_call_cannot_choose_species_or_food_web(fake_model: FakeModel) -> None:
    """The environment/fitness call selects no species count, roles or feeding graph."""
    for extra in ({"species": ROLES["species"]}, {"interactions": LINKS["interactions"]}):
        result = interpret(fake_model, [MAPPING, {**ENVIRONMENT, **extra}])
        assert_fallback(result, "environment", "invalid_output")
        assert result.failure["conflicts"] == ["object has a key that is not accepted"]


def test_nonmaximal_council_choice_is_corrected_once(fake_model: FakeModel) -> None:
    result = interpret(fake_model, HAPPY[:5] + [NONMAXIMAL, COUNCIL])
    assert result.status == "accepted"
    assert result.graph["council"] == COUNCIL["choice"]
    assert result.calls == 7 and result.usage.completion_tokens == 35  # both requests counted
    correction = fake_model.requests[6]["task"]
    assert correction["conflict"] == "Council selection does not have maximal probability"


def test_second_nonmaximal_council_choice_falls_back(fake_model: FakeModel) -> None:
    result = interpret(fake_model, HAPPY[:5] + [NONMAXIMAL, NONMAXIMAL])
    assert_fallback(result, "council_correction", "nonmaximal_choice")
    assert result.calls == 7


def test_malformed_council_distribution_is_not_corrected(fake_model: FakeModel) -> None:
    over = {"choice": {"selected": "a", "options": [{"label": "a", "probability": 0.8},
                                                    {"label": "b", "probability": 0.7}]}}
    huge = {"choice": {"selected": "a", "options": [{"label": "a", "probability": 10**400}]}}
    # huge: an integer no float holds is not the strict JSON a content must be
    for bad, code in ((over, "invalid_output"), (huge, "invalid_json")):
        result = interpret(fake_model, HAPPY[:5] + [bad])
        assert_fallback(result, "council", code)
        assert result.calls == 6


NOT_PLAIN = {"surrogate": "\ud800", "nul": "\x00", "escape": "\x1b[2J", "bell": "\x07",
             "tab": "\t", "newline": "\n", "delete": "\x7f", "c1": "\x9b", "override": "\u202e",
             "isolate": "\u2066"}
PLAIN_REFUSAL = "is not plain text (a NUL, a lone surrogate or a control character)"


@pytest.mark.parametrize("where", ["selected", "label", "focus"])
@pytest.mark.parametrize("bad", NOT_PLAIN.values(), ids=NOT_PLAIN.keys())
def test_council_text_must_be_plain(fake_model: FakeModel, where: str, bad: str) -> None:
    """A label or focus holding what no text holds (a lone surrogate made the run's config
    hash raise: its actor crashed, the create was lost) or a control character is invalid
    output: the labelled fallback, with no correction."""
    choice = copy.deepcopy(COUNCIL["choice"])
    if where == "focus":
        choice["focus"], path = f"the pike {bad} at dusk", "choice.focus"
    elif where == "selected":
        choice["selected"] = choice["options"][0]["label"] = f"st{bad}eady"
        path = "choice.options[0].label"
    else:
        choice["options"][1]["label"], path = f"b{bad}old", "choice.options[1].label"
    result = interpret(fake_model, HAPPY[:5] + [{"choice": choice}])
    assert_fallback(result, "council", "invalid_output")
    assert result.calls == 6 and result.failure["conflicts"] == [f"{path} {PLAIN_REFUSAL}"]
    assert config_hash(result.config, result.graph).startswith("config_")
    json.dumps(result.as_dict(), ensure_ascii=False).encode("utf-8")


def test_plain_text_of_any_script_is_accepted(fake_model: FakeModel) -> None:
    choice = {"selected": "st\u00e9ady \U0001f41f",
              "focus": "\u062b\u0627\u0628\u062a \u200d\u200f",
              "options": [{"label": "st\u00e9ady \U0001f41f", "probability": 0.6},
                          {"label": "\u5927\u80c6", "probability": 0.3}]}
    result = interpret(fake_model, HAPPY[:5] + [{"choice": choice}])
    assert result.status == "accepted" and result.graph["council"] == choice


@pytest.mark.parametrize("bad", [v for k, v in NOT_PLAIN.items() if k != "surrogate"],
                         ids=[k for k in NOT_PLAIN if k != "surrogate"])
def test_an_organism_span_must_be_plain(fake_model: FakeModel, bad: str) -> None:
    """A name is a span of the owner's answers, which may hold a control character: a span
    holding one is refused as the model's invalid output."""
    answers = {**ANSWERS, "world": ANSWERS["world"].replace("snails", f"sn{bad}ails")}
    start = answers["world"].index("sn")
    mapping = {"organisms": [span("world", "algae", "A"), {
        "slot": "B", "source": "world", "start": start, "end": start + 6 + len(bad)}]}
    result = interpret(fake_model, [mapping], answers=answers)
    assert (result.status, result.source) == ("fallback", "deterministic_fallback")
    assert result.failure["stage"] == "mapping" and result.calls == 1
    assert result.failure["conflicts"] == [f"organisms[1] span {PLAIN_REFUSAL}"]


def test_persistent_rejection_stays_blocked(fake_model: FakeModel) -> None:
    again = {"verdict": "reselect", "focus": "C"}
    result = interpret(fake_model, HAPPY[:4] + [REJECT, ROLES, LINKS, again])
    assert result.status == "blocked" and result.answers == ANSWERS
    assert result.config is None and result.graph is None and result.source is None
    assert result.failure["code"] == "not_approved"
    assert result.review_focus == "C"
    assert result.calls == 8
    assert fake_model.tasks() == HAPPY_TASKS[:5] + ["roles", "links", "review"]
    assert fake_model.requests[5]["task"]["focus"] == REJECT["focus"]
    assert_clean(result)


def test_approved_correction_gets_its_own_council(fake_model: FakeModel) -> None:
    territorial = copy.deepcopy(ROLES)
    territorial["species"][1]["self"] = "cooperative"
    result = interpret(fake_model, HAPPY[:4] + [REJECT, territorial, LINKS, APPROVE, COUNCIL])
    assert result.status == "accepted"
    assert result.graph["species"][1]["self"] == "cooperative"
    assert [s["name"] for s in result.graph["species"]] == ["algae", "snails", "pike"]
    assert fake_model.requests[8]["task"]["graph"]["species"][1]["self"] == "cooperative"
    assert result.calls == 9


def test_failure_inside_correction_preserves_the_nonapproval(fake_model: FakeModel) -> None:
    result = interpret(fake_model, HAPPY[:4] + [REJECT, "nope"])
    assert result.status == "blocked" and result.config is None
    assert result.review_focus == REJECT["focus"]
    assert "correction failed at roles_correction: invalid_json" in result.failure["conflicts"]


def test_budget_exhaustion_falls_back(fake_model: FakeModel) -> None:
    result = interpret(fake_model, HAPPY, max_calls=4)
    assert_fallback(result, "fidelity", "budget_exhausted")
    assert result.calls == 4 and len(fake_model.requests) == 4  # the denied call never left


def test_duplicate_identity_gets_one_corrective_mapping(fake_model: FakeModel) -> None:
    duplicate = {"organisms": [span("world", "algae", "A"), span("world", "snails", "B"),
                               span("threat", "snails", "C")]}
    result = interpret(fake_model, [duplicate, MAPPING] + HAPPY[1:])
    assert result.status == "accepted" and result.calls == 7
    correction = fake_model.requests[1]["task"]
    assert correction["fixed"] == [{"slot": "A", "name": "algae", **span("world", "algae", "A")},
                                   {"slot": "B", "name": "snails",
                                    **span("world", "snails", "B")}]
    texts = {p["text"].lower() for p in correction["palette"]}
    assert "snails" not in texts and "algae" not in texts and "pike" in texts


def test_still_inconsistent_mapping_is_rejected(fake_model: FakeModel) -> None:
    duplicate = {"organisms": [span("world", "algae", "A"), span("world", "snails", "B"),
                               span("threat", "snails", "C")]}
    moved = {"organisms": [span("world", "snails", "A"), span("world", "algae", "B"),
                           span("threat", "pike", "C")]}  # earlier assignments not kept
    result = interpret(fake_model, [duplicate, moved])
    assert_fallback(result, "mapping_correction", "duplicate_identity")


def test_mapping_spans_must_match_the_answers(fake_model: FakeModel) -> None:
    outside = {"organisms": [span("world", "algae", "A"),
                             {"slot": "B", "source": "threat", "start": 30, "end": 300}]}
    result = interpret(fake_model, [outside])
    assert_fallback(result, "mapping", "invalid_output")
    assert result.failure["conflicts"] == ["organisms[1].end must be 31..39"]


def test_broken_food_web_gets_one_correction(fake_model: FakeModel) -> None:
    result = interpret(fake_model, HAPPY[:3] + [BROKEN_LINKS, LINKS] + HAPPY[4:])
    assert result.status == "accepted" and result.calls == 7
    assert fake_model.requests[4]["task"]["conflict"] == (
        "Species C (hunter) has no feeding path to a basal-feeding species")


def test_thirteen_calls_with_every_correction(fake_model: FakeModel) -> None:
    duplicate = {"organisms": [span("world", "algae", "A"), span("world", "snails", "B"),
                               span("threat", "snails", "C")]}
    script = [duplicate, MAPPING, ENVIRONMENT, ROLES, BROKEN_LINKS, LINKS, REJECT, ROLES,
              BROKEN_LINKS, LINKS, APPROVE, NONMAXIMAL, COUNCIL]
    result = interpret(fake_model, script)
    assert result.status == "accepted"
    assert result.calls == 13 and result.usage.prompt_tokens == 130
    denied = interpret(fake_model, script, max_calls=12)
    assert denied.status == "fallback" and denied.failure["code"] == "budget_exhausted"


def test_deterministic_interpreter_is_labelled() -> None:
    result = DeterministicInterpreter().interpret(ANSWERS)
    assert (result.status, result.source, result.calls) == ("fallback",
                                                            "deterministic_fallback", 0)
    assert result.config == deterministic_setup(ANSWERS)["config"]


def test_palette_excludes_assigned_and_overlapping_mentions() -> None:
    fixed = [{"slot": "A", "name": "snails", **span("world", "snails", "A")}]
    words = [(p["source"], p["text"]) for p in palette(ANSWERS, fixed)]
    assert ("world", "snails") not in words and ("threat", "snails") not in words
    assert ("threat", "pike") in words and ("world", "algae") in words


def test_no_test_reaches_beyond_loopback(fake_model: FakeModel) -> None:
    before = len(conftest.BLOCKED)
    client = ChatClient(ModelEndpoint("http://10.255.255.1:9/v1", "m", KEY, timeout=2.0),
                        [].append)
    with pytest.raises(ModelFailure) as err:
        client.complete("mapping", "s", {"task": "x"})
    client.close()
    assert err.value.code == "transport"
    assert conftest.BLOCKED[before:] == [("10.255.255.1", 9)]
    interpret(fake_model, HAPPY)
    assert {r["peer"] for r in fake_model.requests} == {"127.0.0.1"}


STATED = {"organisms": [span("world", "algae", "A"), span("world", "snails", "B"),
                        {**span("threat", "pike", "C"), "role": "hunter"}],
          "links": [{"eater": "C", "eaten": "B"}]}


def test_named_intent_role_must_be_kept(fake_model: FakeModel) -> None:
    omnivore = copy.deepcopy(ROLES)
    omnivore["species"][2]["role"] = "omnivore"
    result = interpret(fake_model, [STATED, ENVIRONMENT, omnivore])
    assert_fallback(result, "roles", "invalid_output")
    assert result.failure["conflicts"] == ["C must keep its established role hunter"]
    assert result.named_intent["links"] == [{"eater": "C", "eaten": "B"}]


def test_named_intent_link_dropped_gets_the_food_web_correction(fake_model: FakeModel) -> None:
    omnivore_web = {"interactions": [{"pair": "A-B", "mode": "b_consumes_a"},
                                     {"pair": "A-C", "mode": "b_consumes_a"},
                                     {"pair": "B-C", "mode": "neutral"}]}  # valid, drops C->B
    result = interpret(fake_model, [STATED, ENVIRONMENT, ROLES, omnivore_web, LINKS,
                                    APPROVE, COUNCIL])
    assert result.status == "accepted" and result.calls == 7
    assert fake_model.requests[3]["task"]["links"] == [{"eater": "C", "eaten": "B"}]
    assert fake_model.requests[4]["task"]["conflict"] == "established link C eats B is missing"


def test_correction_that_drops_the_named_intent_stays_blocked(fake_model: FakeModel) -> None:
    drops = {"interactions": [{"pair": "A-B", "mode": "b_consumes_a"},
                              {"pair": "A-C", "mode": "b_consumes_a"},
                              {"pair": "B-C", "mode": "neutral"}]}
    # The corrected proposal drops "the pike eats the snails" twice; the approval that a
    # fresh reviewer would give is never even asked for.
    result = interpret(fake_model, [STATED, ENVIRONMENT, ROLES, LINKS, REJECT, ROLES, drops,
                                    drops, APPROVE, COUNCIL])
    assert result.status == "blocked" and result.config is None
    assert fake_model.tasks() == HAPPY_TASKS[:5] + ["roles", "links", "links"]
    assert "correction failed at links_recorrection_food_web: food_web" in (
        result.failure["conflicts"])


def test_model_text_in_unknown_keys_is_not_echoed(fake_model: FakeModel) -> None:
    sneaky = copy.deepcopy(MAPPING)
    sneaky["organisms"][0]["PROVIDER-SECRET-PAYLOAD"] = 1
    result = interpret(fake_model, [sneaky])
    assert_fallback(result, "mapping", "invalid_output")
    assert result.failure["conflicts"] == ["organisms[0] has a key that is not accepted"]
