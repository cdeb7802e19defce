"""Walk folding (`walks.py`) and facing-free keys of the keke fast path: both merge or skip only
states whose futures are the same, which these tests check against plain one-move play. Timed
walks (MOVE objects about) skip later arrivals by design; their children must still replay."""

from __future__ import annotations

import numpy as np

from actors.puzzle.fast import FastLevel
from actors.puzzle.fast_turn import FastTurn
from actors.puzzle.keke import load_keke_file
from actors.puzzle.level import parse_level
from actors.puzzle.walks import free_region, timed_exits
from tests.conftest import shared_path
from tests.puzzle.boards import make_level


def play(fast: FastLevel, key: bytes, moves: str) -> tuple[bytes, bool]:
    won = False
    for letter in moves:
        key, won, _ = fast.step(key, letter)
    return key, won


def facing_free(fast: FastLevel, key: bytes) -> bytes:
    """`key` with the YOU objects' facings set to right (a walk's last step sets it, and a step
    out of the region sets it again)."""
    t = FastTurn(fast)
    t.decode(key)
    for o in t.players:
        t.dr[o] = 4
    return t.encode()


def dead(fast: FastLevel, key: bytes) -> bool:
    t = FastTurn(fast)
    t.decode(key)
    return not (t.players or t.automovers)


def check_fold(fast: FastLevel, key: bytes) -> bool:
    """Folded children replay move by move to the same key and win flag, and every one-move
    successor of every walk state is a walk state, a folded child or a dead state. Returns
    whether `key` was foldable at all."""
    t = FastTurn(fast)
    t.decode(key)
    region = free_region(fast, t)
    if region is None:
        return False
    folded = {}
    for moves, child, won, *_ in fast.expand(key, walks=True):
        assert play(fast, key, moves) == (child, won), moves
        folded[child] = moves
    walk_states = {play(fast, key, path)[0] for path in region.values()}
    assert len(walk_states) == len(region)  # walking changes nothing but the YOU's cell
    walks = {facing_free(fast, state) for state in walk_states}
    for state in walk_states:
        for move, child, *_ in fast.expand(state):
            assert (child in folded or facing_free(fast, child) in walks
                    or dead(fast, child)), move
    return True


def check_timed(fast: FastLevel, key: bytes) -> bool:
    """Children of a timed walk replay move by move to the same key and win flag. Returns
    whether `key` had a timed walk at all."""
    t = FastTurn(fast)
    t.decode(key)
    if timed_exits(fast, t) is None:
        return False
    for moves, child, won, *_ in fast.expand(key, walks=True):
        assert play(fast, key, moves) == (child, won), moves
    return True


def test_folded_walks_match_one_move_play_on_corpus_walks() -> None:
    rng = np.random.default_rng(np.random.SeedSequence(4, spawn_key=(5,)))
    levels = load_keke_file(shared_path("baba-corpus", "keke", "full_biy_LEVELS.json"))
    checked = timed = 0
    for lv in levels[::4]:
        fast = FastLevel(lv)
        key = fast.initial()
        for letter in rng.choice(list("udlrs"), size=12):
            key, won, _ = fast.step(key, str(letter))
            if won:
                break
        checked += check_fold(fast, key)
        timed += check_timed(fast, key)
    print(f"{checked} of {len(levels[::4])} end states were foldable, {timed} by timed walks")
    assert checked >= 10 and timed >= 1


def test_timed_walks_replay_and_say_they_skipped_states() -> None:
    """KEKE IS MOVE: baba's walks are folded while keke walks; every child replays move by move,
    pushing the rule's words along is an exit, and arrivals at a cell already walked to (keke
    elsewhere by then) are skipped, which the level records as `lossy`."""
    fast = FastLevel(parse_level(make_level(
        ["B=Y...", "......", "b...k.", "......", ".K=M.."], profile="keke")))
    root = fast.initial()
    assert not fast.lossy
    children = fast.expand(root, walks=True)
    for moves, child, won, *_ in children:
        assert play(fast, root, moves) == (child, won), moves
    assert "ddr" in [moves for moves, *_ in children]  # down to row 4, then push KEKE IS MOVE
    assert fast.lossy


def region_of(rows: list[str]) -> dict[int, str] | None:
    fast = FastLevel(parse_level(make_level(rows, profile="keke")))
    t = FastTurn(fast)
    t.decode(fast.initial())
    return free_region(fast, t)


def test_walks_are_folded_only_for_a_lone_safe_you_and_nothing_moving() -> None:
    assert sorted(region_of(["B=Y", "b.."]).values()) == ["", "r", "rr"]
    assert region_of(["B=YK=M", "b..k.."]) is None  # KEKE IS MOVE
    assert region_of(["B=Y", "b.b"]) is None  # two YOUs
    assert region_of(["B=YB=D", "b....."]) is None  # the YOU is DEFEAT itself
    # A DEFEAT skull is a cell the walk may not enter: the region stops before it.
    assert sorted(region_of(["B=YQ=D", "b.s..."]).values()) == ["", "r"]


def test_facing_is_dropped_from_keys_only_without_a_move_word() -> None:
    """Reaching one cell facing right ("r") or facing up ("dru") gives one key when nothing can
    ever be MOVE, and two keys when a MOVE word exists (baba could be made MOVE later)."""
    for rows, same in ((["B=Y..", ".....", "....."], True),
                       (["B=Y.M", ".....", "....."], False)):
        data = make_level(rows, profile="keke")
        data["objects"].append({"id": "b0", "noun": "baba", "x": 1, "y": 1})
        fast = FastLevel(parse_level(data))
        root = fast.initial()
        assert (play(fast, root, "r")[0] == play(fast, root, "dru")[0]) is same
