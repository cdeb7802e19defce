"""The corpus under the `classic` profile: the divergences from Keke are exactly the fixture's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.puzzle.corpus import corpus, differing_switches, label

FIXTURE = Path(__file__).with_name("classic_divergences.json")


def _fixture() -> dict[tuple[str, str], dict]:
    return {(e["set"], e["id"]): e for e in json.loads(FIXTURE.read_text())["levels"]}


def test_classic_divergences_are_exactly_the_listed_ones() -> None:
    listed = _fixture()
    found = {}
    still = 0
    levels = corpus()
    for name, level, expected in levels:
        got = label(level, "classic")
        if got == expected:
            still += expected == "win_at_last_move"
        else:
            found[(name, level.id)] = (expected, got)
    print(f"classic: {still} of {len(levels)} corpus solutions still win on their last move; "
          f"{len(found)} diverge")
    assert found == {key: (e["keke"], e["classic"]) for key, e in listed.items()}
    assert all(e["breaks_keke"] or e["repairs_classic"] for e in listed.values())


@pytest.mark.deep
def test_listed_reasons_are_the_switches_that_make_the_difference() -> None:
    listed = _fixture()
    for name, level, expected in corpus():
        entry = listed.get((name, level.id))
        if entry is not None:
            reasons = differing_switches(level, expected)
            assert reasons == {k: entry[k] for k in ("breaks_keke", "repairs_classic")}, level.id
