"""`bench load` for a moment, at tiny sizes: both scenarios run against their servers and
every figure the goals are judged by is there. No speed is asserted, nor whether a goal
is met."""

from __future__ import annotations

from bench import load


def test_both_scenarios_report_their_figures_and_goals() -> None:
    result = load.main(["--idle", "20", "--half-open", "2", "--samples", "10",
                        "--hostile-samples", "20", "--blocks", "2"])
    idle = result["idle_and_half_open"]
    assert (idle["idle"], idle["half_open"], idle["samples"]) == (20, 2, 10)
    assert (idle["idle_held"], idle["refused"]) == (20, 0)
    assert idle["half_open_closed_by_server"] >= 2
    hostile = result["hostile_reader"]
    assert (hostile["samples"], hostile["blocks"], hostile["refused"]) == (20, 2, 0)
    assert hostile["reader"]["answered"] > 0
    for spread in (idle["quiet"], idle["loaded"], hostile["quiet"], hostile["hostile"]):
        assert set(spread) == {"p50_ms", "p90_ms", "p99_ms"}
        assert all(value > 0 for value in spread.values())
    assert hostile["p99_ratio"] > 0
    goals = result["goals"]
    assert set(goals) == {"loaded_p99_under_50_ms", "hostile_p99_at_most_2x"}
    assert goals["loaded_p99_under_50_ms"]["p99_ms"] == idle["loaded"]["p99_ms"]
    assert goals["hostile_p99_at_most_2x"]["ratio"] == hostile["p99_ratio"]
    assert all(isinstance(goal["met"], bool) for goal in goals.values())
    assert len(result["load_average_before"]) == len(result["load_average_after"]) == 3
