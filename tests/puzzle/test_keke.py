"""The Keke corpus: import, and replay of every recorded solution under the `keke` profile."""

from __future__ import annotations

from collections import Counter

import pytest

from actors.puzzle.diagnostics import MAX_DIAGNOSTICS, STOPPED, Diagnostic, LevelError
from actors.puzzle.keke import ascii_to_json, import_ascii, import_keke_levels
from tests.puzzle.corpus import SETS, corpus, label

# replay-check.json: how many solutions Keke's own simulator wins on exactly the last move.
KEKE_WINS = {"demo": (14, 14), "full_biy": (132, 138), "search_biy": (44, 45),
             "user_milk_biy": (11, 12), "test": (2, 2)}


def test_every_keke_solution_replays_as_recorded() -> None:
    wins: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    wrong = []
    for name, level, expected in corpus():
        totals[name] += 1
        got = label(level, "keke")
        if got == "win_at_last_move":
            wins[name] += 1
        # A `no_win` level must not win early either: any win before the end is wrong.
        if got != expected:
            wrong.append((name, level.id, expected, got))
    for name in SETS:
        print(f"keke replay {name}: {wins[name]} / {totals[name]} win on exactly the last move")
    assert wrong == []
    assert {name: (wins[name], totals[name]) for name in SETS} == KEKE_WINS


def test_import_maps_the_legend_and_shifts_the_border() -> None:
    level = import_ascii("_____\n_B12_\n_b.f_\n_____", level_id="x", solution="RS")
    data = level.to_json()
    assert (data["width"], data["height"], data["profile"]) == (3, 2, "keke")
    assert data["objects"] == [
        {"id": "o1", "noun": "baba", "x": 0, "y": 1, "facing": "right"},
        {"id": "o2", "noun": "flag", "x": 2, "y": 1, "facing": "right"}]
    assert [t["word"] for t in data["text"]] == ["baba", "is", "you"]
    assert level.solution == "rs"


@pytest.mark.parametrize(("ascii_map", "message"), [
    ("___\n_b_\n__", r"^ascii: the map must be a rectangle of at least 3x3$"),
    ("____\n_bZ_\n____", r"^ascii: row 1 column 2: unknown map character 'Z'$"),
    ("____\n_b._\n_.__\n____", r"^ascii: row 2 column 2: the border must be `_` all round"),
])
def test_bad_maps_are_refused_with_a_position(ascii_map: str, message: str) -> None:
    with pytest.raises(LevelError, match=message):
        ascii_to_json(ascii_map)


def test_a_file_that_is_not_keke_is_refused() -> None:
    with pytest.raises(LevelError, match=r"^levels: not a Keke level file"):
        import_keke_levels({"levels": [{"id": 1}]})


def test_unknown_fields_stop_at_max_diagnostics() -> None:
    """A file of any size names a bounded list of unknown fields, as a level's checks do."""
    data = {"levels": [{"ascii": "___\n_b_\n___", "colour": i} for i in range(2 * MAX_DIAGNOSTICS)]}
    with pytest.raises(LevelError) as err:
        import_keke_levels(data)
    found = err.value.diagnostics
    assert len(found) == MAX_DIAGNOSTICS + 1 and found[-1] == Diagnostic("", STOPPED)
    assert found[0].path == "levels[0].colour"
