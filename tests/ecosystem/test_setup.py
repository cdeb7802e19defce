"""Setup contracts: answers schema, hash, LifeConfig table, fitness weights, default config."""

from __future__ import annotations

import copy
import hashlib
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.ecosystem.errors import EcosystemError
from actors.ecosystem.graph import default_rule_graph
from actors.ecosystem.setup import (
    CONFIG_VOCABULARY,
    FITNESS_KEYS,
    canonical_answers,
    default_config,
    hash_setup_request,
    normalize_fitness,
    validate_config,
    validate_fitness,
)

ANSWERS = {"world": "a pond", "threat": "a pike", "reward": "survive"}


def test_answers_are_trimmed_and_in_canonical_order() -> None:
    raw = {"reward": " survive ", "threat": "\ta pike\n", "world": "  a pond"}
    assert list(canonical_answers(raw).items()) == list(ANSWERS.items())


@pytest.mark.parametrize(("value", "message"), [
    ({"world": "a", "threat": "b"}, "Invalid setup answers: reward is required"),
    ({**ANSWERS, "extra": "x"}, "Invalid setup answers: extra is not an accepted key"),
    ({**ANSWERS, "world": "   "}, "Invalid setup answers: world must be nonempty after trimming"),
    ({**ANSWERS, "threat": 5}, "Invalid setup answers: threat must be a string"),
    ({**ANSWERS, "reward": "x" * 141},
     "Invalid setup answers: reward must be at most 140 characters"),
    (["a", "b", "c"], "Invalid setup answers:  must be an object"),
])
def test_answers_schema_errors(value: object, message: str) -> None:
    with pytest.raises(EcosystemError, match=f"^{re.escape(message)}$") as err:
        canonical_answers(value)
    assert err.value.code == "invalid_answers"


def test_answers_are_trimmed_as_javascript_trims() -> None:
    """The seed's schema trims with JS's trim(): U+FEFF and U+3000 go, U+001C and U+0085
    (whitespace to Python's str.strip) stay, and the hash sees the same text."""
    raw = {"world": "\ufeffa pond\u3000", "threat": "\x1ca pike\x85", "reward": "survive"}
    assert canonical_answers(raw) == {**ANSWERS, "threat": "\x1ca pike\x85"}
    assert hash_setup_request(raw) == hash_setup_request(canonical_answers(raw))
    with pytest.raises(EcosystemError, match="world must be nonempty after trimming$"):
        canonical_answers({**ANSWERS, "world": "\u2028\ufeff\xa0"})


def test_answer_length_counts_after_trimming() -> None:
    assert len(canonical_answers({**ANSWERS, "world": "  " + "w" * 140 + "  "})["world"]) == 140


def test_hash_setup_request_hashes_the_canonical_tuple() -> None:
    digest = hash_setup_request(ANSWERS)
    assert re.fullmatch(r"setup_[0-9a-f]{64}", digest)
    shuffled = {"reward": "survive  ", "world": " a pond", "threat": "a pike"}
    assert hash_setup_request(shuffled) == digest
    assert hash_setup_request({**ANSWERS, "world": "a lake"}) != digest
    # Moving text between fields changes the tuple, so the hash.
    assert hash_setup_request({"world": "a pond a", "threat": "pike",
                               "reward": "survive"}) != digest
    with pytest.raises(EcosystemError):
        hash_setup_request({**ANSWERS, "world": ""})


def test_a_lone_surrogate_is_hashed_as_json_stringify_writes_it() -> None:
    # Node: JSON.stringify(["\ud800 pond", "x", "y"]) writes the ASCII text below.
    body = '["\\ud800 pond","x","y"]'
    assert hash_setup_request({"world": "\ud800 pond", "threat": "x", "reward": "y"}) == (
        "setup_" + hashlib.sha256(body.encode()).hexdigest())


def test_default_config_is_exactly_the_seed_default() -> None:
    config = default_config()
    assert config["environment"] == {"abundance": "balanced", "distribution": "scattered",
                                     "hazard": "drought", "volatility": "stable"}
    assert config["fitness"] == {key: 0.2 for key in FITNESS_KEYS}
    assert config["founders"] == {"balance": "balanced", "diversity": "varied",
                                  "preyStrategy": "efficient_grazing",
                                  "predatorStrategy": "pursuit"}
    assert config["rules"] == default_rule_graph()
    assert validate_config(config) == config


def test_config_vocabularies_are_the_seed_table() -> None:
    assert CONFIG_VOCABULARY == {
        "environment": {"abundance": ("scarce", "balanced", "rich"),
                        "distribution": ("clustered", "scattered", "seasonal"),
                        "hazard": ("drought", "toxin", "heat", "crowding"),
                        "volatility": ("stable", "pulsing", "chaotic")},
        "founders": {"balance": ("prey_heavy", "balanced", "predator_heavy"),
                     "diversity": ("focused", "varied"),
                     "preyStrategy": ("efficient_grazing", "early_brood", "armored",
                                      "swarming", "dispersal"),
                     "predatorStrategy": ("ambush", "pursuit", "pack_hunting",
                                          "efficient_kill", "brood_hunting")}}
    assert FITNESS_KEYS == ("survive", "replicate", "cooperate", "explore", "adapt")


