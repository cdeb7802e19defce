"""`bench versus` for a moment, this repository against itself: both sides and their
ratios are there and every figure is positive. No speed is asserted."""

from __future__ import annotations

import math
from pathlib import Path

from bench import _peers_servers as servers
from bench import versus


def test_both_trees_are_measured_side_by_side() -> None:
    result = versus.main([str(servers.REPO), "--connections", "5", "--seconds", "0.4",
                          "--turns", "2", "--writers", "2", "--spectators", "5",
                          "--fan-seconds", "0.4"])
    level = result["round_trips"]["5"]
    assert set(level) == {"old", "new", "ratios"}
    for side in ("old", "new"):
        assert level[side]["round_trips"] > 0
        assert len(level[side]["per_turn_round_trips_per_s"]) == 2
    ratio = level["ratios"]["new/old"]["round_trips_per_s"]
    assert ratio is not None and math.isfinite(ratio) and ratio > 0
    fan = result["fan_out"]
    assert {"old", "new", "ratios"} <= set(fan)
    assert fan["new"]["adds_per_s"] > 0 and fan["old"]["adds_per_s"] > 0


def test_a_tree_without_the_bench_is_skipped_with_the_reason(tmp_path: Path) -> None:
    result = versus.main([str(tmp_path)])
    assert result == {"skipped": f"{tmp_path.resolve()} has no bench/_peers_servers.py "
                                 "to serve from"}
