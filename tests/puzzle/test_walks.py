"""Random walks over corpus levels in both profiles: Undo, restore and the codec stay exact."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from actors.puzzle.codec import create_codec
from actors.puzzle.game import create_game
from actors.puzzle.keke import load_keke_file
from actors.puzzle.level import Level
from actors.puzzle.turn import advance
from tests.conftest import shared_path
from tests.puzzle.boards import accepted

ACTIONS = ("up", "down", "left", "right", "wait")


def walk_and_check(level: Level, profile: str, steps: int, rng: np.random.Generator) -> None:
    game = create_game(level, profile)
    codec = create_codec(game.ctx)
    states = [game.get_state()]
    for choice in rng.integers(0, len(ACTIONS), size=steps):
        if not accepted(game.step(ACTIONS[choice])):
            continue
        states.append(game.get_state())
        key = codec.encode(game.board)
        restored = create_game(level, profile)
        restored.restore(codec.decode_state(key))
        assert restored.board == game.board
        for action in ACTIONS:
            direct = advance(game.ctx, game.board, action)
            via_key = advance(restored.ctx, codec.decode(key), action, record=False)
            assert (direct.accepted, direct.board, direct.won) == (
                via_key.accepted, via_key.board, via_key.won)
        if game.won:
            break
    assert game.restore(copy.deepcopy(states[-1]))["changed"] is False
    while len(states) > 1:
        states.pop()
        game.undo()
        assert game.get_state() == states[-1], (level.id, profile)


def _levels(name: str) -> list[Level]:
    return load_keke_file(shared_path("baba-corpus", "keke", f"{name}_LEVELS.json"))


@pytest.mark.parametrize("profile", ["keke", "classic"])
def test_walks_on_the_demo_levels(profile: str) -> None:
    rng = np.random.default_rng(np.random.SeedSequence(4, spawn_key=(7,)))
    for level in _levels("demo"):
        walk_and_check(level, profile, 20, rng)


@pytest.mark.deep
@pytest.mark.parametrize("profile", ["keke", "classic"])
def test_long_walks_on_every_full_biy_level(profile: str) -> None:
    rng = np.random.default_rng(np.random.SeedSequence(4, spawn_key=(8,)))
    for level in _levels("full_biy"):
        walk_and_check(level, profile, 60, rng)
