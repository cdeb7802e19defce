"""The puzzle room's rules as pure functions: decide, evolve, result and answer called directly."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from actors.puzzle import rules
from actors.puzzle.catalog import ROOM_MAX_THINGS, bundled
from actors.puzzle.events import Created, Moved
from actors.puzzle.hint import hint
from actors.puzzle.pack import pack_of
from actors.puzzle.room import Play
from actors.puzzle.share import make_link
from actors.world import Caller, Ctx, Refusal
from protocol.errors import ErrorCode
from protocol.ops import puzzle as ops
from protocol.ops.puzzle import PuzzleCode
from tests.puzzle.boards import lines_run, link_of, make_level, many_rules_level
from tests.puzzle.room_table import ANN, BOB, DIRS, WORLD, Room


def test_a_starter_level_is_won_and_counted() -> None:
    room = Room()
    assert (room.reply.level_id, room.reply.revision, room.reply.player) == ("first-steps", 1,
                                                                              "ann")
    assert "baba*" in room.reply.board.grid and "flag is win" in room.reply.board.rules
    solution = bundled("starter").levels[0].solution
    assert solution is not None
    reply = room.move(solution)
    assert reply.room.won and reply.room.moves == solution and reply.turn["won"]
    assert reply.room.solved == ["first-steps"] and reply.room.revision == 1 + len(solution)
    key = reply.room.key
    assert key.startswith("first-steps@") and room.state.wins == {key: solution}
    assert room.state.standings.board(key) == [("ann", len(solution))]
    assert room.move("l") == Refusal(PuzzleCode.GAME_OVER,
                                     "The level is already won; undo or reset to play on.")


def test_the_view_shows_board_grid_rules_moves_and_mechanics() -> None:
    room = Room(level="plates")
    view = room.read("puzzle.view", ops.ViewArgs())
    assert (view.level, view.levels, view.title, view.profile) == (18, 25, "Plates and gates",
                                                                  "classic")
    assert view.mechanics == {"gate": {"open": False}}
    assert "baba is you" in view.board.rules
    assert view.board.grid.splitlines()[4].startswith("3 .    baba*")
    assert {"id": "baba1", "noun": "baba", "x": 1, "y": 3, "facing": "right"} in (
        view.board.objects)
    assert WORLD.view(room.state)["board"]["grid"] == view.board.grid
    assert view.board.you == ["baba1"]


def test_the_links_hold_the_level_and_the_pack() -> None:
    from actors.puzzle.share import open_link

    room = Room(level="walls")
    links = room.read("puzzle.link", ops.ViewArgs())
    assert open_link(links.level).levels == (bundled("starter").level("walls"),)
    assert open_link(links.pack) == bundled("starter")


def test_the_link_of_a_level_named_longer_than_a_pack_makes_a_room() -> None:
    room = Room(link=link_of({**make_level(["B=Y..", "b...f", "F=V.."]), "name": "n" * 200}))
    again = Room(link=room.read("puzzle.link", ops.ViewArgs()).level)
    assert (again.reply.pack, again.reply.title) == ("n" * 100, "n" * 200)


def test_undo_goes_back_one_step_through_the_engine_snapshot() -> None:
    room = Room(level="plates")
    states = [room.state.play]
    for letter in "drrrr":  # the box reaches the plate on the last push: the gate opens
        reply = room.move(letter)
        states.append(room.state.play)
    assert reply.turn["mechanics"][0]["type"] == "opened"
    reply = room.write("puzzle.undo", ops.StepArgs())
    assert reply.turn["mechanics"] == [{"mechanic": "gate", "type": "restored", "subject": None,
                                        "from": {"open": True}, "to": {"open": False},
                                        "cause": "undo"}]
    assert room.state.play == states[-2] and reply.room.moves == "drrr"
    for _ in range(4):
        room.write("puzzle.undo", ops.StepArgs())
    assert room.state.play == states[0]
    assert room.write("puzzle.undo", ops.StepArgs()) == Refusal(
        PuzzleCode.NOTHING_TO_UNDO, "There is nothing to undo.")


def test_reset_is_undoable_and_refused_at_the_start() -> None:
    room = Room()
    start = room.state.play
    assert room.write("puzzle.reset", ops.StepArgs()).code == PuzzleCode.NO_CHANGE
    room.move("rr")
    played = room.state.play
    reply = room.write("puzzle.reset", ops.StepArgs())
    assert room.state.play == attrs.evolve(start, undo=room.state.play.undo)
    assert reply.turn == {"cause": "reset", "turn": 0} and reply.room.moves == ""
    room.write("puzzle.undo", ops.StepArgs())
    assert room.state.play == played


def test_a_stale_revision_is_refused_and_changes_nothing() -> None:
    room = Room()
    room.move("r")
    before = room.state
    stale = room.write("puzzle.move", ops.MoveArgs("right", expected_revision=1))
    assert stale == Refusal(ErrorCode.STALE_REVISION, "the room is at revision 2, not 1",
                            {"revision": 2})
    assert room.write("puzzle.undo", ops.StepArgs(expected_revision=7)).code == (
        ErrorCode.STALE_REVISION)
    assert room.state is before


def test_only_the_player_writes_and_anyone_reads() -> None:
    room = Room()
    before = room.state
    for op, args in (("puzzle.move", ops.MoveArgs("right", 1)), ("puzzle.undo", ops.StepArgs()),
                     ("puzzle.reset", ops.StepArgs()), ("puzzle.next", ops.StepArgs())):
        refused = room.write(op, args, caller=BOB)
        assert refused.code == ErrorCode.FORBIDDEN and refused.detail == {"player": "ann"}
    assert room.state is before
    assert room.read("puzzle.view", ops.ViewArgs(), Caller("watcher", "spectator")).revision == 1


def test_blocked_and_rejected_turns_keep_the_engine_codes() -> None:
    room = Room(level="walls")
    assert room.move("uuuu").code == PuzzleCode.NO_CHANGE  # baba walks into the top edge
    assert room.state.play.moves == "u"


def test_next_needs_a_win_and_stops_after_the_last_level() -> None:
    room = Room()
    assert room.write("puzzle.next", ops.StepArgs()).code == PuzzleCode.NOT_WON
    room.move(bundled("starter").levels[0].solution or "")
    reply = room.write("puzzle.next", ops.StepArgs())
    assert (reply.room.level, reply.room.level_id, reply.room.moves) == (1, "walls", "")
    last = Room(level="timing")
    last.move(bundled("starter").level("timing").solution or "")
    assert last.write("puzzle.next", ops.StepArgs()).code == PuzzleCode.LAST_LEVEL


def test_history_replays_the_level_to_move_n() -> None:
    room = Room(level="plates")
    room.move("drrrr")
    boards = []
    for n in range(6):
        past = room.read("puzzle.history", ops.HistoryArgs(n))
        boards.append((past.moves, past.mechanics["gate"]["open"]))
    assert boards == [("", False), ("d", False), ("dr", False), ("drr", False),
                      ("drrr", False), ("drrrr", True)]
    assert room.read("puzzle.history", ops.HistoryArgs(5)).board == room.read(
        "puzzle.view", ops.ViewArgs()).board
    assert room.read("puzzle.history", ops.HistoryArgs(6)).detail == {
        "path": "args.move", "moves": 5}


def test_history_is_the_replay_of_the_moves_after_undos_and_resets() -> None:
    rng = random.Random(7)
    for level in ("first-steps", "plates", "walls"):
        room = Room(level=level)
        for _ in range(60):
            pick = rng.random()
            if pick < 0.15:
                room.write("puzzle.undo", ops.StepArgs())
            elif pick < 0.2:
                room.write("puzzle.reset", ops.StepArgs())
            else:
                room.move(rng.choice("udlr"))
        play = room.state.play
        replayed = Play.begin(play.level, room.state.profile)
        for n in range(len(play.moves) + 1):
            past = room.read("puzzle.history", ops.HistoryArgs(n))
            assert (past.board, past.moves, past.won, past.lost) == (
                rules.room_view(room.state, replayed).board, replayed.moves, replayed.won,
                replayed.lost), (level, n)
            if n < len(play.moves):
                replayed = replayed.moved(DIRS[play.moves[n]])


def test_history_costs_the_same_at_any_move() -> None:
    """No replay from the start: a spectator's read of move 300 is as cheap as move 1."""
    room = Room(level="walls")
    room.move("rl" * 150)
    assert len(room.state.play.moves) == 300

    def history(n: int) -> Callable[[], object]:
        return lambda: room.read("puzzle.history", ops.HistoryArgs(n))

    assert lines_run(history(299)) < 2 * lines_run(history(1))


