"""The seed's mechanic scenarios: one transactional envelope, lifecycle order, safe events."""

from __future__ import annotations

import copy

import attrs
import pytest

from actors.puzzle.board import Limits
from actors.puzzle.game import Game, create_game
from actors.puzzle.profiles import PHASES, get_profile
from actors.world import Refusal
from protocol.ops.puzzle import PuzzleCode
from tests.puzzle.boards import accepted, lines_run, make_level, mechanic_level, refused

PROFILES = ["classic", "keke"]


def mech(game: Game) -> dict:
    return game.get_state()["mechanics"]


@pytest.mark.parametrize("profile", PROFILES)
def test_a_supported_declaration_loads_with_initialized_state(profile: str) -> None:
    g = create_game(mechanic_level(profile))
    assert mech(g) == {"frail": {"stage": "intact"}, "gate": {"open": False}}


@pytest.mark.parametrize("profile", PROFILES)
def test_plate_opens_gate_and_frail_floor_breaks_one_turn_after_being_left(profile: str) -> None:
    g = create_game(mechanic_level(profile))
    r = g.step("right")
    assert [(e["mechanic"], e["type"]) for e in r["mechanics"]] == [("gate", "opened")]
    r = g.step("right")
    assert [(e["mechanic"], e["type"]) for e in r["mechanics"]] == [
        ("frail", "pressed"), ("gate", "closed")]
    r = g.step("right")
    assert [(e["mechanic"], e["type"]) for e in r["mechanics"]] == [("frail", "cracked")]
    r = g.step("wait") if profile == "classic" else g.step("down")
    assert ("frail", "broke") in [(e["mechanic"], e["type"]) for e in r["mechanics"]]
    assert mech(g)["frail"] == {"stage": "broken"}


def test_a_closed_gate_blocks_and_an_open_one_lets_through() -> None:
    closed = create_game(make_level(["B=Y.", "..bg", "...."], mechanics=[
        {"id": "g", "type": "plate_gate", "version": 1,
         "config": {"plates": ["baba1"], "gates": ["gate2"]}, "state_schema": {"open": "bool"}}]))
    assert refused(closed.step("right")) == "no_change"
    opened = create_game(make_level(["B=Y.", "..bg", "..p."], mechanics=[
        {"id": "g", "type": "plate_gate", "version": 1,
         "config": {"plates": ["plate3"], "gates": ["gate2"]}, "state_schema": {"open": "bool"}}],
        extra=[{"id": "r9", "noun": "rock", "x": 2, "y": 2}]))
    assert opened.get_state()["mechanics"]["g"] == {"open": True}
    assert accepted(opened.step("right"))


def test_reset_restores_the_authored_state() -> None:
    g = create_game(mechanic_level())
    start = g.get_state()
    for action in ("right", "right", "right", "wait"):
        g.step(action)
    assert g.get_state() != start
    r = g.reset()
    assert g.get_state() == start
    assert {e["mechanic"] for e in r["mechanics"]} == {"frail"}


def test_undo_restores_mechanic_state_and_reports_it_without_touching_old_snapshots() -> None:
    g = create_game(mechanic_level())
    before = g.get_state()
    g.step("right")
    after = g.get_state()
    kept = copy.deepcopy(after)
    r = g.undo()
    assert r["mechanics"] == [{"mechanic": "gate", "type": "restored", "subject": None,
                               "from": {"open": True}, "to": {"open": False}, "cause": "undo"}]
    assert g.get_state() == before
    assert after == kept


def test_restore_is_inert() -> None:
    g = create_game(mechanic_level())
    snap = g.get_state()
    for o in snap["objects"]:
        if o.get("word") == "you":
            o["word"] = "rock"  # the text now spells BABA IS ROCK: a transform, if anything ran
    snap["mechanics"]["frail"]["stage"] = "cracking"  # would break in any later phase
    g.restore(copy.deepcopy(snap))
    state = g.get_state()
    assert state["objects"] == snap["objects"]
    assert state["mechanics"] == snap["mechanics"]
    assert "baba is rock" in state["rules"]


