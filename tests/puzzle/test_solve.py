"""The solver: shortest BFS answers, caps, unsolvable detection, replay checks, fast-path parity."""

from __future__ import annotations

import collections
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from actors.puzzle import solve as solve_module
from actors.puzzle.board import Context
from actors.puzzle.fast import FastLevel
from actors.puzzle.fast_turn import FastTurn
from actors.puzzle.game import replay
from actors.puzzle.keke import load_keke_file
from actors.puzzle.level import Level, parse_level
from actors.puzzle.solve import BLOCKED, SOLVED, UNSOLVABLE, Caps, EngineModel, FastModel, solve
from actors.puzzle.turn import advance, settle_initial
from actors.puzzle.words import MOVE_LETTERS, TEXT_BASE, WORDS
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


def test_after_a_refuted_quirk_goal_quirk_paths_are_dropped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every child claims a win and comes from a quirk turn: the first goal is refuted by its
    replay, then no quirk path is followed, the fast search runs dry without proof and the
    engine searches the level again."""
    real = FastModel.__init__

    def lying(self: FastModel, lv: Level) -> None:
        real(self, lv)
        truth = self._fast.expand

        def expand(key: bytes, seen: Any, walks: bool = False, timed: bool = True) -> list:
            out = [(m, k, True, *rest) for m, k, _, *rest in truth(key, seen, walks, timed)]
            self._fast.quirks = {k for _, k, *_ in out}
            return out

        self.expand = expand

    monkeypatch.setattr(FastModel, "__init__", lying)
    lv = level(CORRIDOR, "keke")
    result = run(lv, strategy="bfs")
    assert (result.status, result.moves, result.model) == (SOLVED, "rrrr", "engine")
    refuted, partial = result.reason.split("; ")
    assert refuted == "1 fast path(s) did not replay in the engine (first 'r')"
    assert partial.startswith(solve_module._PARTIAL) and partial.endswith(" 1 goals refuted by replay)")


def test_turns_that_hit_the_double_removal_quirk_are_flagged() -> None:
    """full_biy 187's second shipped move removes an object twice (fast_divergences.json): the
    fast path plays it as Keke does, and `expand` lists that child in `quirks`."""
    lv = {lv.id: lv for lv in load_keke_file(
        shared_path("baba-corpus", "keke", "full_biy_LEVELS.json"))}["187"]
    assert first_divergence(lv, lv.solution[:2]) == 2
    fast = FastLevel(lv)
    key, _, _ = fast.step(fast.initial(), lv.solution[0])
    quirk, _, _ = fast.step(key, lv.solution[1])
    assert fast.expand(fast.initial()) and not fast.quirks
    assert quirk in {child for _, child, *_ in fast.expand(key)}
    assert quirk in fast.quirks


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


# ------------------------------------------------------------------ fast-path parity
FACING = {1: 1, 2: 3, 3: 2, 4: 0}  # fast facing -> words.DIRECTIONS code
DIVERGENCES = json.loads((Path(__file__).parent / "fast_divergences.json").read_text())


def fast_view(fast: FastLevel, key: bytes) -> collections.Counter:
    t = FastTurn(fast)
    t.decode(key)
    movers = set(t.automovers)
    return collections.Counter(
        (t.nm[o], *fast.xy(t.pos[o]), FACING[t.dr[o]] if o in movers else None)
        for o in [*range(fast.n_words), *t.phys])


def engine_view(ctx: Context, board: Any) -> collections.Counter:
    from actors.puzzle.rules import MOVE
    masks = ctx.rules(board.objects).masks
    return collections.Counter((o[1], o[2], o[3], o[4] if masks[o[1]] & MOVE else None)
                               for o in board.objects)


def first_divergence(lv: Level, moves: str) -> int | None:
    """The first turn after which fast and engine disagree on the board or on the win."""
    fast, ctx = FastLevel(lv), Context(lv)
    key, board = fast.initial(), settle_initial(ctx, lv.objects)
    if fast_view(fast, key) != engine_view(ctx, board):
        return 0
    for i, letter in enumerate(moves, 1):
        key, won, lost = fast.step(key, letter)
        out = advance(ctx, board, MOVE_LETTERS[letter], record=False)
        board = out.board
        if won != out.won or lost != (out.lost if out.accepted else lost) or (
                fast_view(fast, key) != engine_view(ctx, board)):
            return i
        if won:
            break
    return None


@pytest.mark.parametrize("name", ["demo", "full_biy"])
def test_fast_path_matches_the_engine_on_corpus_solutions(name: str) -> None:
    levels = load_keke_file(shared_path("baba-corpus", "keke", f"{name}_LEVELS.json"))
    diverging = {lv.id: first_divergence(lv, lv.solution) for lv in levels}
    diverging = {k: v for k, v in diverging.items() if v is not None}
    expected = {k: v["turn"] for k, v in DIVERGENCES.get(name, {}).items()}
    print(f"{name}: {len(levels) - len(diverging)}/{len(levels)} solutions in parity")
    assert diverging == expected


def test_fast_path_matches_the_engine_on_random_walks() -> None:
    import numpy as np
    rng = np.random.default_rng(np.random.SeedSequence(4, spawn_key=(2,)))
    levels = load_keke_file(shared_path("baba-corpus", "keke", "demo_LEVELS.json"))
    for lv in levels:
        walk = "".join(rng.choice(list("udlrs"), size=30))
        assert first_divergence(lv, walk) is None, (lv.id, walk)


def _walked(level: str, walk: str, steps: int) -> tuple[Any, Context, Any]:
    """full_biy level `level`, `walk` checked to agree on both paths, and the fast path's board
    after its first `steps` moves."""
    lv = {lv.id: lv for lv in load_keke_file(
        shared_path("baba-corpus", "keke", "full_biy_LEVELS.json"))}[level]
    assert first_divergence(lv, walk) is None
    ctx = Context(lv)
    board = settle_initial(ctx, lv.objects)
    for letter in walk[:steps]:
        board = advance(ctx, board, MOVE_LETTERS[letter], record=False).board
    return lv, ctx, board


def test_stacked_words_read_as_keke_reads_them() -> None:
    """full_biy 33: this walk stacks YOU and WIN on one cell. Keke re-places words in list order,
    so the later word (WIN) shows and is read: BABA IS WIN, in the fast path and in the engine."""
    lv, ctx, board = _walked("33", "ddrrrrrrrdduru", 13)
    cells = collections.Counter((o[2], o[3]) for o in board.objects if o[1] >= TEXT_BASE)
    assert max(cells.values()) == 2
    assert "baba is win" in ctx.rules(board.objects).sentences
    assert "baba is you" not in ctx.rules(board.objects).sentences
    classic = Context(lv, "classic")  # the classic model reads a stacked cell's first word
    assert "baba is you" in classic.rules(board.objects).sentences


def test_a_hidden_is_still_joins_the_words_beside_it() -> None:
    """full_biy 163: this walk pushes WALL onto an IS. Keke's reader takes every IS, hidden or
    not, with the words its map shows on either side, so GOOP IS YOU (down through the hidden
    IS) holds; the walk ends in a win on both paths (a fast answer the engine once refused).
    Reading only what the map shows would lose that rule."""
    walk = "lulldluldu"
    lv, ctx, board = _walked("163", walk, 4)
    cells: dict[tuple[int, int], list[str]] = collections.defaultdict(list)
    for o in board.objects:
        if o[1] >= TEXT_BASE:
            cells[(o[2], o[3])].append(WORDS[o[1] - TEXT_BASE])
    assert [words for words in cells.values() if len(words) > 1] == [["is", "wall"]]
    assert "goop is you" in ctx.rules(board.objects).sentences
    assert replay(lv, walk) == {"won": True, "won_at": 10, "lost": False, "steps": 10}


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


@pytest.mark.deep
def test_random_walk_divergences_are_all_the_double_removal_quirk(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fast/engine divergence on random full_biy walks is a turn in which the fast path
    removed some object twice (Keke's splice(-1) quirk, see fast_divergences.json)."""
    import numpy as np

    from actors.puzzle import fast_turn

    doubled: list[bool] = []
    real = fast_turn.FastTurn._destroy

    def spy(self: fast_turn.FastTurn, dead: list[tuple[int, int]]) -> None:
        flat = [o for pair in dead for o in pair]
        doubled.append(len(flat) != len(set(flat)))
        real(self, dead)

    monkeypatch.setattr(fast_turn.FastTurn, "_destroy", spy)
    rng = np.random.default_rng(np.random.SeedSequence(4, spawn_key=(3,)))
    found = []
    for lv in load_keke_file(shared_path("baba-corpus", "keke", "full_biy_LEVELS.json")):
        for _ in range(4):
            walk = "".join(rng.choice(list("udlrs"), size=40))
            turn = first_divergence(lv, walk)
            if turn is None:
                continue
            fl = FastLevel(lv)
            key = fl.initial()
            for letter in walk[: turn - 1]:
                key, _, _ = fl.step(key, letter)
            doubled.clear()
            fl.step(key, walk[turn - 1])
            found.append((lv.id, turn, any(doubled)))
    print(f"{len(found)} divergent walks: {found}")
    assert all(quirk for _, _, quirk in found), found
