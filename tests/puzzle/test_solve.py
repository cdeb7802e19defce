"""The solver: shortest BFS answers, caps, unsolvable detection, replay checks, a corpus sample."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from actors.puzzle import solve as solve_module
from actors.puzzle.fast import FastLevel
from actors.puzzle.fast_turn import FastTurn
from actors.puzzle.game import replay
from actors.puzzle.keke import load_keke_file
from actors.puzzle.level import Level, parse_level
from actors.puzzle.solve import BLOCKED, SOLVED, UNSOLVABLE, Caps, EngineModel, FastModel, solve
from tests.conftest import shared_path
from tests.puzzle.boards import make_level

CORRIDOR = ["B=Y..", "b...f", "F=V.."]
# WIN must be pushed down under FLAG IS: 3 steps to stand above it, 1 push, 3 to the flag.
PUSH_WIN = ["B=Y..", ".....", "b.V..", "F=..f"]
# Nothing can ever move the text (edges all round) and there is no WIN.
CLOSED = ["B=Y.", "...b"]


def level(rows: list[str], profile: str) -> Level:
    return parse_level(make_level(rows, profile=profile))


def run(lv: Level, **kw: Any) -> solve_module.SolveResult:
    return solve(lv, clock=itertools.count().__next__, caps=kw.pop("caps", Caps(
        max_seconds=1e9, max_expanded=100_000)), **kw)


def wins_within(lv: Level, n: int) -> bool:
    """Brute force: does any move string of length <= n win?"""
    return any(replay(lv, "".join(m))["won"]
               for k in range(1, n + 1) for m in itertools.product("udlrs", repeat=k))


@pytest.mark.parametrize("profile", ["classic", "keke"])
def test_bfs_finds_the_shortest_solution(profile: str) -> None:
    corridor = level(CORRIDOR, profile)
    result = run(corridor, strategy="bfs")
    assert (result.status, result.moves) == (SOLVED, "rrrr")
    assert result.model == ("fast" if profile == "keke" else "engine")
    assert not wins_within(corridor, 3)
    push = level(PUSH_WIN, profile)
    shortest = run(push, strategy="bfs")
    assert shortest.status == SOLVED and len(shortest.moves) == 7
    best = run(push, strategy="best")
    assert best.status == SOLVED and len(best.moves) >= 7
    for found in (result, shortest, best):
        lv = corridor if found is result else push
        assert replay(lv, found.moves) == {"won": True, "won_at": len(found.moves),
                                           "lost": False, "steps": len(found.moves)}


@pytest.mark.parametrize("profile", ["classic", "keke"])
@pytest.mark.parametrize("strategy", ["bfs", "best"])
def test_closed_level_is_unsolvable(profile: str, strategy: str) -> None:
    result = run(level(CLOSED, profile), strategy=strategy)
    assert result.status == UNSOLVABLE and result.moves == ""
    # 5 cells for baba, times the facings a profile keeps in its state; `best` on the fast
    # path folds the free walk (walks.py), so its one start state covers all five cells.
    if (strategy, profile) == ("best", "keke"):
        assert result.expanded == 1
    else:
        assert 5 <= result.expanded <= 20
    assert result.reason == f"all {result.expanded} reachable states explored"


def test_states_a_timed_walk_skipped_are_searched_before_unsolvable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With a MOVE object about, the fast path's timed walks skip later arrivals; the search
    expands those states again one move at a time, so running dry still proves unsolvable."""
    redone: list[bool] = []
    expand = FastLevel.expand

    def spy(self: FastLevel, key: bytes, seen: Any = (), walks: bool = False,
            timed: bool = True) -> list:
        out = expand(self, key, seen, walks, timed)
        redone.append(self.lossy)
        return out

    monkeypatch.setattr(FastLevel, "expand", spy)
    result = run(level(["B=Y...", "b...k.", "K=M..."], "keke"), strategy="best")
    assert (result.status, result.model) == (UNSOLVABLE, "fast") and any(redone)
    assert result.reason.startswith("all ") and result.reason.endswith(" states explored")


def test_the_rules_estimate_counts_the_way_to_the_thing_made_win() -> None:
    """`KEKE IS WIN` wins only where baba meets a keke, so the `rules` estimate of forming it
    grows with baba's distance to the nearest keke (1 or 4 here; BABA IS WIN is further off)."""
    def rules_estimate(third_row: str) -> int:
        fast = FastLevel(level(["B=Y.....", "........", third_row, "........", "........",
                                "K=.V...."], "keke"))
        t = FastTurn(fast)
        t.decode(fast.initial())
        return fast.guide.estimates(t)[2]

    assert rules_estimate("bk......") == 2 + (1 + 1) + 6  # gap 1, keke 1 away, walk to WIN 6
    assert rules_estimate("b...k...") == 2 + (1 + 4) + 6


def test_a_pushed_object_makes_a_state_novel() -> None:
    """Baba pushes the rock right and steps back: the words and baba's cell are as at the
    start, only the PUSH rock moved, and that alone is a novelty feature (once)."""
    fast = FastLevel(level(["B=Y...", "R=P...", "br....", "......"], "keke"))

    def novel(moves: str) -> bool:
        key = fast.initial()
        for move in moves:
            key = fast.step(key, move)[0]
        t = FastTurn(fast)
        t.decode(key)
        return fast.guide.novel(t)

    assert novel("") and novel("d") and not novel("du")  # back where it was: nothing new
    assert novel("r") and novel("rl") and not novel("rl")