def test_history_past_the_undo_cap_is_the_start_or_refused_as_not_kept() -> None:
    """1500 moves, a reset and 1000 more push 2501 entries: the stack keeps 2000. Undone
    back to the first run, its moves 1 to 500 have no board left: refused, never another."""
    room = Room()
    start = room.read("puzzle.view", ops.ViewArgs()).board
    room.move("du" * 750)
    room.write("puzzle.reset", ops.StepArgs())
    room.move("du" * 500)
    for _ in range(1001):
        assert not isinstance(room.write("puzzle.undo", ops.StepArgs()), Refusal)
    play = room.state.play
    assert (len(play.moves), len(play.undo)) == (1500, 999)
    first = room.read("puzzle.history", ops.HistoryArgs(0))
    assert (first.board, first.moves) == (start, "")
    for n in (1, 500):
        assert room.read("puzzle.history", ops.HistoryArgs(n)) == Refusal(
            ErrorCode.BAD_REQUEST, f"the board after move {n} is no longer kept (the undo "
            "stack keeps the last 2000 steps)", {"path": "args.move", "moves": 1500})
    replayed = Play.begin(play.level, "")
    for letter in play.moves[:501]:
        replayed = replayed.moved(DIRS[letter])
    kept = room.read("puzzle.history", ops.HistoryArgs(501))
    assert (kept.board, kept.moves) == (rules.room_view(room.state, replayed).board,
                                        play.moves[:501])