def test_rejected_turns_are_atomic_after_speculative_movement() -> None:
    # Baba starts on the plate (gate open) and pushes FLAG into place: FLAG IS WIN forms, a
    # second sentence over the cap, after baba left the plate and the text moved speculatively.
    data = make_level(["B=Y...", "......", "bF....", "..=...", "..V...", "....g."],
                      extra=[{"id": "plate9", "noun": "plate", "x": 0, "y": 2}],
                      mechanics=[{"id": "g", "type": "plate_gate", "version": 1,
                                  "config": {"plates": ["plate9"], "gates": ["gate2"]},
                                  "state_schema": {"open": "bool"}}])
    free = create_game(data)
    r = free.step("right")
    assert r["rules_changed"] and r["mechanics"][0]["type"] == "closed"
    for limits in (Limits(sentences=1), Limits(work=0)):
        g = create_game(data, limits=limits)
        state = g.get_state()
        assert state["mechanics"] == {"g": {"open": True}}
        assert refused(g.step("right")) == "complexity_blocked"
        assert g.get_state() == state and g.history == ()
        assert refused(g.undo()) == "nothing_to_undo"


def test_mechanics_do_not_run_on_invalid_input() -> None:
    g = create_game(mechanic_level())
    for action in ("right", "right", "right"):
        g.step(action)
    state = g.get_state()
    assert state["mechanics"]["frail"] == {"stage": "cracking"}
    r = g.step("north")
    assert r == Refusal(PuzzleCode.BAD_ACTION,
                        "The action must be one of up, down, left, right or wait.")
    assert g.get_state() == state
    lone = create_game(make_level(["B=.", "t..", "..."], mechanics=[
        {"id": "f", "type": "frail_floor", "version": 1, "config": {"tile": "tile1"},
         "state_schema": {"stage": "enum:intact|pressed|cracking|broken"}}]))
    before = lone.get_state()
    assert refused(lone.step("up")) == "nothing_can_move"
    assert lone.get_state() == before


@pytest.mark.parametrize("profile", PROFILES)
def test_phases_run_in_the_documented_order(profile: str) -> None:
    g = create_game(mechanic_level(profile), trace_phases=True)
    for action in ("right", "right", "right"):
        r = g.step(action)
        assert r["phases"] == list(PHASES)
    r = g.step("left")  # back onto the cracking tile: it breaks (beforeContacts) and baba falls
    order = [e["phase"] for e in r["mechanics"]]
    assert order == sorted(order, key=PHASES.index)
    assert [(e["type"], e["phase"]) for e in r["mechanics"]][:2] == [
        ("broke", "beforeContacts"), ("fell", "beforeContacts")]
    assert [d["cause"] for d in r["destroyed"]] == ["frail_floor"]
    assert g.get_state()["mechanics"]["frail"] == r["mechanics"][0]["to"]


def test_event_and_snapshot_data_cannot_mutate_the_game() -> None:
    g = create_game(mechanic_level())
    twin = create_game(mechanic_level())
    r = g.step("right")
    twin.step("right")
    r["mechanics"][0]["to"]["open"] = False
    r["moves"].clear()
    snap = g.get_state()
    snap["mechanics"]["gate"]["open"] = False
    snap["objects"][0]["x"] = 5
    assert g.get_state() == twin.get_state()
    assert g.step("right") == twin.step("right")


def test_turns_without_mechanic_changes_keep_the_plain_event_shape() -> None:
    plain = {"accepted", "action", "turn", "moves", "rules", "rules_changed", "transforms",
             "destroyed", "automata", "won", "lost"}
    g = create_game(make_level(["B=Y", "b.."]))
    assert set(g.step("right")) == plain
    assert "mechanics" not in g.get_state()
    m = create_game(mechanic_level())
    assert set(m.step("up")) == plain  # baba walks away from plate and tile: nothing changes


