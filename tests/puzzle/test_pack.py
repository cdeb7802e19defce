"""Packs: validation with paths, profile inheritance, feature diagnostics, round trips."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from actors.puzzle.diagnostics import MAX_DIAGNOSTICS, STOPPED, LevelError
from actors.puzzle.game import create_game
from actors.puzzle.pack import MAX_NAME_CHARS, check_pack, is_pack, pack_of, parse_pack
from tests.puzzle.boards import make_level, sample_pack
from tests.utf16 import edges


def diagnostics(data: Any) -> list[str]:
    pack, diags = check_pack(data)
    assert pack is None
    return [str(d) for d in diags]


def test_valid_pack_round_trips_and_levels_inherit_the_profile() -> None:
    pack = parse_pack(sample_pack())
    assert [lv.profile for lv in pack.levels] == ["keke", "keke", "classic"]
    assert pack.mechanics == ("frail_floor", "plate_gate")
    again = parse_pack(copy.deepcopy(pack.to_json()))
    assert again == pack
    assert again.to_json() == pack.to_json()


def test_mechanic_metadata_survives_export_with_its_initial_state() -> None:
    pack = parse_pack(sample_pack())
    again = parse_pack(pack.to_json())
    before, after = pack.level("three"), again.level("three")
    assert after.mechanics == before.mechanics
    assert (create_game(after).get_state()["mechanics"]
            == create_game(before).get_state()["mechanics"])


def test_unsupported_mechanic_feature_fails_before_levels_are_read() -> None:
    data = sample_pack()
    data["mechanics"].append("teleporter")
    data["levels"][0]["objects"][0]["noun"] = "frog"  # not reported: refused earlier
    assert diagnostics(data) == [
        ("mechanics[2]: unsupported mechanic feature 'teleporter' (host supports: "
        "frail_floor@1, plate_gate@1)")]


def test_level_mechanic_must_be_declared_by_the_pack() -> None:
    data = sample_pack()
    data["mechanics"] = ["frail_floor"]
    assert diagnostics(data) == [
        ("levels[2].mechanics[0].type: mechanic type 'plate_gate' is not declared in the "
        "pack's mechanics")]


def test_level_problems_are_reported_with_their_path_inside_the_pack() -> None:
    data = sample_pack()
    data["levels"][1]["objects"][0]["noun"] = "frog"
    data["levels"][2]["mechanics"][0]["config"]["hook"] = "x"
    found = diagnostics(data)
    assert 'levels[1].objects[0].noun: unknown noun "frog"' in found
    assert any(d.startswith("levels[2].mechanics[0].config.hook: executable field") for d in found)


@pytest.mark.parametrize(("change", "expected"), [
    ({"name": ""}, "name: must be a non-empty string of at most 100 characters"),
    ({"version": 3}, 'version: must be a version string such as "1", "1.2" or "1.2.3"'),
    ({"profile": "modern"}, "profile: unknown profile 'modern' (supported: classic, keke)"),
    ({"profile": []}, "profile: unknown profile [] (supported: classic, keke)"),
    ({"levels": []}, "levels: must be a list of 1 to 256 levels"),
    ({"mechanics": "plate_gate"}, "mechanics: must be a list of mechanic type names"),
    ({"extra": 1}, "extra: unknown field (a pack has name, version, profile, mechanics, levels)"),
])
def test_header_errors(change: dict[str, Any], expected: str) -> None:
    assert expected in diagnostics({**sample_pack(), **change})


@pytest.mark.parametrize(("name", "accepted"), edges(MAX_NAME_CHARS))
def test_a_packs_name_counts_utf16_code_units(name: str, accepted: bool) -> None:
    found = [str(d) for d in check_pack({**sample_pack(), "name": name})[1]]
    assert found == ([] if accepted else [
        "name: must be a non-empty string of at most 100 characters"])


def test_duplicate_level_ids_are_refused() -> None:
    data = sample_pack()
    data["levels"][1]["id"] = "one"
    assert diagnostics(data) == ["levels[1].id: duplicate level id 'one' (first at levels[0])"]


def test_parse_pack_raises_with_every_diagnostic() -> None:
    with pytest.raises(LevelError, match=r"^name: must be a non-empty string"):
        parse_pack({**sample_pack(), "name": 7})


def test_shapes_and_one_level_packs() -> None:
    assert is_pack(sample_pack())
    assert not is_pack(make_level(["B=Y"]))
    assert not is_pack({"levels": [{"ascii": "___"}], "name": "keke file"})
    assert is_pack({"levels": "oops"})  # so a broken pack gets pack diagnostics
    level = parse_pack(sample_pack()).level("three")
    single = pack_of(level)
    assert single.levels == (level,) and single.mechanics == ("frail_floor", "plate_gate")
    assert parse_pack(single.to_json()) == single
    with pytest.raises(KeyError, match="no level 'nine'"):
        single.level("nine")


def test_a_packs_diagnostics_stop_at_the_cap_over_all_its_levels() -> None:
    data = sample_pack()
    data["levels"] = [{"id": str(i), "width": 1, "height": 1, "objects": [{}] * 4096}
                      for i in range(50)]
    found = diagnostics(data)
    assert found[1:3] == ['levels[0].objects[0].noun: unknown noun "None"',
                          "levels[0].objects[0].x: must be an integer from 0 to 0"]
    assert len(found) == MAX_DIAGNOSTICS + 1 and found[-1] == STOPPED


def test_the_mechanics_list_is_bounded() -> None:
    assert diagnostics({**sample_pack(), "mechanics": ["plate_gate"] * 80_000}) == [
        "mechanics: lists 80000 types; at most 16 are allowed"]
    assert diagnostics({**sample_pack(), "mechanics": ["plate_gate", "frail_floor"] * 8}) == [
        f"mechanics[{i}]: duplicate feature {t!r}" for i, t in
        enumerate(["plate_gate", "frail_floor"] * 8) if i > 1]
