"""Deterministic setup: the keyword table is total, deterministic and labelled."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.ecosystem.errors import EcosystemError
from actors.ecosystem.graph import default_rule_graph, validate_rule_graph
from actors.ecosystem.keywords import (
    FALLBACK_SOURCE,
    SETTING_TABLE,
    deterministic_setup,
)
from actors.ecosystem.run import simulate
from actors.ecosystem.setup import default_config, validate_config


def test_prose_without_keywords_gives_the_default_world() -> None:
    result = deterministic_setup({"world": "x", "threat": "y", "reward": "z"})
    assert result["source"] == FALLBACK_SOURCE == "deterministic_fallback"
    graph = default_rule_graph()
    assert result["graph"] == graph
    expected = default_config()
    assert result["config"] == expected


def test_keywords_select_settings_roles_and_links() -> None:
    result = deterministic_setup({
        "world": "A lush pond in spring with algae, snails and fish",
        "threat": "A pike lurks; poison spreads in a severe, endless wave",
        "reward": "Explore and grow"})
    config, graph = result["config"], result["graph"]
    assert config["environment"] == {"abundance": "rich", "distribution": "clustered",
                                     "hazard": "toxin", "volatility": "pulsing"}
    assert config["founders"]["predatorStrategy"] == "ambush"
    assert graph["environment"] == {"regeneration": "steady", "pressure": "toxin_wave",
                                    "volatility": "pulsing", "intensity": "high",
                                    "duration": "persistent"}
    assert config["fitness"] == pytest.approx({"survive": 1 / 9, "replicate": 3 / 9,
                                               "cooperate": 1 / 9, "explore": 3 / 9,
                                               "adapt": 1 / 9})
    assert [(s["name"], s["role"]) for s in graph["species"]] == [
        ("algae", "producer"), ("snails", "grazer"), ("fish", "grazer"), ("pike", "hunter")]
    # snails and fish graze the algae; the pike hunts the grazers, not the algae
    assert [i["mode"] for i in graph["interactions"]] == [
        "b_consumes_a", "b_consumes_a", "neutral", "competition", "b_consumes_a",
        "b_consumes_a"]


def test_no_basal_organism_is_repaired() -> None:
    graph = deterministic_setup({"world": "wolves and vultures", "threat": "sharks",
                                 "reward": "survive"})["graph"]
    assert graph["species"][0]["role"] == "grazer"
    assert validate_rule_graph(graph) == graph


def test_every_setting_row_is_reachable() -> None:
    for field, (sources, rows, default) in SETTING_TABLE.items():
        for value, stems in rows:
            answers = {"world": "x", "threat": "y", "reward": "z"}
            answers[sources[0]] = f"it is {stems[0]}"
            section, key = field.split(".")
            result = deterministic_setup(answers)
            got = (result["graph"]["environment"] if section == "graph"
                   else result["config"][section])[key]
            assert got == value, (field, stems[0])


def test_invalid_answers_raise_the_schema_error() -> None:
    with pytest.raises(EcosystemError, match=r"^Invalid setup answers: world must be "
                       r"nonempty after trimming$"):
        deterministic_setup({"world": " ", "threat": "y", "reward": "z"})


WORDS = ["wolf", "grass", "deer", "crab", "bear", "pack", "poison", "lush", "symbiosis",
         "avoid", "cannibal", "fungus", "algae", "hunter", "x", "Ünïcode", "-", "..."]
prose = st.lists(st.sampled_from(WORDS) | st.text(max_size=6), min_size=1, max_size=12).map(
    " ".join).map(lambda s: s[:140]).filter(str.strip)


@settings(max_examples=120, deadline=None)
@given(prose, prose, prose)
def test_deterministic_setup_is_total_and_deterministic(world: str, threat: str,
                                                        reward: str) -> None:
    answers = {"world": world, "threat": threat, "reward": reward}
    result = deterministic_setup(answers)
    assert validate_config(result["config"]) == result["config"]
    assert validate_rule_graph(result["graph"]) == result["graph"]
    assert result["config"]["rules"] == result["graph"]
    assert deterministic_setup(dict(answers)) == result


def test_diets_fall_back_tier_by_tier() -> None:
    graph = deterministic_setup({"world": "grass and hyenas", "threat": "lions",
                                 "reward": "x"})["graph"]
    assert [s["role"] for s in graph["species"]] == ["producer", "scavenger", "hunter"]
    # no grazer: the scavenger eats the grass, the lion the scavenger (not the grass)
    assert [i["mode"] for i in graph["interactions"]] == ["b_consumes_a", "neutral",
                                                          "b_consumes_a"]


WORLDS = [
    ("A lush pond with algae, snails and fish", "A pike and poison", "coexist and grow"),
    ("grass, rabbits and deer on a meadow", "wolves hunt in packs", "survive"),
    ("a barren desert with moss and beetles", "heat and vultures", "explore"),
    ("a forest with bears, deer and ferns", "wolves and a drought", "adapt"),
    ("a coral reef with kelp, krill and crabs", "sharks and acid", "balance"),
    ("an island of grass and goats", "a fox arrives", "grow"),
    ("a jungle with monkeys and plants", "snakes and eagles", "survive"),
    ("a cave with fungus and worms", "spiders lurk", "endure"),
    ("a tundra with lichen and hares", "owls and a long winter", "adapt"),
    ("a swamp of algae and minnows", "a pike and crows", "explore"),
    ("a savanna of grass and hyenas", "lions hunt", "survive"),
    ("a garden of flowers, bees and ants", "a toxic spray", "cooperate"),
]


@pytest.mark.parametrize(("world", "threat", "reward"), WORLDS)
def test_keyword_worlds_keep_their_species_alive(world: str, threat: str, reward: str) -> None:
    """Calibration guard: ordinary prose gives a world where nobody starves (32x32)."""
    config = deterministic_setup({"world": world, "threat": threat, "reward": reward})["config"]
    frames = simulate(config, 3, 180, size=32)["generations"]
    assert all(frames[-1]["alive"].values()), [e for f in frames for e in f["events"]]


@pytest.mark.deep
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize(("world", "threat", "reward"), WORLDS)
def test_keyword_worlds_survive_at_full_size(world: str, threat: str, reward: str,
                                             seed: int) -> None:
    config = deterministic_setup({"world": world, "threat": threat, "reward": reward})["config"]
    assert all(simulate(config, seed, 180)["generations"][-1]["alive"].values())


def test_short_organism_stems_need_the_whole_word() -> None:
    graph = deterministic_setup({"world": "another catastrophic day, rather been there",
                                 "threat": "foxes and bees", "reward": "x"})["graph"]
    assert [(s["name"], s["role"]) for s in graph["species"]] == [("foxes", "hunter"),
                                                                  ("bees", "grazer")]
