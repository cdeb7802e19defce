"""Rules and properties under the classic profile (and Keke's differences where they bite)."""

from __future__ import annotations

from typing import Any

import pytest

from actors.puzzle.board import RULE_CACHE_WORDS, Context, Limits
from actors.puzzle.diagnostics import LevelError
from actors.puzzle.game import Game, create_game
from actors.puzzle.level import parse_level
from protocol.text import stored_texts
from tests.puzzle.boards import make_level, many_rules_level, positions, refused


def game(rows: list[str], **kw: Any) -> Game:
    return create_game(make_level(rows, **kw))


def test_and_on_both_sides_gives_every_combination() -> None:
    g = game(["B&K=Y&V", ".......", ".b...k."])
    assert set(g.get_state()["rules"]) == {
        "baba is you", "baba is win", "keke is you", "keke is win"}
    assert g.won  # a YOU that is also WIN wins on the spot
    assert refused(g.step("up")) == "game_over"


def test_several_you_nouns_all_move() -> None:
    g = game(["B=Y..", "K=Y..", ".....", "b..k."])
    g.step("right")
    s = g.get_state()
    assert positions(s, "baba") == [(1, 3)] and positions(s, "keke") == [(4, 3)]


def test_not_takes_a_property_away_and_vertical_text_reads_top_down() -> None:
    g = game(["B=Y..", "B....", "=....", "!....", "Y..b."])
    assert "baba is not you" in g.get_state()["rules"]
    assert refused(g.step("left")) == "nothing_can_move"


def test_noun_is_noun_transforms_and_x_is_x_blocks_it() -> None:
    g = game(["B=Y....", "R=F....", ".......", "b..r..."])
    assert positions(g.get_state(), "flag") == [(3, 3)]
    blocked = game(["B=Y....", "R=F....", "R=R....", "b..r..."])
    assert positions(blocked.get_state(), "rock") == [(3, 3)]


def test_the_text_noun_names_every_text_block() -> None:
    g = game(["B=Y.", "T=Y.", "....", ".b.."])
    g.step("down")
    s = g.get_state()
    assert sorted({o["y"] for o in s["objects"] if "word" in o}) == [1, 2]
    assert positions(s, "baba") == [(1, 3)]  # blocked by the bottom edge, text moved


def test_text_is_always_pushable_and_stop_blocks() -> None:
    g = game(["B=Y...", "......", "b.Fw..", "W=S..."])
    r = g.step("right")
    assert r["moves"] == [{"id": "baba1", "from": [0, 2], "to": [1, 2]}]
    assert refused(g.step("right")) == "no_change"  # FLAG text is pushed into the STOP wall


def test_pull_follows_the_mover() -> None:
    g = game(["B=Y...", "R=L...", "......", "rb...."])
    g.step("right")
    assert positions(g.get_state(), "rock") == [(1, 3)]


def test_classic_contacts_remove_only_the_victim_but_sink_removes_both() -> None:
    defeat = game(["B=Y...", "Q=D...", "......", "bs...."], legend={"Q": "SKULL"})
    defeat.step("right")
    assert positions(defeat.get_state(), "baba") == [] and defeat.lost
    assert positions(defeat.get_state(), "skull") == [(1, 3)]
    keke = create_game(make_level(["B=Y...", "Q=D...", "......", "bs...."],
                                  legend={"Q": "SKULL"}, profile="keke"))
    keke.step("right")
    assert positions(keke.get_state(), "skull") == []  # Keke: both members of the pair
    sink = game(["B=Y...", "R=P...", "U=0...", "br~..."], legend={"U": "WATER"})
    r = sink.step("right")
    assert {d["id"] for d in r["destroyed"]} == {"rock2", "water3"}


def test_hot_melts_only_the_melt_object() -> None:
    g = game(["B=Y..", "B=E..", "L=H..", ".....", "bl..."], legend={"L": "LAVA"})
    r = g.step("right")
    assert [d["cause"] for d in r["destroyed"]] == ["melt"]
    assert positions(g.get_state(), "lava") == [(1, 4)]


def test_open_meets_shut_and_both_go() -> None:
    g = game(["B=Y..", "J=O&P", "Z=C&S", ".....", "by.d."], legend={"J": "KEY", "Z": "DOOR"})
    g.step("right")
    r = g.step("right")
    assert sorted(d["id"] for d in r["destroyed"]) == ["door3", "key2"]


def test_weak_blocker_breaks_instead_of_blocking() -> None:
    g = game(["B=Y...", "R=P&X.", "W=S...", "brw..."])
    r = g.step("right")
    assert [d["cause"] for d in r["destroyed"]] == ["weak"]
    assert positions(g.get_state(), "baba") == [(1, 3)]


def test_float_keeps_apart_from_sink() -> None:
    g = game(["B=Y&A.", "U=0...", "b~....", "......"], legend={"U": "WATER"})
    g.step("right")
    assert positions(g.get_state(), "baba") == [(1, 2)]


