"""Level and mechanic validation: every problem reported with its JSON path."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from actors.puzzle.diagnostics import MAX_DIAGNOSTICS, STOPPED, LevelError
from actors.puzzle.level import check_level, parse_level
from tests.puzzle.boards import lines_run, make_level
from tests.utf16 import edges

GATE = {"id": "gate-a", "type": "plate_gate", "version": 1,
        "config": {"plates": ["plate2"], "gates": ["gate3"]}, "state_schema": {"open": "bool"}}


def level() -> dict[str, Any]:
    return make_level(["B=Y..", "bpg.."], mechanics=[copy.deepcopy(GATE)])


def messages(data: Any, path: str = "") -> list[str]:
    found, diags = check_level(data, path)
    assert found is None
    return [str(d) for d in diags]


def test_a_valid_level_round_trips_through_json() -> None:
    parsed = parse_level(level())
    assert parse_level(parsed.to_json()) == parsed
    assert parsed.mechanics[0].to_json() == GATE


def test_diagnostics_carry_the_callers_path_prefix() -> None:
    data = level()
    data["objects"][1]["noun"] = "frog"
    assert messages(data, "levels[3]") == ['levels[3].objects[1].noun: unknown noun "frog"']


@pytest.mark.parametrize(("change", "expected"), [
    (lambda d: d.update(width=0), "width: must be an integer from 1 to 64"),
    (lambda d: d.update(id="x" * 65),
     "id: must be a string of at most 64 characters or an integer"),
    (lambda d: d.update(colour="red"), "colour: unknown field"),
    (lambda d: d.update(profile="baba"), ("profile: unknown profile 'baba' (supported: classic, "
                                         "keke)")),
    (lambda d: d.update(solution="udx"), "solution: must be a string over u d l r s"),
    (lambda d: d["objects"][0].update(x=9), "objects[0].x: must be an integer from 0 to 4"),
    (lambda d: d["objects"][0].update(facing="north"),
     'objects[0].facing: unknown facing "north" (one of right, up, left, down)'),
    (lambda d: d["text"][0].update(word="jump"), 'text[0].word: unknown word "jump"'),
    (lambda d: d["text"][0].update(id="baba1"),
     'text[0].id: duplicate id "baba1" (first used at objects[0])'),
    (lambda d: d["objects"][0].update(size=2), "objects[0].size: unknown field"),
])
def test_each_level_problem_is_named_with_its_path(change, expected: str) -> None:
    data = level()
    change(data)
    assert messages(data) == [expected]


@pytest.mark.parametrize(("put", "n", "expected"), [
    (lambda d, v: d.update(id=v), 64,
     "id: must be a string of at most 64 characters or an integer"),
    (lambda d, v: d.update(name=v), 200, "name: must be one line of at most 200 characters"),
    (lambda d, v: d.update(hint=v), 200, "hint: must be one line of at most 200 characters"),
    (lambda d, v: d["objects"][0].update(id=v), 64,
     "objects[0].id: must be a non-empty string of at most 64 chars"),
])
def test_texts_count_utf16_code_units(put, n: int, expected: str) -> None:
    """As the engine's JavaScript counts: an emoji is two of a level's characters."""
    for text, accepted in edges(n):
        data = level()
        put(data, text)
        assert [str(d) for d in check_level(data)[1]] == ([] if accepted else [expected])


@pytest.mark.parametrize(("change", "expected"), [
    (lambda m: m.update(type="teleporter"),
     ("mechanics[0].type: unsupported mechanic type 'teleporter' (host supports: "
     "frail_floor@1, plate_gate@1)")),
    (lambda m: m.update(version=2),
     "mechanics[0].version: unsupported version 2 for plate_gate (host supports version 1)"),
    (lambda m: m.update(id="Gate A"),
     "mechanics[0].id: must be a lowercase id matching [a-z][a-z0-9_-]{0,31}"),
    (lambda m: m.update(extra=1),
     ("mechanics[0].extra: unknown field (a mechanic has id, type, version, config, "
     "state_schema)")),
    (lambda m: m["config"].update(plates=["nope"]), ("mechanics[0].config.plates[0]: unknown "
                                                     "object id 'nope'")),
    (lambda m: m["config"].update(speed=3), ("mechanics[0].config.speed: unknown config field "
                                             "(plate_gate@1 config has: gates, plates)")),
    (lambda m: m.update(id="gate\n"),
     "mechanics[0].id: must be a lowercase id matching [a-z][a-z0-9_-]{0,31}"),
    (lambda m: m["config"].update({"callback\n": 1}),
     ("mechanics[0].config.callback\n: executable field (callback/hook/URL) is not allowed in "
     "mechanic data")),
    (lambda m: m.update(state_schema={"open": "int"}),
     'mechanics[0].state_schema: must declare the plate_gate state schema {"open": "bool"}'),
    (lambda m: m["config"].update(onPress="x"),
     ("mechanics[0].config.onPress: executable field (callback/hook/URL) is not allowed in "
     "mechanic data")),
    (lambda m: m["config"].update(plates=["https://evil.example/x.js"]),
     ("mechanics[0].config.plates[0]: executable value 'https://evil.example/x.js' (code or URL)"
     " is not allowed in mechanic data")),
    (lambda m: m["config"].update(plates=["see https://evil.example/x"]),
     ("mechanics[0].config.plates[0]: executable value 'see https://evil.example/x' (code or "
     "URL) is not allowed in mechanic data")),
    (lambda m: m["config"].update(gates=["g1 javascript:alert(1)"]),
     ("mechanics[0].config.gates[0]: executable value 'g1 javascript:alert(1)' (code or URL) is"
     " not allowed in mechanic data")),
    (lambda m: m["config"].update(gates=["() => open()"]),
     ("mechanics[0].config.gates[0]: executable value '() => open()' (code or URL) is not "
     "allowed in mechanic data")),
    (lambda m: m["config"].update(plates=print),
     ("mechanics[0].config.plates: executable value (a function) is not allowed in mechanic "
     "data")),
])
def test_each_mechanic_problem_is_named_with_its_path(change, expected: str) -> None:
    data = level()
    change(data["mechanics"][0])
    assert messages(data) == [expected]


def test_duplicate_mechanic_ids_are_refused_and_definitions_sort_by_id() -> None:
    data = level()
    data["mechanics"].append(copy.deepcopy(GATE))
    assert messages(data) == [
        'mechanics[1].id: duplicate mechanic id "gate-a" (first at mechanics[0])']
    data["mechanics"][1]["id"] = "a-first"
    assert [m.id for m in parse_level(data).mechanics] == ["a-first", "gate-a"]


def test_parse_level_raises_with_all_diagnostics() -> None:
    data = level()
    data["width"] = "wide"
    data["objects"][0]["noun"] = "frog"
    with pytest.raises(LevelError) as err:
        parse_level(data, "levels[0]")
    assert [str(d) for d in err.value.diagnostics] == [
        "levels[0].width: must be an integer from 1 to 64",
        'levels[0].objects[0].noun: unknown noun "frog"']


@pytest.mark.parametrize("change", [
    lambda d: d.update(objects=[{}] * 4096),  # four problems each
    lambda d: d["objects"][0].update({f"k{i}": 0 for i in range(4000)}),
    lambda d: d["mechanics"][0]["config"].update(plates=[f"p{i}" for i in range(4000)]),
], ids=["items", "fields", "config_ids"])
def test_validation_stops_at_the_diagnostic_cap(change) -> None:
    """However many problems a level holds, the first 50 are listed, then one saying more
    were found: a small link's level must not become a huge refusal (or take its time)."""
    data = level()
    change(data)
    found = messages(data, "levels[0]")
    assert len(found) == MAX_DIAGNOSTICS + 1 and found[-1] == f"levels[0]: {STOPPED}"
    assert STOPPED == "more problems not listed (validation stops at 50)"


def test_validation_does_not_go_on_past_the_cap() -> None:
    def bad_items(n: int) -> dict[str, Any]:
        return {**level(), "objects": [{}] * n}

    assert lines_run(lambda: check_level(bad_items(4096))) < 2 * lines_run(
        lambda: check_level(bad_items(20)))
