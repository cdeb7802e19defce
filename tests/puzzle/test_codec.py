"""The compact state key: complete (mechanic state, facing), fail-closed, exact round trip."""

from __future__ import annotations

import attrs
import pytest

from actors.puzzle.board import Board
from actors.puzzle.codec import CodecError, Registration, create_codec, registry_for
from actors.puzzle.diagnostics import MAX_DIAGNOSTICS, STOPPED
from actors.puzzle.game import create_game
from actors.puzzle.keke import import_ascii
from actors.puzzle.level import parse_level
from actors.puzzle.turn import advance
from tests.puzzle.boards import accepted, make_level, mechanic_level

ACTIONS = ("up", "down", "left", "right", "wait")


def test_same_board_with_different_mechanic_state_gets_different_keys() -> None:
    g = create_game(mechanic_level())
    codec = create_codec(g.ctx)
    board = g.board
    other = attrs.evolve(board, mechanics=(("cracking",), (True,)))
    assert board.objects == other.objects and board.mechanics != other.mechanics
    assert codec.encode(board) != codec.encode(other)


def test_same_board_with_different_move_facing_gets_different_keys() -> None:
    g = create_game(make_level(["B=Y..", "K=M..", "..k..", "b...."], profile="keke"))
    codec = create_codec(g.ctx)
    state = g.get_state()
    for o in state["objects"]:
        if o.get("noun") == "keke":
            o["facing"] = "left"
    turned = create_game(make_level(["B=Y..", "K=M..", "..k..", "b...."], profile="keke"))
    turned.restore(state)
    assert codec.encode(g.board) != codec.encode(turned.board)
    # ... and the difference is real: the next wait moves keke opposite ways.
    assert g.step("wait")["automata"][0]["to"] != turned.step("wait")["automata"][0]["to"]


def test_unregistered_mechanic_state_fails_closed() -> None:
    level = parse_level(mechanic_level())
    with pytest.raises(CodecError, match=r"^unregistered mechanic state: .*unregistered: "
                                         r"\['gate'\]"):
        create_codec(level, registry_for(level)[:1])
    with pytest.raises(CodecError, match=r"unsupported codec version 9"):
        create_codec(level, (Registration("frail", registry_for(level)[0].fields, 9),
                             registry_for(level)[1]))
    codec = create_codec(level)
    g = create_game(level)
    with pytest.raises(CodecError, match=r"^unregistered mechanic state: the board holds 3"):
        codec.encode(attrs.evolve(g.board, mechanics=g.board.mechanics + ((1,),)))
    with pytest.raises(CodecError, match=r"field 'open': value 'ajar' is not a registered bool"):
        codec.encode(attrs.evolve(g.board, mechanics=(("intact",), ("ajar",))))
    snap = g.get_state()
    snap["mechanics"]["lever"] = {"on": True}
    with pytest.raises(CodecError, match=r"^unregistered mechanic state: mechanics.lever: "
                                         r"unknown mechanic id$"):
        codec.encode_state(snap)
    snap["mechanics"] = {f"m{i}": {} for i in range(10_000)}  # what it says is bounded
    with pytest.raises(CodecError) as failed:
        codec.encode_state(snap)
    listed = str(failed.value).removeprefix("unregistered mechanic state: ").split("; ")
    assert len(listed) == MAX_DIAGNOSTICS + 1 and listed[-1] == f"mechanics: {STOPPED}"
    plain = create_codec(parse_level(make_level(["B=Y", "b.."])))
    with pytest.raises(CodecError, match=r"^unregistered mechanic state"):
        plain.encode(Board(g.board.objects, (("intact",),)))


def _walk(level_data: dict, actions: str) -> list:
    game = create_game(level_data)
    boards = [game.board]
    for a in actions:
        if accepted(game.step(ACTIONS["udlrs".index(a)])):
            boards.append(game.board)
    return [game, boards]


@pytest.mark.parametrize(("data", "actions"), [
    (mechanic_level(), "rrrsldd"),
    (mechanic_level("keke"), "rrrdlu"),
    (import_ascii("__________\n_B12..F13_\n_........_\n_.K17...._\n_.b....f._\n__________")
     .to_json(), "rrsrrur"),
])
def test_round_trip_through_restore_gives_the_same_next_transitions(data: dict,
                                                                     actions: str) -> None:
    game, boards = _walk(data, actions)
    codec = create_codec(game.ctx)
    for board in boards:
        key = codec.encode(board)
        assert isinstance(key, bytes) and codec.decode(key) == board
        restored = create_game(data)
        restored.restore(codec.decode_state(key))
        assert restored.board == board
        for action in ACTIONS:
            public = advance(game.ctx, board, action)
            fast = advance(game.ctx, codec.decode(key), action, record=False)
            via_restore = restored.step(action)
            if accepted(via_restore):
                restored.undo()
            assert (public.accepted, public.board, public.won) == (
                fast.accepted, fast.board, fast.won)
            if accepted(via_restore):
                assert {k: v for k, v in via_restore.items() if k != "turn"} == public.record
            else:
                assert via_restore == public.refusal


def test_a_malformed_key_fails_closed() -> None:
    g = create_game(mechanic_level())
    codec = create_codec(g.ctx)
    key = codec.encode(g.board)
    with pytest.raises(CodecError, match=r"^malformed key of 5 bytes$"):
        codec.decode(key[:5])
    with pytest.raises(CodecError, match=r"^malformed key: mechanic byte 9 out of range$"):
        codec.decode(key[:-1] + b"\x09")
    with pytest.raises(CodecError, match=r"^malformed key: an object id, kind, position or flag"):
        codec.decode(b"\xff\x00" + key[2:])