def test_move_turns_round_and_retries_in_classic_but_not_in_keke() -> None:
    rows = ["B=Y...", "K=M...", "W=S...", "...kw.", "b....."]
    classic = game(rows)
    classic.step("wait")
    keke = create_game(make_level(rows, profile="keke"))
    keke.step("wait")
    assert positions(classic.get_state(), "keke") == [(2, 3)]
    assert positions(keke.get_state(), "keke") == [(3, 3)]
    assert [o["facing"] for o in keke.get_state()["objects"] if o.get("noun") == "keke"] == [
        "left"]


def test_stacking_is_unbounded() -> None:
    extra = [{"id": f"x{i}", "noun": "baba", "x": 1, "y": 3} for i in range(6)]
    g = game(["B=Y..", ".....", ".....", ".b..."], extra=extra)
    g.step("right")
    assert positions(g.get_state(), "baba") == [(2, 3)] * 7


def test_x_is_text_and_text_is_y_cross_between_objects_and_text() -> None:
    g = game(["B=Y....", "R=T....", ".......", "b..r..."])
    s = g.get_state()
    assert positions(s, "rock") == []
    assert {"id": "rock2", "word": "rock", "x": 3, "y": 3, "facing": "right"} in s["objects"]
    g = game(["B=Y....", "T=R....", ".......", "b......"])
    assert sorted(o.get("noun", "text") for o in g.get_state()["objects"]) == ["baba"] + [
        "rock"] * 6


def test_not_subject_covers_every_other_noun() -> None:
    g = game(["!B=S..", "B=Y...", "......", "bk...."])
    assert "not baba is stop" in g.get_state()["rules"]
    assert refused(g.step("right")) == "no_change"  # keke is STOP now, baba is not


def test_the_rules_cache_holds_a_bounded_number_of_words() -> None:
    """The rules read from each text layout are cached under the layout. Bounded by count
    alone, the cache of a room's 1000-word level took some 70 KB for every layout its player
    pushed the words into, up to 200,000 of them (14 GB); the words its keys hold bound it."""
    words = [{"id": f"t{i}", "word": "rock", "x": i % 50, "y": 20 + i // 50} for i in range(1000)]
    level = parse_level({"id": "many", "width": 64, "height": 64, "objects": [], "text": words})
    ctx = Context(level)
    board = [[*o, 0] for o in level.objects]
    for cell in range(1100):  # the first word pushed to a new cell each time
        board[0][2:4] = cell % 64, cell // 64
        ctx.rules(board)
    assert sum(map(len, ctx._rules)) <= RULE_CACHE_WORDS


def test_a_start_over_the_rule_cap_is_a_level_error() -> None:
    with pytest.raises(LevelError, match=r"^text: the start reads 576 rule sentences; the "
                       r"engine plays at most 512$"):
        create_game(many_rules_level())
    with pytest.raises(LevelError, match=r"^text: the start reads 2 rule sentences; the "
                       r"engine plays at most 1$"):
        create_game(make_level(["B=Y", "F=V", "b.f"]), limits=Limits(sentences=1))
    with pytest.raises(LevelError, match=r"^text: the start takes more than the engine's 3 "
                       r"units of work$"):
        create_game(make_level(["R=F", "r.."], profile="keke"), limits=Limits(work=3))


def rereading(words: int, rocks: int) -> Game:
    """Keke: TEXT IS MOVE moves `words` loose words (a rules pass each), and at every pass
    ROCK IS BABA then BABA IS ROCK remake each of `rocks` rocks twice."""
    rules = [["text", "is", "move"], ["rock", "is", "baba"], ["baba", "is", "rock"]]
    text = [{"id": f"r{y}{x}", "word": w, "x": 61 + x, "y": y}
            for y, row in enumerate(rules) for x, w in enumerate(row)]
    text += [{"id": f"w{i}", "word": "win", "x": i % 30 * 2, "y": 4 + i // 30}
             for i in range(words)]
    objects = [{"id": f"o{i}", "noun": "rock", "x": i % 64, "y": 63 - i // 64}
               for i in range(rocks)]
    return create_game({"id": "rr", "width": 64, "height": 64, "profile": "keke",
                        "objects": objects, "text": text})


def test_rules_passes_and_transforms_count_against_the_work_cap() -> None:
    """300 passes remaking 300 rocks took 1.6 s of one wait and recorded 180,000 transforms."""
    game = rereading(300, 300)
    state = game.get_state()
    assert refused(game.step("wait")) == "complexity_blocked"
    assert game.get_state() == state


def test_a_stored_start_and_turn_play_again_without_todays_work_cap() -> None:
    """A room folds its stored moves again on load (`stored_texts`): a cap that counts more
    than their day's did must refuse neither its start nor its turns."""
    start, turn = make_level(["R=F", "r.."], profile="keke"), make_level(["B=Y", "b.."],
                                                                         profile="keke")
    with pytest.raises(LevelError):
        create_game(start, limits=Limits(work=3))
    assert refused(create_game(turn, limits=Limits(work=0)).step("right")) == (
        "complexity_blocked")
    with stored_texts():
        create_game(start, limits=Limits(work=3))
        assert refused(create_game(turn, limits=Limits(work=0)).step("right")) is None


def test_a_turn_records_one_transform_per_object() -> None:
    result = rereading(10, 10).step("wait")
    assert result["transforms"] == [{"id": f"o{i}", "from": "rock", "to": "rock"}
                                    for i in range(10)]
