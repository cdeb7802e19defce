"""`bench peers` end to end for a moment: every key of its JSON is there and every figure
is a positive number. No speed is asserted (speed lives in `python -m bench peers`).

Needs Node and the peers' packages in the cache (`python -m bench peers --install-only`
puts them there once, in a few minutes); skipped with the reason otherwise.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from bench import _peers_servers as servers
from bench import peers

TINY = ["--connections", "10", "--seconds", "0.3", "--turns", "1", "--idle", "300",
        "--writers", "2", "--spectators", "10", "--fan-seconds", "0.3"]
ROUND_TRIP_KEYS = {"round_trips", "round_trips_per_s", "p50_ms", "p99_ms",
                   "per_turn_round_trips_per_s", "server_cpu_us_per_round_trip",
                   "server_cpu_cores", "client_cpu_us_per_round_trip", "client_cpu_cores"}
FAN_KEYS = {"deliveries_per_s", "lag_p50_ms", "lag_p99_ms", "adds_per_s", "add_p99_ms",
            "server_cpu_cores", "client_cpu_cores", "spectators_dropped"}
SIDES = {"ours", "colyseus_memory", "colyseus_sqlite", "echo_python", "echo_node"}


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    reason = servers.why_no_node()
    if reason is not None:
        pytest.skip(reason)
    if not servers.installed():
        pytest.skip(f"the peers' Node packages are not in {servers.cache_dir()}: run "
                    "`python -m bench peers --install-only` once (a few minutes)")
    return peers.main(TINY)


def test_round_trips_have_every_side_and_figure(result: dict[str, Any]) -> None:
    assert set(result["round_trips"]) == {"10"}
    for level in result["round_trips"].values():
        assert set(level) == SIDES | {"ratios"}
        for side in SIDES:
            figures = level[side]
            assert set(figures) == ROUND_TRIP_KEYS
            for key in ROUND_TRIP_KEYS - {"per_turn_round_trips_per_s"}:
                assert _positive(figures[key]), (side, key, figures[key])
            assert len(figures["per_turn_round_trips_per_s"]) == 1
        assert set(level["ratios"]) == {"ours/colyseus_memory", "ours/colyseus_sqlite",
                                        "echo_python/echo_node"}
        for ratios in level["ratios"].values():
            assert set(ratios) == set(peers.RT_KEYS)
            assert all(_positive(v) for v in ratios.values()), ratios


def test_equal_rate_paces_the_peer_at_ours(result: dict[str, Any]) -> None:
    equal = result["equal_rate"]
    assert equal["connections"] == 10
    assert set(equal) == {"connections", "ours", "colyseus_memory", "ratios"}
    for side in ("ours", "colyseus_memory"):
        assert set(equal[side]) == ROUND_TRIP_KEYS
        assert _positive(equal[side]["server_cpu_us_per_round_trip"])
    # Back to back, Colyseus's room makes several times our rate; paced, about ours.
    assert equal["ratios"]["ours/colyseus_memory"]["round_trips_per_s"] > 0.6
    assert _positive(result["goals"]["cpu_per_round_trip_vs_colyseus_memory"]["at_equal_rate"])


def test_idle_memory_grows_on_both_servers(result: dict[str, Any]) -> None:
    idle = result["idle_memory"]
    assert idle["connections"] == 300
    for side in ("ours", "colyseus_memory"):
        assert all(_positive(v) for v in idle[side].values()), idle[side]
    assert _positive(idle["ratio_ours/colyseus_memory"])


def test_fan_out_reaches_every_spectator_kind(result: dict[str, Any]) -> None:
    fan = result["fan_out"]
    assert (fan["writers"], fan["spectators"]) == (2, 10)
    for side in ("ours", "colyseus_memory", "colyseus_sqlite"):
        assert set(fan[side]) == FAN_KEYS
        assert fan[side]["spectators_dropped"] == 0
        for key in FAN_KEYS - {"spectators_dropped"}:
            assert _positive(fan[side][key]), (side, key, fan[side][key])
    for ratios in fan["ratios"].values():
        assert set(ratios) == set(peers.FAN_KEYS)
        assert all(_positive(v) for v in ratios.values()), ratios


def test_fan_out_at_equal_rate_paces_the_peer_at_ours(result: dict[str, Any]) -> None:
    fan = result["fan_out_equal_rate"]
    assert set(fan) == {"ours", "colyseus_memory", "ratios"}
    for side in ("ours", "colyseus_memory"):
        assert set(fan[side]) == FAN_KEYS
        assert fan[side]["spectators_dropped"] == 0
    # Back to back, Colyseus's writers make more adds than ours; paced, about ours.
    assert fan["ratios"]["ours/colyseus_memory"]["adds_per_s"] > 0.6
    lag = result["goals"]["fan_out_lag_p99_vs_colyseus_memory"]
    assert lag["ratio"] == fan["ratios"]["ours/colyseus_memory"]["lag_p99_ms"]
    assert lag["at_full_rate"] == result["fan_out"]["ratios"]["ours/colyseus_memory"][
        "lag_p99_ms"]


def test_goals_carry_a_ratio_and_a_verdict(result: dict[str, Any]) -> None:
    goals = result["goals"]
    assert goals["at_connections"] == 10
    names = {"durable_rate_vs_colyseus_sqlite", "durable_rate_vs_colyseus_memory",
             "cpu_per_round_trip_vs_colyseus_memory", "idle_memory_vs_colyseus_memory",
             "fan_out_lag_p99_vs_colyseus_memory"}
    assert set(goals) == names | {"at_connections"}
    for name in names:
        assert _positive(goals[name]["ratio"]) and isinstance(goals[name]["met"], bool)


def test_setup_names_what_ran(result: dict[str, Any]) -> None:
    setup = result["setup"]
    assert setup["node"].startswith("v") and setup["kind"] == peers.KIND
    assert setup["packages"]["@colyseus/core"].startswith("0.16.")
    assert '"journal_mode":"wal"' in setup["colyseus_store"]
    assert '"synchronous":2' in setup["colyseus_store"]  # FULL
    costs = setup["client_cpu_us_per_add_without_network"]
    assert set(costs) == {"ours", "colyseus", "echo"} and all(map(_positive, costs.values()))