@pytest.mark.parametrize(("section", "field"), [
    (section, field) for section, fields in CONFIG_VOCABULARY.items() for field in fields])
def test_every_config_value_is_accepted_and_others_refused(section: str, field: str) -> None:
    for value in CONFIG_VOCABULARY[section][field]:
        config = default_config()
        config[section][field] = value
        assert validate_config(config)[section][field] == value
    config = default_config()
    config[section][field] = "unheard_of"
    words = ", ".join(CONFIG_VOCABULARY[section][field])
    with pytest.raises(EcosystemError,
                       match=f"^{re.escape(f'Invalid life config: {section}.{field} must be one of {words}')}$"):
        validate_config(config)


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda c: c.update(extra=1), "Invalid life config: extra is not an accepted key"),
    (lambda c: c["environment"].update(wind="x"),
     "Invalid life config: environment.wind is not an accepted key"),
    (lambda c: c["founders"].pop("diversity"),
     "Invalid life config: founders.diversity is required"),
    (lambda c: c["fitness"].update(survive=1.2, replicate=-0.2),
     "Invalid life config: fitness.survive must be finite and within 0.0..1.0"),
    (lambda c: c["fitness"].update(survive=10**400),  # no float holds it
     "Invalid life config: fitness.survive must be finite and within 0.0..1.0"),
    (lambda c: c["fitness"].update(survive=0.3),
     "Invalid life config: fitness weights must total 1 (within 1e-9)"),
    (lambda c: c["fitness"].update(adapt=True),
     "Invalid life config: fitness.adapt must be a number"),
    (lambda c: c["fitness"].update(luck=0.0),
     "Invalid life config: fitness.luck is not an accepted key"),
    (lambda c: c["rules"].update(surprise=True), "Invalid ecosystem rule graph"),
])
def test_config_errors(mutate, message: str) -> None:
    config = default_config()
    mutate(config)
    with pytest.raises(EcosystemError, match=f"^{re.escape(message)}$"):
        validate_config(config)


def test_fitness_total_tolerance_is_1e9() -> None:
    weights = {key: 0.2 for key in FITNESS_KEYS}
    weights["adapt"] = 0.2 + 9e-10
    assert validate_fitness(weights)["adapt"] == weights["adapt"]
    weights["adapt"] = 0.2 + 2e-9
    with pytest.raises(EcosystemError):
        validate_fitness(weights)


def test_rules_are_optional_and_validated_as_a_clone() -> None:
    config = default_config()
    del config["rules"]
    assert "rules" not in validate_config(config)
    config = default_config()
    out = validate_config(config)
    out["rules"]["species"][0]["role"] = "producer"
    assert config["rules"]["species"][0]["role"] == "grazer"


def test_normalize_fitness_examples() -> None:
    assert normalize_fitness({k: 0.0 for k in FITNESS_KEYS}) == {k: 0.2 for k in FITNESS_KEYS}
    assert normalize_fitness({}) == {k: 0.2 for k in FITNESS_KEYS}
    out = normalize_fitness({"survive": 3.0, "replicate": -1.0, "cooperate": math.nan,
                             "explore": math.inf, "adapt": 1.0})
    assert out == {"survive": 0.75, "replicate": 0.0, "cooperate": 0.0, "explore": 0.0,
                   "adapt": 0.25}


weight = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**6),
                   st.booleans(), st.none(), st.text(max_size=3))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(FITNESS_KEYS + ("other",)), weight))
def test_normalize_fitness_always_yields_valid_weights(raw: dict) -> None:
    out = normalize_fitness(raw)
    assert validate_fitness(out) == out
    positive = {k for k in FITNESS_KEYS if isinstance(raw.get(k), int | float)
                and not isinstance(raw.get(k), bool) and math.isfinite(raw[k]) and raw[k] > 0}
    if positive:
        assert {k for k, v in out.items() if v > 0} <= positive
        big = [k for k in positive if out[k] >= 1e-290]
        for a in big:  # ratios are preserved wherever the result is not subnormal
            for b in big:
                assert math.isclose(out[a] * raw[b], out[b] * raw[a], rel_tol=1e-9)
    else:
        assert out == {k: 0.2 for k in FITNESS_KEYS}


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(FITNESS_KEYS), st.floats(0, 1)))
def test_valid_weights_are_a_fixed_point_up_to_rounding(raw: dict) -> None:
    out = normalize_fitness(copy.deepcopy(raw))
    again = normalize_fitness(out)
    assert all(math.isclose(out[k], again[k], rel_tol=1e-12, abs_tol=1e-300) for k in out)
