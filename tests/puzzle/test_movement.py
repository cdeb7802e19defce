"""Keke's layered collision model (the `keke` profile) next to classic stacking, and the
classic pull."""

from __future__ import annotations

import hashlib
import json

import pytest

from actors.puzzle.board import Limits
from actors.puzzle.game import Game, create_game
from tests.puzzle.boards import lines_run, make_level, positions, refused


def keke(rows: list[str], **kw: object) -> Game:
    return create_game(make_level(rows, profile="keke", legend={"a": "grass"}, **kw))


def facing(game: Game, noun: str) -> list[str]:
    return [o["facing"] for o in game.get_state()["objects"] if o.get("noun") == noun]


def test_a_you_cannot_walk_into_another_you_but_a_mover_can_walk_onto_one() -> None:
    g = keke(["B=Y..", "K=Y..", ".....", ".kb.."])
    g.step("left")  # baba moves first (its rule is read first) and is blocked by keke
    assert positions(g.get_state(), "baba") == [(2, 3)]
    assert positions(g.get_state(), "keke") == [(0, 3)]
    walker = keke(["B=Y..", "K=M..", ".....", ".kb.."])
    walker.step("wait")
    assert positions(walker.get_state(), "keke") == [(2, 3)] == positions(
        walker.get_state(), "baba")


def test_a_you_that_also_moves_turns_round_every_turn_in_keke() -> None:
    g = keke(["B=Y..", "B=M..", ".....", ".b..."])
    g.step("right")
    assert positions(g.get_state(), "baba") == [(2, 3)] and facing(g, "baba") == ["left"]
    c = create_game(make_level(["B=Y..", "B=M..", ".....", ".b..."]))
    c.step("right")  # classic: it moves as YOU and again as MOVE
    assert positions(c.get_state(), "baba") == [(3, 3)] and facing(c, "baba") == ["right"]


def test_the_object_layer_goes_stale_until_keke_rebuilds_it() -> None:
    # The rock is pushed onto grass listed after it: Keke keeps the rock in its object layer
    # until the next rebuild, so it is still pushed; classic stacking has no such memory.
    g = keke(["B=Y...", "R=P...", "......", "bra..."])
    g.step("right")
    assert [o["layer"] for o in g.get_state()["objects"] if o.get("noun") == "rock"] == [True]
    g.step("right")
    assert positions(g.get_state(), "rock") == [(3, 3)]
    # Here keke pushes text on the first turn, so Keke re-reads the rules and rebuilds the layer
    # with the rock already on grass listed after it: the rock drops out of the layer and baba
    # walks onto it instead of pushing it. Classic stacking pushes it.
    rows = ["B=Y.....", "K=Y.....", ".kF.....", "bra.....", "R=P....."]
    h = keke(rows)
    h.step("right")
    assert [o["layer"] for o in h.get_state()["objects"] if o.get("noun") == "rock"] == [False]
    h.step("right")
    assert positions(h.get_state(), "rock") == [(2, 3)] == positions(h.get_state(), "baba")
    c = create_game(make_level(rows, legend={"a": "grass"}))
    c.step("right")
    c.step("right")
    assert positions(c.get_state(), "rock") == [(3, 3)]


def test_the_work_cap_counts_every_thing_a_push_looks_at() -> None:
    """Baba pushes a chain of cells holding two rocks each, which forks the push evaluations,
    and the last cell also holds 950 flags. Counting only the evaluations let a refused turn
    look through the flags hundreds of thousands of times (seconds of the room's loop per
    move); counted thing by thing, the crowd adds nothing to what the cap allows."""
    def chain(flags: int) -> Game:
        rocks = [{"id": f"r{x}{s}", "noun": "rock", "x": x, "y": 1}
                 for x in range(1, 21) for s in "ab"]
        crowd = [{"id": f"f{i}", "noun": "flag", "x": 20, "y": 1} for i in range(flags)]
        return create_game(make_level(["B=YR=P" + "." * 18, "b" + "." * 23],
                                      extra=rocks + crowd), limits=Limits(work=2000))

    plain, crowded = chain(0), chain(950)
    assert refused(plain.step("right")) == refused(crowded.step("right")) == "complexity_blocked"
    assert lines_run(lambda: crowded.step("right")) < 2 * lines_run(lambda: plain.step("right"))


def pull_room(rows: list[str], extra: list[dict[str, object]], work: int = 200_000) -> Game:
    """BABA IS YOU, ROCK IS PULL and WALL IS STOP above `rows` (64 wide), plus `extra`."""
    return create_game(make_level(["B=YR=LW=S" + "." * 55, *rows], extra=extra),
                       limits=Limits(work=work))


def things(noun: str, xs: list[int]) -> list[dict[str, object]]:
    """A `noun` on row 1 at each x of `xs`, in that order."""
    return [{"id": f"{noun}{i}", "noun": noun, "x": x, "y": 1} for i, x in enumerate(xs)]


