"""Carrion follows the pair edges (seed: "Roles alone do not authorize predation:
directional pair edges control inter-species consumption"), and runs stored under the
model before it (a scavenger ate every species' dead) still replay bit for bit."""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np
import pytest

from actors.ecosystem.engine import start, step
from actors.ecosystem.errors import EcosystemError
from actors.ecosystem.interpret import food_web
from actors.ecosystem.keywords import deterministic_setup
from actors.ecosystem.rates import LEGACY_MODEL, MODEL, species_rates
from actors.ecosystem.replay import replay
from actors.ecosystem.rules import WORLD
from actors.ecosystem.run import simulate
from actors.ecosystem.setup import default_config
from tests.ecosystem.records import FIXTURE
from tests.ecosystem.table import Table

DESERT = {"world": "a barren desert with moss and beetles",
          "threat": "toxic heat and vultures", "reward": "explore"}


def crows(bc: str) -> dict[str, Any]:
    """Moss A, deer B, scavenger crows C eating A; `bc` joins B and C."""
    return {"version": 1,
            "species": [{"id": "A", "name": "moss", "role": "grazer", "self": "neutral"},
                        {"id": "B", "name": "deer", "role": "grazer", "self": "neutral"},
                        {"id": "C", "name": "crows", "role": "scavenger", "self": "neutral"}],
            "interactions": [{"pair": "A-B", "mode": "neutral"},
                             {"pair": "A-C", "mode": "b_consumes_a"},
                             {"pair": "B-C", "mode": bc}],
            "environment": default_config()["rules"]["environment"]}


def crows_after_a_generation(bc: str, model: int, *, deer: bool) -> float:
    """C's biomass one generation on, with A (C's edge food) gone, and B there or not."""
    config = default_config()
    del config["rules"]
    state = start(config, crows(bc), seed=3, size=16, model=model)
    for k in (0, 1) if not deer else (0,):
        state.fields.fields[k][:] = 0.0
        state.fields.alive[k] = False
    return step(state)[1]["biomass"]["C"]


def test_a_scavenger_gains_nothing_from_the_dead_of_a_species_it_has_no_edge_to() -> None:
    """B and C are neutral: B's dying feeds C only under the legacy model."""
    assert crows_after_a_generation("neutral", MODEL, deer=True) == \
        crows_after_a_generation("neutral", MODEL, deer=False)
    assert crows_after_a_generation("neutral", LEGACY_MODEL, deer=True) > \
        crows_after_a_generation("neutral", LEGACY_MODEL, deer=False)
    # an edge C eats B makes B's dead C's carrion (besides B itself)
    rates = species_rates(default_config(), crows("b_consumes_a"))
    assert rates.carrion.tolist() == [[0, 0, 0], [0, 0, 0], [1, 1, 0]]
    assert species_rates(default_config(), crows("a_consumes_b")).carrion[2].tolist() == \
        [1, 0, 0]


def test_the_food_web_shows_carrion_only_along_edges() -> None:
    assert food_web(crows("avoidance")) == [
        "crows (C, scavenger) eats moss (A, grazer) and its dead",
        "moss (A, grazer) eats the basal resource",
        "deer (B, grazer) eats the basal resource"]
    assert "crows (C, scavenger) eats deer (B, grazer) and its dead" in food_web(
        crows("b_consumes_a"))
    assert "deer (B, grazer) eats crows (C, scavenger)" in food_web(crows("a_consumes_b"))


def legacy_scavenger_records() -> list[dict[str, Any]]:
    """The pinned corpus's runs with two scavengers joined by no edge (stored under model 1,
    their records carry no model)."""
    out = [r for r in json.loads(FIXTURE.read_text())
           if [s["role"] for s in r["graph"]["species"]].count("scavenger") == 2]
    assert out and all("model" not in r for r in out)
    return out


def test_a_record_without_a_model_replays_under_the_legacy_one() -> None:
    for record in legacy_scavenger_records():
        assert replay(record).ok
        assert not replay({**record, "model": MODEL}).ok  # the carrion made the difference


def test_a_new_record_carries_its_model_and_replays() -> None:
    """A version-2 run of two scavengers, its digests pinned (a change to the model is a
    new version, never an edit)."""
    record = simulate(deterministic_setup(DESERT)["config"], 4, 30, size=16)["record"]
    assert record["model"] == MODEL
    assert (record["digests"][10], record["digests"][30]) == (
        "e21c9770c0e583c9ea114762ac37d110", "154fd0ab1217452474c2d8d74af46812")
    assert replay(record).ok
    assert not replay({**record, "model": LEGACY_MODEL}).ok
    with pytest.raises(EcosystemError, match=r"Invalid run record: model must be 1\.\.2"):
        replay({**record, "model": 3})


def test_a_stream_stored_before_model_versions_folds_under_the_legacy_model() -> None:
    """A stored setup event without `model` (written before versions) is model 1: its run's
    generations re-simulate to their stored digests; read as the new model they do not."""
    table = Table()
    table.call("ecosystem.create", {"answers": DESERT, "seed": 5, "size": 16})
    setup = table.stored[0]
    assert setup["type"] == "setup" and setup["model"] == MODEL
    assert [s["role"] for s in setup["graph"]["species"]].count("scavenger") == 2
    old = {k: v for k, v in setup.items() if k != "model"}
    engine = start(old["config"], old["graph"], old["seed"], old["size"], LEGACY_MODEL)
    stored = [old, {"type": "generation", "frame": engine.frame}]
    for _ in range(12):
        engine, frame = step(engine)
        stored.append({"type": "generation", "frame": frame})

    def fold(events: list[dict[str, Any]]) -> Any:
        state = WORLD.initial("ecosystem:old")
        for data in events:
            state = WORLD.evolve(state, WORLD.codec.decode(data))
        return state

    state = fold(stored)
    assert state.setup.model == LEGACY_MODEL and state.generation == 12
    assert np.array_equal(state.engine.fields.fields, engine.fields.fields)
    with pytest.raises(EcosystemError, match="Invalid run record: generation 1 simulates"):
        fold([{**old, "model": MODEL}] + copy.deepcopy(stored[1:]))
