"""`bench field_live` for a moment, on a small field: agents commit, spectators see it,
and no agent is refused for outrunning its connection's frame rate (they pace
themselves as the reference clients do). No speed is asserted."""

from __future__ import annotations

from bench import field_live


def test_agents_commit_and_spectators_watch() -> None:
    # Two agents on a field of 80: each commits back to back, past the 200 frames a
    # second of its connection unless it paces itself (it was refused `rate_limited`).
    result = field_live.main(["--agents", "2", "--spectators", "4", "--seconds", "3",
                              "--size", "80"])
    field = result["field"]
    assert (field["agents"], field["spectators"], field["field_size"]) == (2, 4, 80)
    assert field["commits"] > 0 and field["final_revision"] > 0
    assert field["commit_p99_ms"] is not None and field["spectator_lag_p99_ms"] is not None
    assert 0 <= field["stale_share"] <= 1
    assert result["echo_100"]["round_trips"] > 0