def digest(game: Game, action: str) -> str:
    """The step's result (or refusal code) and the state after it, hashed."""
    result = game.step(action)
    data = json.dumps([refused(result) or result, game.get_state()], sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


# Baba stands on a wall, with 500 flags and then 500 rocks behind it: the wall stops the rocks.
HELD = ([".w" + "." * 62], [{"id": "baba", "noun": "baba", "x": 1, "y": 1}]
        + things("flag", [0] * 500) + things("rock", [0] * 500))

# The digests were printed by `digest` for each game below, built and stepped right by the
# engine before the pull loop's cells were dicts (commit 3204766). Things pulled again after
# moving pile up on one cell (the repeated case): the engine's behaviour, pinned as it was.
PULLED = {
    # 1000 rocks on the cell behind baba: each looks at the ones pulled before it (~500,000
    # units of work; the default cap refuses the turn).
    "stack": (["..b" + "." * 61], things("rock", [1] * 1000), 1_000_000, "00722e18eb0cf0dd"),
    # 1000 rocks on the 62 cells behind baba, pulled again and again: the cap refuses the turn.
    "line": (["." * 62 + "b."], things("rock", [i % 62 for i in range(1000)]), 200_000, "ef89833f759a0dbc"),
    # 20 cells of 3 rocks behind baba.
    "repeated": (["." * 20 + "b" + "." * 43], things("rock", [i % 20 for i in range(60)]),
                 200_000, "46cb9e5e86f417f2"),
    # One rock per cell behind 15 flags, on the 62 cells behind baba.
    "crowded line": (["." * 62 + "b."], things("flag", [i // 15 for i in range(930)])
                     + things("rock", list(range(62))), 200_000, "0901de3db93735ba"),
    "held": (*HELD, 200_000, "dcea0956aa6f9791"),
}


@pytest.mark.parametrize("case", list(PULLED))
def test_many_pulled_things_move_as_they_did(case: str) -> None:
    rows, extra, work, expected = PULLED[case]
    assert digest(pull_room(rows, extra, work), "right") == expected


def test_the_work_cap_counts_every_thing_a_pull_looks_at() -> None:
    """Leaving the held rocks costs 1 (baba's evaluation) + 1000 (the things its pull looks at)
    + 500 x 2 (each rock's evaluation and the wall it looks at)."""
    assert refused(pull_room(*HELD, work=2001).step("right")) is None
    assert refused(pull_room(*HELD, work=2000).step("right")) == "complexity_blocked"


def test_a_pulling_mover_is_pulled_along_by_what_it_pushes() -> None:
    """BABA IS PULL: the rock baba pushes pulls baba after it, which ends baba's own move (the
    engine raised, taking baba off the cell it had already left)."""
    g = create_game(make_level(["B=Y.", "B=L.", "R=P.", ".br."]))
    result = g.step("right")
    assert [m["id"] for m in result["moves"]] == ["rock2", "baba1"]
    assert positions(g.get_state(), "baba") == [(2, 3)]
    assert positions(g.get_state(), "rock") == [(3, 3)]


def test_a_weak_thing_is_destroyed_once() -> None:
    """Baba and keke share a cell: the rock baba pushes pulls keke, which destroys the WEAK wall
    the rock shared; baba then finds the wall gone (the engine raised, destroying it again)."""
    extra = [{"id": noun, "noun": noun, "x": x, "y": 5}
             for noun, x in (("baba", 1), ("keke", 1), ("rock", 2), ("wall", 2))]
    g = create_game(make_level(["B=Y..", "R=P..", "K=L..", "W=S..", "W=X..", "....."],
                               extra=extra))
    result = g.step("right")
    assert [m["id"] for m in result["moves"]] == ["rock", "keke", "baba"]
    assert [d["id"] for d in result["destroyed"]] == ["wall"]
    assert positions(g.get_state(), "keke") == positions(g.get_state(), "baba") == [(2, 5)]


@pytest.mark.parametrize(("rows", "crowd", "x"), [
    (["B=YR=PR=X", ".......b."], "rock", 8),  # baba walks into WEAK rocks it cannot push
    (["B=YR=PU=0", "...br...."], "water", 5),  # baba pushes a rock onto sinking water
], ids=["weak", "sink"])
def test_destroying_a_crowd_costs_in_proportion_to_it(rows: list[str], crowd: str, x: int
                                                      ) -> None:
    """Each destruction rebuilt the board's object list: 1000 things took 3.6 times the lines
    of 500."""
    def step(n: int) -> int:
        extra = [{"id": f"c{i}", "noun": crowd, "x": x, "y": 1} for i in range(n)]
        game = create_game(make_level(rows, extra=extra))
        lines = lines_run(lambda: game.step("right"))
        assert positions(game.get_state(), crowd) == []
        return lines

    assert step(1000) < 2.2 * step(500)
