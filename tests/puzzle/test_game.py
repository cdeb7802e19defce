"""Game API properties: Undo, restore and replay, over random move sequences."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.puzzle.game import create_game, replay
from actors.puzzle.keke import import_ascii
from actors.puzzle.snapshot import RestoreError
from tests.puzzle.boards import accepted, make_level, mechanic_level, refused

LEVELS = {
    "mechanics-classic": mechanic_level(),
    "mechanics-keke": mechanic_level("keke"),
    "keke-move": import_ascii(
        "_________\n_B12.F13_\n_K17.R15_\n_..k.r.._\n_.b...f._\n_.w.W16._\n_________").to_json(),
    "classic-push": make_level(["B=Y&P.", "R=P...", "K=M&X.", ".brk..", "..w...", "W=S..."]),
}
ACTION = st.sampled_from(["up", "down", "left", "right", "wait"])
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(name=st.sampled_from(sorted(LEVELS)), actions=st.lists(ACTION, max_size=14))
def test_undo_after_any_sequence_returns_each_prior_state(name: str, actions: list[str]) -> None:
    g = create_game(LEVELS[name])
    states = [g.get_state()]
    for action in actions:
        if accepted(g.step(action)):
            states.append(g.get_state())
    while len(states) > 1:
        states.pop()
        assert accepted(g.undo())
        assert g.get_state() == states[-1]
    assert refused(g.undo()) == "nothing_to_undo"


@FAST
@given(name=st.sampled_from(sorted(LEVELS)), actions=st.lists(ACTION, max_size=14),
       after=ACTION)
def test_restore_of_get_state_is_a_no_op(name: str, actions: list[str], after: str) -> None:
    g = create_game(LEVELS[name])
    twin = create_game(LEVELS[name])
    for action in actions:
        g.step(action)
        twin.step(action)
    state = g.get_state()
    assert g.restore(copy.deepcopy(state))["changed"] is False
    assert g.get_state() == state and g.history == twin.history
    assert g.step(after) == twin.step(after)
    assert g.undo() == twin.undo()


@FAST
@given(name=st.sampled_from(sorted(LEVELS)), actions=st.lists(ACTION, max_size=20))
def test_replaying_a_recorded_move_list_is_deterministic(name: str, actions: list[str]) -> None:
    first, second = create_game(LEVELS[name]), create_game(LEVELS[name])
    assert [first.step(a) for a in actions] == [second.step(a) for a in actions]
    assert first.get_state() == second.get_state()
    letters = "".join(a[0] if a != "wait" else "s" for a in actions)
    assert replay(LEVELS[name], letters) == replay(LEVELS[name], letters)


def test_restore_refuses_a_bad_snapshot_and_changes_nothing() -> None:
    g = create_game(mechanic_level())
    state = g.get_state()
    bad = copy.deepcopy(state)
    bad["objects"][0]["id"] = "ghost"
    bad["mechanics"]["gate"]["colour"] = "red"
    del bad["mechanics"]["frail"]
    with pytest.raises(RestoreError) as err:
        g.restore(bad)
    assert [str(d) for d in err.value.diagnostics] == [
        "objects[0].id: unknown or repeated id 'ghost'",
        "mechanics.frail: missing mechanic state",
        "mechanics.gate.colour: unknown mechanic state field"]
    assert g.get_state() == state
    with pytest.raises(RestoreError, match=r"^level: snapshot of level 'other'.*; moves: must"):
        g.restore({**state, "level": "other", "moves": ["jump"]})
    assert g.get_state() == state


def test_history_reset_and_game_over() -> None:
    g = create_game(make_level(["B=Y.", "F=V.", "bf.."]))
    assert g.step("right")["won"] and g.won and g.history == ("right",)
    assert refused(g.step("left")) == "game_over"
    assert g.reset()["turn"] == 0 and g.history == () and not g.won
    assert g.reset()["changed"] is False
    assert g.undo()["won"] is True
    assert replay(make_level(["B=Y.", "F=V.", "bf.."]), "ll") == {
        "won": False, "won_at": None, "lost": False, "steps": 2}
    assert replay(make_level(["B=Y.", "F=V.", "bf.."]), "lrl")["won_at"] == 2


def test_a_word_destroyed_after_the_rules_are_read_takes_its_rule_with_it() -> None:
    # Forming WATER IS SINK sinks the STOP of WALL IS STOP with the water under it: the rule
    # is gone from the turn, the snapshot and the next turn alike, as from a restored twin.
    level = make_level(["B=Y....", ".....W.", ".U=..=.", "...0wS.", "...b..."],
                       extra=[{"id": "pool", "noun": "water", "x": 5, "y": 3}])
    g, twin = create_game(level), create_game(level)
    turn = g.step("up")
    assert [d["id"] for d in turn["destroyed"]] == ["pool", "t9"]
    assert turn["rules"] == g.get_state()["rules"] == ["baba is you", "water is sink"]
    twin.restore(g.get_state())
    moved = g.step("right")
    assert accepted(moved) and moved == twin.step("right")
    assert g.get_state() == twin.get_state()


def test_restore_refuses_booleans_as_coordinates() -> None:
    # JSON true is no coordinate (the level format refuses it too): adopted, it made a state
    # equal to x = 1 whose snapshot said "x": true.
    g = create_game(make_level(["B=Y.", "b..."]))
    state = g.get_state()
    moved = copy.deepcopy(state)
    moved["objects"][0]["x"] = True
    with pytest.raises(RestoreError, match=r"^objects\[0\]: bad noun/word, position or facing$"):
        g.restore(moved)
    assert g.get_state() == state