def test_a_replayed_stream_gives_an_identical_state() -> None:
    room = Room()
    room.move("rrdl")
    room.write("puzzle.undo", ops.StepArgs())
    room.write("puzzle.reset", ops.StepArgs())
    room.move(bundled("starter").levels[0].solution or "")
    room.write("puzzle.next", ops.StepArgs())
    room.move("dd")
    stored = [json.loads(json.dumps(WORLD.codec.encode(e, room.state))) for e in room.events]
    replayed = WORLD.initial("puzzle:test")
    for data in stored:
        replayed = WORLD.evolve(replayed, WORLD.codec.decode(data))
    assert replayed == room.state
    assert rules.room_view(replayed) == rules.room_view(room.state)
    assert WORLD.codec.decode(stored[0]) == room.events[0]


def test_a_snapshot_restores_the_room_inert_and_play_goes_on_the_same() -> None:
    room = Room(level="plates")
    room.move("drrrr")
    assert WORLD.snapshot is not None
    data = json.loads(json.dumps(WORLD.snapshot.dump(room.state)))
    back = WORLD.snapshot.load(data)
    assert back == room.state
    twin = Room(level="plates")
    twin.state = back
    assert twin.move("dd").room == room.move("dd").room
    assert WORLD.snapshot.load(WORLD.snapshot.dump(WORLD.initial("x"))) == WORLD.initial("x")


def test_a_win_event_is_stored_with_what_a_leaderboard_fold_needs() -> None:
    room = Room()
    room.move("rrrrr")
    assert WORLD.codec.encode(room.events[-1], room.state) == {
        "type": "moved", "dir": "right", "won": True, "level_id": "first-steps",
        "moves": "rrrrr"}
    assert WORLD.codec.decode({"type": "moved", "dir": "up", "won": True}) == Moved("up")


# ------------------------------------------------------------------ create


def bad_create(**args: Any) -> Refusal:
    refused = WORLD.moves["puzzle.create"].decide(WORLD.initial("x"), ops.CreateArgs(**args),
                                                  Ctx(ANN, 0, 0))
    assert isinstance(refused, Refusal) and refused.code == ErrorCode.BAD_REQUEST
    return refused




def test_create_from_a_share_link_with_a_profile() -> None:
    level = make_level(["B=Y..", "b...f", "F=V.."])
    room = Room(link=link_of(level), profile="keke")
    assert (room.reply.pack, room.reply.profile, room.reply.levels) == ("mine", "keke", 1)
    assert room.move("rrrr").room.won
    created = room.events[0]
    assert isinstance(created, Created) and created.player == "ann"


