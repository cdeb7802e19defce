"""Corpus helpers shared by the replay tests: files, expectations, outcome labels, reasons."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import attrs

from actors.puzzle.game import replay
from actors.puzzle.keke import load_keke_file
from actors.puzzle.level import Level
from actors.puzzle.profiles import CLASSIC, KEKE, Profile
from tests.conftest import shared_path

SETS = ("demo", "full_biy", "search_biy", "user_milk_biy", "test")
# The profile switches whose classic value can break a Keke-recorded solution.
SWITCHES = ("plan", "collision", "contacts_destroy_both", "move_retry", "reparse_every_turn",
            "transforms_in_rule_order")


def corpus() -> list[tuple[str, Level, str]]:
    """(set name, level, Keke's own replay verdict) for every corpus level."""
    checks = json.loads(Path(shared_path("baba-corpus", "replay-check.json")).read_text())
    found = []
    for name in SETS:
        verdict = {str(e["id"]): e["keke_replay"] for e in checks["sets"][name]}
        for level in load_keke_file(shared_path("baba-corpus", "keke", f"{name}_LEVELS.json")):
            found.append((name, level, verdict[level.id]))
    return found


@functools.cache
def label(level: Level, profile: str | Profile) -> str:
    """`win_at_last_move`, `no_win`, or `win_at_N` (an early win) for the level's solution."""
    assert level.solution is not None
    result = replay(level, level.solution, profile)
    if not result["won"]:
        return "no_win"
    if result["won_at"] == len(level.solution):
        return "win_at_last_move"
    return f"win_at_{result['won_at']}"


def differing_switches(level: Level, expected: str) -> dict[str, list[str]]:
    """Which semantics make the difference, probed one profile switch at a time.

    `breaks_keke`: switches whose classic value, set alone in the keke profile, changes Keke's
    outcome. `repairs_classic`: switches whose keke value, set alone in the classic profile,
    brings Keke's outcome back.
    """
    return {
        "breaks_keke": [s for s in SWITCHES if label(
            level, attrs.evolve(KEKE, **{s: getattr(CLASSIC, s)})) != expected],
        "repairs_classic": [s for s in SWITCHES if label(
            level, attrs.evolve(CLASSIC, **{s: getattr(KEKE, s)})) == expected],
    }
