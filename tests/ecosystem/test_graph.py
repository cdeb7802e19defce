"""Rule graph contract: the seed's validation example, vocabularies, errors, clones, patches."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.ecosystem.errors import EcosystemError
from actors.ecosystem.graph import (
    ENVIRONMENT_VOCABULARY,
    GRAPH_ERROR,
    PAIR_MODES,
    ROLES,
    SELF_MODES,
    apply_patch,
    canonical_pairs,
    default_rule_graph,
    validate_patch,
    validate_rule_graph,
)
from actors.ecosystem.schedule import validate_decision

SHAPE = "^Invalid ecosystem rule graph$"


def three() -> dict[str, Any]:
    """A valid three-species graph: A producer, B grazer eats A, C hunter eats B."""
    return {
        "version": 3,
        "species": [{"id": "A", "name": "algae", "role": "producer", "self": "neutral"},
                    {"id": "B", "name": "snails", "role": "grazer", "self": "cooperative"},
                    {"id": "C", "name": "pike", "role": "hunter", "self": "territorial"}],
        "interactions": [{"pair": "A-B", "mode": "b_consumes_a"},
                         {"pair": "A-C", "mode": "neutral"},
                         {"pair": "B-C", "mode": "b_consumes_a"}],
        "environment": {"regeneration": "pulsed", "pressure": "toxin_wave",
                        "volatility": "chaotic", "intensity": "high", "duration": "short"},
        "council": {"selected": "calm", "options": [{"label": "calm", "probability": 0.5},
                                                    {"label": "wild", "probability": 0.5}]},
    }


def test_seed_validation_example() -> None:
    graph = validate_rule_graph(default_rule_graph())
    assert (len(graph["species"]), graph["interactions"][0]["mode"]) == (2, "b_consumes_a")
    with pytest.raises(EcosystemError, match=SHAPE) as err:
        validate_rule_graph({**graph, "surprise": True})
    assert err.value.code == "invalid_graph" and err.value.path == "surprise"


def test_validation_returns_a_clone() -> None:
    graph = three()
    out = validate_rule_graph(graph)
    assert out == graph and out is not graph
    out["species"][0]["name"] = "changed"
    out["council"]["options"][0]["probability"] = 0.1
    assert graph == three()


def test_vocabularies_are_the_seeds() -> None:
    assert ROLES == ("producer", "grazer", "hunter", "scavenger", "omnivore")
    assert SELF_MODES == ("cooperative", "territorial", "cannibalistic", "neutral")
    assert PAIR_MODES == ("a_consumes_b", "b_consumes_a", "competition", "mutualism",
                          "avoidance", "neutral")
    assert ENVIRONMENT_VOCABULARY == {
        "regeneration": ("steady", "pulsed", "depletion_feedback"),
        "pressure": ("stability", "drought", "toxin_wave", "heat_wave", "fragmentation",
                     "nutrient_bloom"),
        "volatility": ("stable", "pulsing", "chaotic"),
        "intensity": ("low", "medium", "high"),
        "duration": ("short", "medium", "long", "persistent"),
    }


def test_every_vocabulary_word_is_accepted() -> None:
    for field, words in ENVIRONMENT_VOCABULARY.items():
        for word in words:
            graph = three()
            graph["environment"][field] = word
            assert validate_rule_graph(graph)["environment"][field] == word
    for word in SELF_MODES:
        graph = three()
        graph["species"][0]["self"] = word
        assert validate_rule_graph(graph)["species"][0]["self"] == word
    for mode in ("competition", "mutualism", "avoidance", "neutral", "b_consumes_a",
                 "a_consumes_b"):
        graph = three()
        graph["interactions"][1]["mode"] = mode  # A-C: C already eats B
        assert validate_rule_graph(graph)["interactions"][1]["mode"] == mode


@pytest.mark.parametrize("mutate", [
    lambda g: g.update(version=0),
    lambda g: g.update(version=True),
    lambda g: g.update(version=float("inf")),
    lambda g: g.update(version=float("nan")),
    lambda g: g.update(version=1.5),
    lambda g: g.pop("environment"),
    lambda g: g["species"].pop(),  # leaves 2 species but 3 pairs: pairs fail, see below
    lambda g: g["species"][0].update(role="tree"),
    lambda g: g["species"][0].update(size=3),
    lambda g: g["species"][1].update(self="shy"),
    lambda g: g["species"][1].update(name=""),
    lambda g: g["species"][1].update(name=" x"),
    lambda g: g["species"][1].update(name="x" * 41),
    lambda g: g["species"][1].update(id="E"),
    lambda g: g["interactions"][0].update(mode="eats"),
    lambda g: g["interactions"][0].update(pair="AB"),
    lambda g: g["interactions"][0].update(weight=1),
    lambda g: g["environment"].update(pressure="flood"),
    lambda g: g["environment"].update(season="winter"),
    lambda g: g.update(species=[]),
    lambda g: g.update(species=g["species"] * 2),
    lambda g: g.update(interactions=[{}]),
    lambda g: g["council"].update(selected="other"),
    lambda g: g["council"]["options"][0].update(probability=1.5),
    lambda g: g["council"]["options"][1].update(probability=0.6),  # sum 1.1 > 1
    lambda g: g["council"]["options"][1].update(label="calm"),
    lambda g: g["council"].update(reason="x"),
    lambda g: g["council"].update(options=[]),
])
def test_shape_faults_raise_the_strict_message(mutate) -> None:
    graph = three()
    mutate(graph)
    with pytest.raises(EcosystemError, match=SHAPE if len(graph.get("species", [])) != 2
                       else r"^Ecosystem interactions must"):
        validate_rule_graph(graph)


@pytest.mark.parametrize("value", [None, [], "graph", 3])
def test_non_objects_are_shape_faults(value: Any) -> None:
    with pytest.raises(EcosystemError, match=SHAPE):
        validate_rule_graph(value)


def test_canonical_order_error() -> None:
    graph = three()
    graph["species"][1]["id"], graph["species"][2]["id"] = "C", "B"
    with pytest.raises(EcosystemError, match=r"^Ecosystem species must be in canonical prefix "
                       r"order A, B, C; got A, C, B$"):
        validate_rule_graph(graph)
    graph = three()
    graph["species"][2]["id"] = "D"
    with pytest.raises(EcosystemError, match=r"got A, B, D$"):
        validate_rule_graph(graph)


@pytest.mark.parametrize(("pairs", "got"), [
    (["A-C", "A-B", "B-C"], "A-C, A-B, B-C"),
    (["A-B", "B-C"], "A-B, B-C"),
    (["A-B", "A-C", "B-C", "B-C"], "A-B, A-C, B-C, B-C"),
    (["A-B", "A-C", "C-B"], "A-B, A-C, C-B"),
    (["A-B"] * 17, None),  # past the list's bound: the same sentence, with the count
])
def test_complete_pair_error(pairs: list[str], got: str | None) -> None:
    graph = three()
    graph["interactions"] = [{"pair": p, "mode": "neutral"} for p in pairs]
    message = ("Ecosystem interactions must list every canonical pair exactly once and in "
               "order (A-B, A-C, B-C); got " + (f"({got})" if got else "17 interactions"))
    with pytest.raises(EcosystemError, match=f"^{re.escape(message)}$"):
        validate_rule_graph(graph)


def test_a_json_integer_written_with_a_fraction_of_zero_is_an_integer() -> None:
    """JSON has numbers, not ints: 3.0 is the integer 3 (JavaScript's Number.isInteger), as
    the seed's schema reads it; the clone holds the int."""
    graph = validate_rule_graph({**three(), "version": 3.0})
    assert graph == three() and type(graph["version"]) is int
    decision = {"generation": 2.0, "graphVersion": 1.0, "change": {
        "generation": 4.0, "activation": "immediate", "duration": "short",
        "transition": "abrupt", "patch": {"kind": "self", "species": "A", "value": "neutral"}}}
    out = validate_decision(decision)
    assert [type(x) for x in (out["generation"], out["graphVersion"],
                              out["change"]["generation"])] == [int, int, int]


@pytest.mark.parametrize(("mutate", "path"), [
    (lambda g: g.update(interactions=[1] * 17), "interactions[0]"),
    (lambda g: g["interactions"].extend([{"pair": "A-B", "mode": "neutral"}] * 14 + [{}]),
     "interactions[17].pair"),
    (lambda g: g.update(interactions=g["interactions"] * 17, environment={"x": 1}),
     "environment.x"),
    (lambda g: g.update(interactions=g["interactions"] * 17,
                        council={"selected": "a", "options": []}), "council.options"),
])
def test_shape_faults_of_an_over_long_list_are_shape_faults(mutate: Any, path: str) -> None:
    """Seed: a strict invalid shape throws "Invalid ecosystem rule graph"; the pair
    invariant's descriptive error comes only for a list whose every item is well shaped
    (and whatever its length, the message stays bounded)."""
    graph = three()
    mutate(graph)
    with pytest.raises(EcosystemError) as refused:
        validate_rule_graph(graph)
    assert (refused.value.message, refused.value.path) == (GRAPH_ERROR, path)
    graph = three()
    graph["interactions"] *= 10**5
    with pytest.raises(EcosystemError, match=r"; got 300000 interactions$"):
        validate_rule_graph(graph)


def test_basal_path_errors() -> None:
    graph = three()
    for s in graph["species"]:
        s["role"] = "hunter"
    with pytest.raises(EcosystemError, match=r"^Ecosystem rule graph needs a basal-feeding "
                       r"species \(producer, grazer or omnivore\)$"):
        validate_rule_graph(graph)
    graph = three()
    graph["interactions"][2]["mode"] = "competition"  # the hunter no longer eats
    with pytest.raises(EcosystemError, match=r"^Species C \(hunter\) has no feeding path to a "
                       r"basal-feeding species$"):
        validate_rule_graph(graph)
    graph = three()  # roles alone do not authorize predation: a scavenger needs an edge too
    graph["species"][2]["role"] = "scavenger"
    assert validate_rule_graph(graph)
    graph["interactions"][2]["mode"] = "a_consumes_b"  # B eats C: C starves
    with pytest.raises(EcosystemError, match=r"^Species C \(scavenger\)"):
        validate_rule_graph(graph)


def test_council_selection_must_be_maximal() -> None:
    graph = three()
    graph["council"]["options"][1]["probability"] = 0.4
    graph["council"]["selected"] = "wild"
    with pytest.raises(EcosystemError,
                       match=r"^Council selection does not have maximal probability$"):
        validate_rule_graph(graph)


# ---------------------------------------------------------------- random graphs

def _reference_valid(graph: dict[str, Any]) -> str | None:
    """Independent statement of the basal-path invariant: the first starving species."""
    basal = [s["id"] for s in graph["species"] if s["role"] in ("producer", "grazer",
                                                               "omnivore")]
    if not basal:
        return "none"
    eats: dict[str, set[str]] = {s["id"]: set() for s in graph["species"]}
    for item in graph["interactions"]:
        a, b = item["pair"][0], item["pair"][2]
        if item["mode"] == "a_consumes_b":
            eats[a].add(b)
        if item["mode"] == "b_consumes_a":
            eats[b].add(a)

    def reaches(sid: str, seen: frozenset[str]) -> bool:
        return sid in basal or any(reaches(x, seen | {sid}) for x in eats[sid] - seen)

    return next((sid for sid in eats if not reaches(sid, frozenset())), None)


@st.composite
def graphs(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(2, 4))
    ids = "ABCD"[:n]
    return {
        "version": draw(st.integers(1, 10**6)),
        "species": [{"id": sid, "name": draw(st.sampled_from(["a", "deer", "Grey wolf"])),
                     "role": draw(st.sampled_from(ROLES)),
                     "self": draw(st.sampled_from(SELF_MODES))} for sid in ids],
        "interactions": [{"pair": p, "mode": draw(st.sampled_from(PAIR_MODES))}
                         for p in canonical_pairs(n)],
        "environment": {f: draw(st.sampled_from(words))
                        for f, words in ENVIRONMENT_VOCABULARY.items()},
    }


@settings(max_examples=150, deadline=None)
@given(graphs(), st.randoms(use_true_random=False))
def test_random_graphs_validate_or_fail_with_the_right_message(graph: dict, rnd) -> None:
    starving = _reference_valid(graph)
    if starving is None:
        out = validate_rule_graph(graph)
        assert out == graph and validate_rule_graph(out) == out
    elif starving == "none":
        with pytest.raises(EcosystemError, match=r"^Ecosystem rule graph needs a basal"):
            validate_rule_graph(graph)
    else:
        with pytest.raises(EcosystemError, match=rf"^Species {starving} \("):
            validate_rule_graph(graph)
    # Structural damage always gives its own message, whatever the basal state.
    broken = copy.deepcopy(graph)
    broken["species"].reverse()
    with pytest.raises(EcosystemError, match=r"^Ecosystem species must be in canonical"):
        validate_rule_graph(broken)
    broken = copy.deepcopy(graph)
    broken["interactions"].append(copy.deepcopy(rnd.choice(graph["interactions"])))
    with pytest.raises(EcosystemError, match=r"^Ecosystem interactions must list"):
        validate_rule_graph(broken)
    broken = copy.deepcopy(graph)
    target = rnd.choice([broken, broken["environment"], rnd.choice(broken["species"]),
                         rnd.choice(broken["interactions"])])
    target["surprise"] = True
    with pytest.raises(EcosystemError, match=SHAPE):
        validate_rule_graph(broken)


# ---------------------------------------------------------------- patches

def test_patch_kinds_apply_and_bump_the_version_once() -> None:
    graph = validate_rule_graph(three())
    for patch, where in [
        ({"kind": "pair", "pair": "A-C", "mode": "competition"},
         lambda g: g["interactions"][1]["mode"]),
        ({"kind": "self", "species": "B", "value": "cannibalistic"},
         lambda g: g["species"][1]["self"]),
        ({"kind": "environment", "field": "pressure", "value": "fragmentation"},
         lambda g: g["environment"]["pressure"]),
    ]:
        new, changed = apply_patch(graph, patch)
        assert changed and new["version"] == graph["version"] + 1
        assert where(new) == patch.get("mode", patch.get("value"))
        same, changed = apply_patch(new, patch)
        assert not changed and same == new and same["version"] == new["version"]
    assert graph == three()  # the input is untouched


@pytest.mark.parametrize("patch", [
    {"kind": "pair", "pair": "A-B"},
    {"kind": "pair", "pair": "A-B", "mode": "eats"},
    {"kind": "pair", "pair": "B-A", "mode": "neutral"},
    {"kind": "pair", "pair": "A-B", "mode": "neutral", "value": "x"},
    {"kind": "self", "species": "E", "value": "neutral"},
    {"kind": "self", "species": "A", "value": "friendly"},
    {"kind": "environment", "field": "pressure", "value": "stable"},
    {"kind": "environment", "field": "weather", "value": "stable"},
    {"kind": "weather", "field": "pressure", "value": "drought"},
    {"field": "pressure", "value": "drought"},
    "pair",
])
def test_malformed_patches_reject(patch: Any) -> None:
    with pytest.raises(EcosystemError, match=r"^Invalid rule patch$") as err:
        validate_patch(patch)
    assert err.value.code == "invalid_patch"


def test_patch_targets_must_exist() -> None:
    graph = default_rule_graph()
    with pytest.raises(EcosystemError, match=r"^Patch pair A-C does not exist in this graph$"):
        apply_patch(graph, {"kind": "pair", "pair": "A-C", "mode": "neutral"})
    with pytest.raises(EcosystemError, match=r"^Patch species C does not exist in this graph$"):
        apply_patch(graph, {"kind": "self", "species": "C", "value": "neutral"})


def test_patch_that_breaks_an_invariant_changes_nothing() -> None:
    graph = default_rule_graph()
    with pytest.raises(EcosystemError, match=r"^Species B \(hunter\) has no feeding path"):
        apply_patch(graph, {"kind": "pair", "pair": "A-B", "mode": "mutualism"})
    assert graph == default_rule_graph()