def test_bad_creates_are_refused_with_the_diagnostic_path() -> None:
    assert bad_create(pack="nope").detail == {"path": "args.pack", "bundled": ["starter"]}
    assert bad_create(level="nope").detail["levels"][:2] == ["first-steps", "walls"]
    link = bad_create(link="pd1.%%%")
    assert link.detail == {"path": "args.link", "share": "bad_base64"}
    malformed = make_level(["B=Y..", "b...f"])
    malformed["objects"][0]["noun"] = "frog"
    refused = bad_create(link=link_of(malformed))
    assert refused.detail["share"] == "invalid_content"
    assert refused.detail["diagnostics"] == [
        {"path": "levels[0].objects[0].noun", "message": 'unknown noun "frog"'}]
    huge = make_level(["b"])
    huge.update(width=65)
    assert bad_create(link=link_of(huge)).detail["diagnostics"] == [
        {"path": "levels[0].width", "message": "must be an integer from 1 to 64"}]


def test_a_level_over_the_room_limit_is_refused_and_nothing_is_made() -> None:
    crowded = make_level(["b" + "." * 63, "." * 64])
    crowded["objects"] += [{"id": f"r{i}", "noun": "rock", "x": i % 64, "y": 1}
                           for i in range(ROOM_MAX_THINGS)]
    refused = bad_create(link=link_of(crowded))
    assert refused.detail["diagnostics"] == [
        {"path": "levels[0].objects",
         "message": f"holds {ROOM_MAX_THINGS + 1} things (objects and text); a room plays at "
                    f"most {ROOM_MAX_THINGS}"}]


def test_a_level_whose_start_reads_too_many_rules_is_never_played() -> None:
    """Its start would raise in the fold: create, select and next refuse it in decide."""
    over = "the start reads 576 rule sentences; the engine plays at most 512"
    many = many_rules_level()
    refused = bad_create(link=link_of(many))
    assert refused == Refusal(
        ErrorCode.BAD_REQUEST, f"level 'many' cannot be played: levels[0].text: {over}",
        {"path": "args.link", "diagnostics": [{"path": "levels[0].text", "message": over}]})
    easy = make_level(["B=Y..", "b...f", "F=V.."])
    room = Room(link=link_of(easy, levels=[easy, many]))
    assert room.write("puzzle.select", ops.SelectArgs("many")) == Refusal(
        ErrorCode.BAD_REQUEST, f"level 'many' cannot be played: text: {over}",
        {"path": "args.level", "diagnostics": [{"path": "text", "message": over}]})
    assert room.move("rrrr").room.won
    before = room.state
    assert room.write("puzzle.next", ops.StepArgs()) == Refusal(
        PuzzleCode.COMPLEXITY_BLOCKED, f"the next level, 'many', cannot be played: {over}",
        {"level": "many"})
    assert room.state is before


def test_a_room_is_created_once() -> None:
    room = Room()
    assert room.write("puzzle.create", ops.CreateArgs()).code == ErrorCode.ALREADY_EXISTS
    never = WORLD.initial("x")
    ctx = Ctx(ANN, 0, 0)
    assert WORLD.moves["puzzle.move"].decide(never, ops.MoveArgs("up", 0), ctx).code == (
        ErrorCode.UNKNOWN_ACTOR)
    assert WORLD.reads["puzzle.view"].answer(never, ops.ViewArgs(), ctx).code == (
        ErrorCode.UNKNOWN_ACTOR)
    assert WORLD.view(never) == {}


def test_the_move_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "MAX_MOVES", 2)
    room = Room()
    assert room.move("rrr").code == PuzzleCode.MOVE_LIMIT
    assert room.state.play.moves == "rr"


# ------------------------------------------------------------------ hint, leaderboard, table


