"""The `keke` profile is Keke's simulator: the public engine and the solver's fast path (two
separate statements of simulation.js) agree turn by turn on the whole state (`parity.py`).

That includes `destroyObjs`'s splice of an object already removed, which removes the last
element of a list instead (`layer.py`): an object that is both YOU and DEFEAT pairs with
itself, so it is removed twice.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

from actors.puzzle.game import replay
from actors.puzzle.keke import load_keke_file
from actors.puzzle.layer import IN_LAYER, OFF_NOUN, OFF_PHYS
from actors.puzzle.level import Level, parse_level
from actors.puzzle.words import TEXT_BASE, WORDS
from tests.conftest import shared_path
from tests.puzzle.boards import make_level
from tests.puzzle.corpus import SETS
from tests.puzzle.parity import board_after, first_divergence


def full_biy() -> dict[str, Level]:
    return {lv.id: lv for lv in load_keke_file(
        shared_path("baba-corpus", "keke", "full_biy_LEVELS.json"))}


@pytest.mark.parametrize("name", SETS)
def test_both_paths_agree_on_every_corpus_solution(name: str) -> None:
    levels = load_keke_file(shared_path("baba-corpus", "keke", f"{name}_LEVELS.json"))
    diverging = {lv.id: first_divergence(lv, lv.solution) for lv in levels}
    diverging = {k: v for k, v in diverging.items() if v is not None}
    print(f"{name}: {len(levels) - len(diverging)}/{len(levels)} solutions in parity")
    assert diverging == {}


def test_both_paths_agree_on_random_walks() -> None:
    rng = np.random.default_rng(np.random.SeedSequence(4, spawn_key=(2,)))
    levels = load_keke_file(shared_path("baba-corpus", "keke", "demo_LEVELS.json"))
    for lv in levels:
        walk = "".join(rng.choice(list("udlrs"), size=30))
        assert first_divergence(lv, walk) is None, (lv.id, walk)


@pytest.mark.deep
def test_both_paths_agree_on_random_walks_over_full_biy() -> None:
    """4 seeded walks of 40 moves on every full_biy level (about 20 s)."""
    rng = np.random.default_rng(np.random.SeedSequence(4, spawn_key=(3,)))
    found = []
    for lv in full_biy().values():
        for _ in range(4):
            walk = "".join(rng.choice(list("udlrs"), size=40))
            turn = first_divergence(lv, walk)
            if turn is not None:
                found.append((lv.id, walk[:turn]))
    assert found == []


def test_a_you_that_is_defeat_is_removed_twice_as_keke_removes_it() -> None:
    """full_biy 187: LOVE is YOU and DEFEAT, so each of the three loves pairs with itself; each
    pair's second phys splice misses and removes the last object of the phys list, here the
    last three floors, which stay on FLOOR's list (still STOP, still on the map). The shipped
    solution still wins, on both paths."""
    lv = full_biy()["187"]
    _, board = board_after(lv, lv.solution[:2])
    assert not any(o[1] == WORDS.index("love") for o in board.objects)
    floors = [o for o in board.objects if o[1] == WORDS.index("floor")]
    assert [o[5] & (OFF_PHYS | OFF_NOUN | IN_LAYER) for o in floors[-3:]] == [
        OFF_PHYS | IN_LAYER] * 3
    assert not any(o[5] & (OFF_PHYS | OFF_NOUN) for o in board.objects if o not in floors[-3:])
    assert first_divergence(lv, lv.solution) is None
    assert replay(lv, lv.solution)["won_at"] == len(lv.solution)


def test_the_fast_answer_the_engine_used_to_refuse_now_wins() -> None:
    """full_biy 106: the fast path's first answer pushes a SINK rock onto a SINK goop; each of the
    pair is removed twice and the misses take a flag and another goop. Keke wins with it; the
    engine lost it before it spliced as Keke does."""
    lv = full_biy()["106"]
    moves = "rrdlldrrrdrdluldulldrrrlddrruulurluururdlldddldddll"
    assert first_divergence(lv, moves) is None
    assert replay(lv, moves) == {"won": True, "won_at": 51, "lost": False, "steps": 51}


# A synthetic check without the corpus. BABA IS YOU and DEFEAT from the start; the rock is the
# last object of the board (the phys list). The first move's contacts remove baba twice: the
# miss takes the rock off the phys list, so it is never drowned; it stays on ROCK's list, so it
# is still PUSH, and keeps its map entry. KEKE pushes it onto the water (nothing sinks), then
# walks into the water and dies with it. Classic has no such splice: the rock sinks with the
# water and keke walks on to the flag.
QUIRK = ["B=Y.K=Y.", "B=D.R=P.", "U=0.F=V.", "b..k....", "........", "f~......"]
ROCK = {"id": "rock9", "noun": "rock", "x": 2, "y": 5}


def quirk_level(profile: str) -> Level:
    return parse_level(make_level(QUIRK, {"~": "water"}, profile=profile, extra=[ROCK]))


def test_a_spliced_out_object_is_never_drowned() -> None:
    keke = quirk_level("keke")
    assert first_divergence(keke, "ddlll") is None
    _, board = board_after(keke, "d")
    rock = next(o for o in board.objects if o[1] == WORDS.index("rock"))
    assert rock[5] & (OFF_PHYS | OFF_NOUN | IN_LAYER) == OFF_PHYS | IN_LAYER
    _, board = board_after(keke, "ddl")
    kinds = collections.Counter(o[1] for o in board.objects if o[1] < TEXT_BASE)
    assert kinds[WORDS.index("rock")] == kinds[WORDS.index("water")] == 1
    assert replay(keke, "ddlll") == {"won": False, "won_at": None, "lost": True, "steps": 5}
    assert replay(quirk_level("classic"), "ddlll")["won_at"] == 5


def test_stacked_words_read_as_keke_reads_them() -> None:
    """full_biy 33: this walk stacks YOU and WIN on one cell. Keke re-places words in list order,
    so the later word (WIN) shows and is read: BABA IS WIN, in the fast path and in the engine."""
    lv = full_biy()["33"]
    walk = "ddrrrrrrrdduru"
    assert first_divergence(lv, walk) is None
    ctx, board = board_after(lv, walk[:13])
    cells = collections.Counter((o[2], o[3]) for o in board.objects if o[1] >= TEXT_BASE)
    assert max(cells.values()) == 2
    assert "baba is win" in ctx.rules(board.objects).sentences
    assert "baba is you" not in ctx.rules(board.objects).sentences
    classic, _ = board_after(lv, "", "classic")  # the classic model reads a stacked cell's first
    assert "baba is you" in classic.rules(board.objects).sentences


def test_a_hidden_is_still_joins_the_words_beside_it() -> None:
    """full_biy 163: this walk pushes WALL onto an IS. Keke's reader takes every IS, hidden or
    not, with the words its map shows on either side, so GOOP IS YOU (down through the hidden
    IS) holds; the walk ends in a win on both paths."""
    lv = full_biy()["163"]
    walk = "lulldluldu"
    assert first_divergence(lv, walk) is None
    ctx, board = board_after(lv, walk[:4])
    cells: dict[tuple[int, int], list[str]] = collections.defaultdict(list)
    for o in board.objects:
        if o[1] >= TEXT_BASE:
            cells[(o[2], o[3])].append(WORDS[o[1] - TEXT_BASE])
    assert [words for words in cells.values() if len(words) > 1] == [["is", "wall"]]
    assert "goop is you" in ctx.rules(board.objects).sentences
    assert replay(lv, walk) == {"won": True, "won_at": 10, "lost": False, "steps": 10}