FRAIL = {"id": "f", "type": "frail_floor", "version": 1, "config": {"tile": "tile2"},
         "state_schema": {"stage": "enum:intact|pressed|cracking|broken"}}


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("mover", [False, True])
def test_a_blocked_move_commits_no_mechanic_state(profile: str, mover: bool) -> None:
    """Baba leaves the tile (cracking: it breaks at the next turn's beforeContacts) and walks into
    a wall. Nothing controllable moved, so the tile does not break and no transition is reported;
    with a KEKE IS MOVE keke about, the turn is still played for the keke. A wait is a valid
    input: time passes and the tile breaks."""
    data = make_level(["B=Y.W=S.", "..bt.w..", "K=M.....", "........"], profile=profile,
                      mechanics=[FRAIL],
                      extra=[{"id": "k9", "noun": "keke", "x": 0, "y": 3}] if mover else [])
    g = create_game(data)
    g.step("right")
    assert g.step("right")["mechanics"][0]["type"] == "cracked"
    state = g.get_state()
    r = g.step("right")
    if mover:
        assert r["accepted"] and r["moves"] == [] and "mechanics" not in r
        assert [a["id"] for a in r["automata"]] == ["k9"]
    else:
        assert refused(r) == "no_change"
        assert g.get_state() == state
    assert mech(g) == {"f": {"stage": "cracking"}}
    r = g.step("wait")
    assert [(e["type"], e["phase"]) for e in r["mechanics"]] == [("broke", "beforeContacts")]


def test_the_frail_floor_precedes_contacts_in_every_profile() -> None:
    """The tile is DEFEAT and broken when baba steps on it. The seed's order holds under both
    profiles: `beforeContacts` runs before the contacts, so baba falls (cause frail_floor) and
    DEFEAT finds no YOU left. (Keke alone checks contacts right after the players move, which
    would destroy both first; a keke level with mechanics checks them where the seed says.)"""
    rows = ["B=Y.R=M.", "I=D.....", "..b.....", ".rt.....", "........"]
    for profile in PROFILES:
        frail = {**FRAIL, "config": {"tile": "tile3"}}
        g = create_game(make_level(rows, {"I": "TILE"}, profile=profile, mechanics=[frail]),
                        trace_phases=True)
        types = [[e["type"] for e in g.step("wait").get("mechanics", [])] for _ in range(3)]
        assert types == [["pressed"], ["cracked"], ["broke"]]  # the MOVE rock crossed it
        r = g.step("down")
        assert r["phases"] == list(PHASES)
        outcome = ([(d["id"], d["cause"]) for d in r["destroyed"]],
                   [e["type"] for e in r.get("mechanics", [])], r["lost"])
        assert outcome == ([("baba1", "frail_floor")], ["fell"], True), profile


def test_a_mechanic_plan_must_keep_the_seeds_order_around_contacts() -> None:
    """Keke's own plan (contacts between the movement steps) still plays levels without
    mechanics, but no profile can hand it to a level with mechanics."""
    keke = get_profile("keke")
    assert keke.plan_for(False).index("contacts") < keke.plan_for(False).index("afterMovement")
    for name in PROFILES:
        plan = get_profile(name).plan_for(True)
        contacts = [i for i, step in enumerate(plan) if step == "contacts"]
        assert plan.index("beforeContacts") < min(contacts), name
        assert max(i for i, step in enumerate(plan) if step in ("players", "automata")) \
            < plan.index("afterMovement") < min(contacts), name
    with pytest.raises(ValueError, match="before every contact check"):
        attrs.evolve(keke, mechanic_plan=keke.plan)


def test_a_plate_gate_costs_passes_over_the_board_not_one_per_plate() -> None:
    """A channel may list every plate of a room's level (up to 1024 things): twice the plates
    at most double the work of starting the game and of a turn. A board scan per plate made it
    four times (a shared level of 1000 plates in 64 channels held the server for minutes)."""
    def work(plates: int) -> tuple[int, int]:
        extra = [{"id": f"p{i}", "noun": "plate", "x": i % 32, "y": 2 + i // 32}
                 for i in range(plates)]
        level = make_level(["B=Y" + "." * 29, "b" + "." * 30 + "g"]
                           + ["." * 32] * (plates // 32 + 1), extra=extra, mechanics=[
            {"id": "g", "type": "plate_gate", "version": 1, "state_schema": {"open": "bool"},
             "config": {"plates": [p["id"] for p in extra], "gates": ["gate2"]}}])
        game = create_game(level)
        return lines_run(lambda: create_game(level)), lines_run(lambda: game.step("right"))

    (start, turn), (start2, turn2) = work(100), work(200)
    assert start2 < 2 * start and turn2 < 2 * turn