def test_a_hint_from_the_current_board_wins_from_there() -> None:
    room = Room(level="plates")
    room.move("rr")
    play = room.state.play
    answer = hint(play, 5_000, lambda: 0.0, revision=room.state.rev)
    assert answer.status == "solved" and answer.next == DIRS[answer.moves[0]]
    assert answer.revision == 3
    assert room.move(answer.moves).room.won
    assert hint(room.state.play, 100, lambda: 0.0) == Refusal(
        PuzzleCode.GAME_OVER, "The level is already won; undo or reset to play on.")
    fresh = Room(level="spell").state.play
    assert hint(fresh, 100, itertools.count(0, 1000).__next__).status == "unknown"


def test_a_hint_says_unsolvable_when_nothing_reachable_wins() -> None:
    closed = Room(link=link_of(make_level(["B=Y.", "...b"]))).state.play
    answer = hint(closed, 1_000, lambda: 0.0)
    assert (answer.status, answer.moves, answer.next) == ("unsolvable", "", "")


def test_a_claim_counts_only_when_its_moves_replay_to_a_win() -> None:
    from actors.puzzle.leaderboard import Claim, Standings, level_key, record, verified

    level = bundled("starter").levels[0]
    key = level_key(level, "classic")

    def counted(board: Standings, claim: Claim) -> Standings:
        if not verified(claim, level, "classic"):
            return board
        return record(board, claim.user, claim.level, len(claim.moves))

    board = counted(Standings(), Claim("ann", key, "rrrr"))  # one short
    assert board == Standings()
    board = counted(board, Claim("ann", key, "rrrrrl"))  # won on move 5 of 6
    assert board == Standings()
    board = counted(board, Claim("ann", key, "drrrrru"))
    assert board.board(key) == [("ann", 7)]
    board = counted(board, Claim("bob", key, "rrrrr"))
    board = counted(board, Claim("ann", key, "rrrrr"))
    assert board.board(key) == [("ann", 5), ("bob", 5)] and board.counts() == {"ann": 1, "bob": 1}
    assert counted(board, Claim("cy", level_key(level, "keke"), "rrrrr")) == board


def test_the_table_answers_every_op_but_the_effects() -> None:
    answered = set(WORLD.moves) | set(WORLD.reads)
    assert WORLD.op_names() - answered == {"puzzle.hint", "puzzle.leaderboard"}
    assert answered <= WORLD.op_names() and WORLD.create in WORLD.moves


def test_every_args_field_is_bounded() -> None:
    from protocol.bounds import bounds_of

    for spec in ops.OPS:
        for field in attrs.fields(spec.args):
            assert bounds_of(field) is not None, (spec.name, field.name)


def test_the_link_in_a_created_event_is_canonical() -> None:
    pack = bundled("starter")
    room = Room()
    created = room.events[0]
    assert isinstance(created, Created) and created.link == make_link(pack)
    assert make_link(pack_of(pack.levels[0])) != created.link


def test_the_text_grid_marks_you_stacks_and_words() -> None:
    level = make_level(["B=Y.", "bf.r"], extra=[{"id": "tile9", "noun": "tile", "x": 1, "y": 1}])
    level["text"].append({"id": "t9", "word": "rock", "x": 3, "y": 1})
    view = Room(link=link_of(level)).reply
    assert view.board.grid.splitlines() == [
        "  0    1    2    3",
        "0 BABA IS   YOU  .",
        "1 baba*flag+.    ROCK+",
        "stacked: (1,1) flag tile; (3,1) ROCK rock"]


def test_select_goes_to_any_level_of_the_pack_from_its_start() -> None:
    room = Room()
    room.move("rr")
    reply = room.write("puzzle.select", ops.SelectArgs("plates"))
    assert (reply.room.level_id, reply.room.moves, reply.room.level) == ("plates", "", 18)
    assert room.write("puzzle.select", ops.SelectArgs("plates")).code == PuzzleCode.NO_CHANGE
    assert room.write("puzzle.select", ops.SelectArgs("nope")).detail["path"] == "args.level"
    back = room.write("puzzle.select", ops.SelectArgs("first-steps"))
    assert back.room.level == 0 and back.room.moves == ""
    stored = [WORLD.codec.encode(e, room.state) for e in room.events]
    assert {"type": "advanced", "level": 18} in stored
    replayed = WORLD.initial("puzzle:test")
    for data in stored:
        replayed = WORLD.evolve(replayed, WORLD.codec.decode(data))
    assert replayed == room.state
