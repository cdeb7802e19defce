"""The density-field simulation: survival of the default world, determinism, extinction."""

from __future__ import annotations

import ast
import inspect
import json

import attrs
import numpy as np
import pytest

from actors.ecosystem import sim
from actors.ecosystem.errors import EcosystemError
from actors.ecosystem.keywords import deterministic_setup
from actors.ecosystem.rates import compute_rates
from actors.ecosystem.run import simulate
from actors.ecosystem.setup import config_graph, default_config
from actors.ecosystem.sim import Fields, stream


@pytest.mark.parametrize("seed", range(20))
def test_default_world_keeps_every_species_alive_for_180_generations(seed: int) -> None:
    result = simulate(default_config(), seed, 180)
    frames = result["generations"]
    assert len(frames) == 181
    assert all(all(f["alive"].values()) for f in frames)
    assert not any(e["outcome"] == "extinct" for f in frames for e in f["events"])
    # Not merely alive by the threshold: both keep a real population throughout.
    assert min(f["biomass"]["B"] for f in frames) > 20.0
    assert min(f["biomass"]["A"] for f in frames) > 100.0


@pytest.mark.parametrize("seed", range(5))
def test_depletion_feedback_over_a_lowered_capacity_stays_finite(seed: int) -> None:
    """Fragmentation barriers (high, chaotic) drop K far below the resource there; the
    depletion feedback must not turn that into runaway regrowth (inf, then NaN frames no
    JSON can store)."""
    answers = {"world": "A fragile, exhausted valley of deer",
               "threat": "Severe random storms and wolves split the valley with walls",
               "reward": "survive"}
    config = deterministic_setup(answers)["config"]
    assert config["rules"]["environment"] == {
        "regeneration": "depletion_feedback", "pressure": "fragmentation",
        "volatility": "chaotic", "intensity": "high", "duration": "persistent"}
    for frame in simulate(config, seed, 180, size=16)["generations"]:
        json.dumps(frame, allow_nan=False)
        assert frame["resource"] < 2.0, frame["generation"]


def test_runs_are_deterministic_and_seeded() -> None:
    one = simulate(default_config(), 11, 30, size=32)
    again = simulate(default_config(), 11, 30, size=32)
    other = simulate(default_config(), 12, 30, size=32)
    assert one == again
    assert one["record"]["digests"] != other["record"]["digests"]
    assert len(set(one["record"]["digests"])) == 31


def test_streams_are_per_seed_generation_and_purpose() -> None:
    draw = stream(5, 3, "weather").uniform(size=4)
    assert draw.tolist() == stream(5, 3, "weather").uniform(size=4).tolist()
    for other in (stream(6, 3, "weather"), stream(5, 4, "weather"), stream(5, 3, "founders")):
        assert other.uniform(size=4).tolist() != draw.tolist()


def test_extinction_is_a_discrete_observable_event() -> None:
    config = default_config()
    graph = config_graph(config)
    world = Fields(config, graph, 3, 16)
    rates = compute_rates(config, graph, 1, (1.0, 1.0))
    starving = attrs.evolve(rates, attack=np.zeros_like(rates.attack))  # the hunter cannot eat
    events = []
    for g in range(1, 120):
        m = world.step(starving, g)
        events += [(g, sid) for sid in m.extinct_now]
        if not m.alive[1]:
            assert m.totals[1] == 0.0
    assert len(events) == 1 and events[0][1] == "B"
    assert world.alive == [True, False] and not world.fields[1].any()


def test_the_per_cell_update_uses_only_arithmetic() -> None:
    """No transcendental numpy call may touch a cell (they differ across CPUs)."""
    tree = ast.parse(inspect.getsource(sim))
    banned = {"exp", "log", "sin", "cos", "tan", "power", "sqrt", "tanh", "expm1", "log1p"}
    calls = {node.attr for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
             and node.value.id in ("np", "numpy")}
    assert not calls & banned
    assert not any(isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow)
                   for node in ast.walk(tree))


def test_fields_stay_finite_and_nonnegative_in_a_busy_world() -> None:
    setup = deterministic_setup({"world": "algae, snails, crabs and bears share a reef",
                                 "threat": "a storm of poison and sharks",
                                 "reward": "cooperate together"})
    config = setup["config"]
    graph = config["rules"]
    world = Fields(config, graph, 4, 24)
    for g in range(1, 61):
        world.step(compute_rates(config, graph, g, (1.3, 0.7)), g)
        assert np.isfinite(world.fields).all() and (world.fields >= 0).all()
        assert np.isfinite(world.resource).all() and (world.resource >= 0).all()
    # no operation silently widened the cells (that would change every digest)
    assert world.fields.dtype == world.resource.dtype == sim.FIELD


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"seed": -1}, "seed must be an integer within 0..9223372036854775807"),
    ({"seed": True}, "seed must be an integer within 0..9223372036854775807"),
    ({"generations": 181}, "generations must be an integer within 0..180"),
    ({"size": 4}, "size must be an integer within 8..512"),
])
def test_run_parameters_are_checked(kwargs: dict, message: str) -> None:
    args = {"seed": 1, "generations": 2, "size": 16, **kwargs}
    with pytest.raises(EcosystemError, match=f"^{message}$") as err:
        simulate(default_config(), args.pop("seed"), args.pop("generations"), **args)
    assert err.value.code == "invalid_run"


def test_answers_in_a_record_must_be_the_configs_source() -> None:
    lush = deterministic_setup({"world": "lush", "threat": "b", "reward": "c"})["config"]
    with pytest.raises(EcosystemError,
                       match="^config is not the deterministic setup of the answers$"):
        simulate(lush, 1, 2, size=16, answers={"world": "a", "threat": "b", "reward": "c"})
    record = simulate(lush, 1, 2, size=16,
                      answers={"world": " lush ", "threat": "b", "reward": "c"})["record"]
    assert record["answers"] == {"world": "lush", "threat": "b", "reward": "c"}
    assert "config" not in record


def test_avoidance_never_sends_away_more_than_half_a_cell() -> None:
    config = default_config()
    graph = {"version": 1,
             "species": [{"id": sid, "name": sid, "role": "grazer", "self": "neutral"}
                         for sid in "ABCD"],
             "interactions": [{"pair": p, "mode": "avoidance"}
                              for p in ("A-B", "A-C", "A-D", "B-C", "B-D", "C-D")],
             "environment": config["rules"]["environment"]}
    config["founders"]["preyStrategy"] = "dispersal"  # the largest base dispersal
    world = Fields(config, graph, 2, 16)
    world.fields[:] = 50.0
    world.fields[0] = 0.0
    world.fields[0, 5, 5] = 1.0  # one cell of A among crowds of everything it avoids
    world._disperse(compute_rates(config, graph, 1, (1.0, 1.0)))
    assert world.fields[0, 5, 5] == 0.5
    assert world.fields[0].sum() == pytest.approx(1.0)
