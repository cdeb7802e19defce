"""The step API: `start` + `step` give the pinned digests, never change their input, and
hand decisions in live (as accepted) exactly as a batch run does."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest

from actors.ecosystem.density import density_frame, downsample, quantise
from actors.ecosystem.engine import start, step
from actors.ecosystem.errors import EcosystemError
from actors.ecosystem.keywords import deterministic_setup
from actors.ecosystem.rates import LEGACY_MODEL
from actors.ecosystem.run import simulate
from actors.ecosystem.setup import default_config
from tests.ecosystem.records import FIXTURE


def _config(record: dict) -> dict:
    return (deterministic_setup(record["answers"])["config"] if "answers" in record
            else record["config"])


def test_pinned_records_through_step_give_the_recorded_digests() -> None:
    """Each decision is handed to `step` right after the generation it was accepted at,
    as a live run does; every digest equals the one recorded by the batch simulate."""
    for record in json.loads(FIXTURE.read_text()):
        state = start(_config(record), record["graph"], record["seed"], record["size"],
                      record.get("model", LEGACY_MODEL))
        digests = [state.frame["digest"]]
        for t in range(1, record["generations"] + 1):
            due = [d for d in record["decisions"] if d["generation"] == t - 1]
            state, frame = step(state, due)
            assert frame["generation"] == t
            digests.append(frame["digest"])
        assert digests == record["digests"], record["seed"]


def test_step_leaves_its_input_as_it_was() -> None:
    state = start(default_config(), default_config()["rules"], 5, 16)
    for _ in range(3):
        state, _ = step(state)
    before = state.fields.fields.copy()
    one, frame = step(state)
    two, again = step(state)
    assert frame == again and one is not state and two is not one
    assert state.generation == 3 and np.array_equal(state.fields.fields, before)
    assert one.generation == two.generation == 4


def test_frame_holds_population_biomass_resource_triggers_and_extinctions() -> None:
    decision = {"generation": 0, "graphVersion": 1, "change": {
        "generation": 2, "activation": "after_6", "duration": "short", "transition": "ramp",
        "patch": {"kind": "self", "species": "A", "value": "cooperative"}}}
    frames = simulate(default_config(), 3, 16, decisions=[decision], size=16)["generations"]
    frame = frames[8]
    assert set(frame) == {"generation", "biomass", "population", "alive", "resource",
                          "predation", "occupied", "score", "graphVersion", "events", "digest"}
    assert set(frame["biomass"]) == set(frame["population"]) == {"A", "B"}
    assert all(isinstance(p, int) and 0 <= p <= 256 for p in frame["population"].values())
    assert frame["population"]["A"] > 0 and frame["biomass"]["A"] > 0.0
    assert frame["events"] == [{"generation": 8, "decision": 0, "trigger": "after_6",
                                "outcome": "applied", "version": 2}]
    assert frames[14]["events"] == [{"generation": 14, "decision": 0, "outcome": "reverted",
                                     "version": 3}]


def test_step_refuses_past_180_and_decisions_from_the_past() -> None:
    state = start(default_config(), default_config()["rules"], 1, 8)
    state, _ = step(state)
    late = {"generation": 0, "graphVersion": 1, "change": {
        "generation": 3, "activation": "immediate", "duration": "short", "transition": "abrupt",
        "patch": {"kind": "self", "species": "A", "value": "cooperative"}}}
    message = ("Invalid scheduled change: decisions[0].generation must not precede the run's "
               "generation 1")
    with pytest.raises(EcosystemError, match=f"^{re.escape(message)}$"):
        step(state, [late])
    for _ in range(179):
        state, _ = step(state)
    assert state.generation == 180
    with pytest.raises(EcosystemError, match=r"^the run has reached generation 180$"):
        step(state)


def test_temporary_changes_stack_on_one_target() -> None:
    """A short change over a long one reverts to the long one's value; the long one then
    reverts to the value before both."""
    def change(at: int, duration: str, value: str, version: int) -> dict:
        return {"generation": at - 1, "graphVersion": version, "change": {
            "generation": at, "activation": "immediate", "duration": duration,
            "transition": "abrupt", "patch": {"kind": "self", "species": "A", "value": value}}}
    state = start(default_config(), default_config()["rules"], 1, 8)
    plan = {3: change(3, "long", "cooperative", 1), 5: change(5, "short", "territorial", 2)}
    selves = []
    for t in range(1, 30):
        due = [plan[t + 1]] if t + 1 in plan else []
        state, _ = step(state, due)
        selves.append(state.graph["species"][0]["self"])
    assert selves[2:4] == ["cooperative"] * 2 and selves[4:10] == ["territorial"] * 6
    assert selves[10:26] == ["cooperative"] * 16 and selves[26:] == ["neutral"] * 3


def test_density_frame_downsamples_and_quantises() -> None:
    state = start(default_config(), default_config()["rules"], 2, 64)
    state, _ = step(state)
    out = density_frame(state)
    assert out["generation"] == 1 and out["side"] == 32 and set(out["species"]) == {"A", "B"}
    for k, sid in enumerate("AB"):
        plane = out["species"][sid]
        data = np.frombuffer(base64.b64decode(plane["data"]), np.uint8).reshape(32, 32)
        block = state.fields.fields[k].astype(np.float64).reshape(32, 2, 32, 2).mean(axis=(1, 3))
        assert data.max() == 255 and plane["scale"] == pytest.approx(block.max(), rel=1e-6)
        assert np.abs(data / 255 * plane["scale"] - block).max() <= plane["scale"] / 255
    small = np.arange(16.0).reshape(4, 4)
    assert downsample(small, 8).shape == (8, 8) and downsample(small, 8)[7, 7] == 15.0
    assert quantise(np.zeros((2, 2))) == (0.0, bytes(4))


def test_the_coarse_history_picture_is_the_density_frame_at_its_side() -> None:
    """A run keeps a 16 x 16 picture of every generation (all planes quantised in one
    pass); it is the spectators' density frame at that side, whatever the grid."""
    from actors.ecosystem.density import coarse

    config = deterministic_setup({"world": "A pond with algae, snails and fish",
                                  "threat": "A pike", "reward": "grow"})
    for size in (16, 24, 64):
        state = start(config["config"], config["graph"], 5, size)
        for _ in range(4):
            state, _ = step(state)
        picture = coarse(state)
        assert picture.side == 16 and len(picture.data) == 16 * 16 * (len(state.ids) + 1)
        assert picture.as_json() == density_frame(state, 16), size