def test_the_novel_queue_folds_free_walks_only_without_a_move_word() -> None:
    """Novel-queue expansions (`timed=False`) fold free walking where no MOVE rule can form, and
    then count every walked-over cell as seen; with a MOVE word they play single moves."""
    def expand(rows: list[str]) -> tuple[FastLevel, list]:
        fast = FastLevel(level(rows, "keke"))
        return fast, fast.expand(fast.initial(), walks=True, timed=False)

    fast, children = expand(["B=Y...", "...V..", "b....."])
    assert max(len(moves) for moves, *_ in children) > 1
    t = FastTurn(fast)
    t.decode(fast.step(fast.initial(), "r")[0])  # baba one cell on: walked over, nothing new
    assert not fast.guide.novel(t)
    _, children = expand(["B=Y..M", "...V..", "b....."])
    assert {moves for moves, *_ in children} <= set("udlrs")


@pytest.mark.parametrize(("caps", "reason"), [
    (Caps(max_expanded=2, max_seconds=1e9), "node cap 2 reached"),
    (Caps(max_seconds=5), "time cap 5 s reached"),
    (Caps(max_bytes=10, max_seconds=1e9), "memory cap 10 bytes reached"),
])
def test_caps_give_complexity_blocked(caps: Caps, reason: str) -> None:
    for profile in ("classic", "keke"):
        # The fake clock advances 10 s per reading, so a 5 s cap trips before the 1st expansion.
        clock = itertools.count(0, 10).__next__
        result = solve(level(PUSH_WIN, profile), clock=clock, caps=caps)
        assert (result.status, result.moves) == (BLOCKED, "")
        assert result.reason.endswith(reason)


def test_a_fast_answer_that_does_not_replay_falls_back_to_the_engine(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = FastModel.__init__

    def lying(self: FastModel, lv: Level) -> None:
        real(self, lv)
        truth = self.expand
        self.expand = lambda key, seen, walks=False, timed=True: [
            (m, k, True, *rest) for m, k, _, *rest in truth(key, seen, walks, timed)]

    monkeypatch.setattr(FastModel, "__init__", lying)
    lv = level(CORRIDOR, "keke")
    result = run(lv, strategy="bfs")
    assert (result.status, result.moves, result.model) == (SOLVED, "rrrr", "engine")
    # Every fast goal was refuted by its replay, so the fast search ran dry without proof.
    refuted, partial = result.reason.split("; ")
    assert refuted.endswith(" fast path(s) did not replay in the engine (first 'r')")
    assert partial.startswith(solve_module._PARTIAL)
    assert replay(lv, result.moves)["won_at"] == 4


def test_keys_keep_move_facing_apart() -> None:
    rows = ["B=Y.K=M", "b...k.."]
    for facing_a, facing_b in (("right", "left"), ("up", "down")):
        keys = []
        for facing in (facing_a, facing_b):
            data = make_level(rows, profile="keke")
            data["objects"][1]["facing"] = facing
            lv = parse_level(data)
            keys.append((FastModel(lv).initial(), EngineModel(lv).initial()))
        assert keys[0][0] != keys[1][0] and keys[0][1] != keys[1][1]


# ------------------------------------------------------------------ corpus sample
SAMPLE = ("4", "8", "10", "12", "19", "20", "26", "31", "39", "46")


def test_a_corpus_sample_is_solved_and_replays() -> None:
    levels = {lv.id: lv for lv in load_keke_file(
        shared_path("baba-corpus", "keke", "full_biy_LEVELS.json"))}
    for lid in SAMPLE:
        lv = levels[lid]
        result = run(lv, caps=Caps(max_expanded=3_000, max_seconds=1e9))
        assert result.status == SOLVED, (lid, result)
        check = replay(lv, result.moves)
        assert check["won"] and check["won_at"] == len(result.moves)


# ------------------------------------------------------------------ mechanics
# Baba crosses a frail tile (the only way down; it breaks behind it), pushes the rock onto the
# plate (baba on the plate would close the gate again as it leaves) and walks through the open
# gate to the flag. The text is sealed off below the wall.
GATED = ["b.........", "wwwwtwwwww", "........w.", ".....r.wfw", "..p.....g.",
         "wwwwwwwwww", "B=Y.W=S...", "R=P.F=V..."]


def gated(profile: str) -> Level:
    data = make_level(GATED, profile=profile)
    ids = {o["noun"]: o["id"] for o in data["objects"]}  # one plate, gate and tile each
    data["mechanics"] = [
        {"id": "gate", "type": "plate_gate", "version": 1,
         "config": {"plates": [ids["plate"]], "gates": [ids["gate"]]},
         "state_schema": {"open": "bool"}},
        {"id": "frail", "type": "frail_floor", "version": 1, "config": {"tile": ids["tile"]},
         "state_schema": {"stage": "enum:intact|pressed|cracking|broken"}}]
    return parse_level(data)


@pytest.mark.parametrize("profile", ["classic", "keke"])
def test_the_solver_plays_the_mechanics(profile: str) -> None:
    from actors.puzzle.game import create_game
    from actors.puzzle.words import MOVE_LETTERS as ACTIONS

    lv = gated(profile)
    shortest = run(lv, strategy="bfs")
    best = run(lv, strategy="best")
    assert (shortest.status, shortest.model, len(shortest.moves)) == (SOLVED, "engine", 19)
    assert best.status == SOLVED and len(best.moves) >= 19
    for found in (shortest, best):
        game = create_game(lv)
        events = []
        for letter in found.moves:
            events += [(e["mechanic"], e["type"])
                       for e in game.step(ACTIONS[letter]).get("mechanics", [])]
        assert game.won and game.get_state()["mechanics"] == {
            "frail": {"stage": "broken"}, "gate": {"open": True}}
        assert ("frail", "broke") in events and events[-1] == ("gate", "opened")
