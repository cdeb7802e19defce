"""Packs over real sockets (the level editor's server side): check a level, solve it with the
solver's progress pushed to the pack's watchers, save it into a pack of one's own, share it,
play the installed pack in a room; and the board over every room, fed by several rooms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from actors.puzzle.catalog import bundled
from actors.puzzle.level import parse_level
from actors.puzzle.puzzleboard import rules as board
from actors.puzzle.puzzlepack import rules as packs
from actors.puzzle.share import open_link
from protocol.client import Client, RequestError
from protocol.ops import puzzle as ops
from server.auth import TokenStore
from tests.puzzle.boards import crowd_level, make_level, many_rules_level
from tests.puzzle.live import play
from tests.server.ws_harness import running_server

PACK = "puzzlepack:mine"
CROWD = crowd_level()


async def _solve_watched(agent: Client, watcher: Client, level: dict[str, Any],
                         budget_ms: int) -> tuple[dict[str, Any], list[Any]]:
    """Solve `level` while `watcher` follows the pack; the reply and every `solving` seen."""
    progress: list[Any] = []
    async with trio.open_nursery() as nursery, watcher.subscribe(PACK) as sub:

        async def collect() -> None:
            async for push in sub:
                if push.kind == "snapshot":
                    progress.append(push.data["solving"])

        nursery.start_soon(collect)
        reply = await agent.request("puzzlepack.solve", PACK, {"level": level,
                                                               "budget_ms": budget_ms})
        with trio.fail_after(10):
            while progress[-1:] != [None] or len(progress) < 2:
                await trio.sleep(0.02)
        nursery.cancel_scope.cancel()
    return reply, progress


async def test_the_editor_checks_solves_saves_and_shares_a_level(tmp_path: Path) -> None:
    tokens = TokenStore(tmp_path)
    ann, bob = tokens.create("agent", "ann"), tokens.create("agent", "bob")
    transform = {**bundled("starter").level("transform").to_json(), "id": "t",
                 "name": "Mine too"}
    transform.pop("solution")
    async with running_server(tmp_path) as srv, Client.connect(srv.ws_url, token=ann) as agent, \
            Client.connect(srv.ws_url, token=bob) as other, \
            Client.connect(srv.ws_url) as watcher:
        view = await agent.request("puzzlepack.create", PACK, {"name": "Mine"})
        assert (view["owner"], view["name"], view["levels"], view["link"]) == ("ann", "Mine",
                                                                               [], "")
        bad = {**transform, "objects": [{**transform["objects"][0], "x": 40}]}
        checked = await watcher.request("puzzlepack.check", PACK, {"level": bad})
        assert not checked["ok"] and checked["diagnostics"][0]["path"] == "objects[0].x"
        good = await watcher.request("puzzlepack.check", PACK, {"level": transform})
        assert good["ok"] and good["rules"] == ["baba is you", "flag is win", "wall is stop"]

        # 200 expansions: the node cap, whatever the machine's speed (its progress ticks
        # come every 0.25 s, so how many are seen is not asserted: tests/puzzle/test_hint.py).
        crowd, progress = await _solve_watched(agent, watcher, CROWD, 100)
        assert crowd["status"] == "unknown" and crowd["moves"] == ""
        running = [p for p in progress if p]
        assert running, progress  # the solve's start, pushed at once
        assert all((p["budget_ms"], p["max_expanded"]) == (100, 200) for p in running)
        assert progress[-1] is None and crowd["reason"] == "node cap 200 reached"
        assert max(p["expanded"] for p in running) <= crowd["expanded"] == 200

        solved, _ = await _solve_watched(agent, watcher, transform, 8000)
        assert solved["status"] == "solved"
        try:
            await other.request("puzzlepack.save", PACK, {"level": transform})
            raise AssertionError("bob saved into ann's pack")
        except RequestError as err:
            assert err.code == "forbidden"
        saved = await agent.request("puzzlepack.save", PACK, {
            "level": {**transform, "solution": solved["moves"]}, "expected_revision": 1})
        assert [lv["id"] for lv in saved["levels"]] == ["t"]
        assert saved["levels"][0]["solution"] == len(solved["moves"])
        extra = {**make_level(["B=Y..", "b...f", "F=V.."]), "id": "two"}
        saved = await agent.request("puzzlepack.save", PACK, {"level": extra})
        renamed = await agent.request("puzzlepack.save", PACK, {"level": {**extra,
                                                                         "name": "Two"}})
        assert [(lv["id"], lv["title"]) for lv in renamed["levels"]] == [("t", "Mine too"),
                                                                          ("two", "Two")]
        pack = open_link(renamed["link"])
        assert [lv.id for lv in pack.levels] == ["t", "two"] and pack.name == "Mine"

        one = await watcher.request("puzzlepack.level", PACK, {"level": "t"})
        assert parse_level(one["level"]) == pack.levels[0]
        shared = await agent.request("puzzle.create", "puzzle:shared", {"link": one["link"]})
        assert shared["levels"] == 1 and shared["level_id"] == "t"

        room = await other.request("puzzle.create", "puzzle:bob", {"installed": "mine"})
        assert (room["pack"], room["level_id"], room["player"]) == ("Mine", "t", "bob")
        won = await play(other, "puzzle:bob", solved["moves"], room["revision"])
        assert won["room"]["won"]
        removed = await agent.request("puzzlepack.remove", PACK, {"level": "two"})
        assert [lv["id"] for lv in removed["levels"]] == ["t"]
        try:
            await agent.request("puzzle.create", "puzzle:none", {"installed": "nothing"})
            raise AssertionError("a room from a pack that does not exist")
        except RequestError as err:
            assert err.code == "bad_request" and err.detail["path"] == "args.installed"


async def test_the_board_counts_every_rooms_best_verified_wins(tmp_path: Path) -> None:
    tokens = TokenStore(tmp_path)
    ann, bob = tokens.create("agent", "ann"), tokens.create("agent", "bob")
    async with running_server(tmp_path) as srv, Client.connect(srv.ws_url, token=ann) as a, \
            Client.connect(srv.ws_url, token=bob) as b:
        async def win(c: Client, room: str, moves: str, level: str = "first-steps") -> str:
            view = await c.request("puzzle.create", room, {"level": level})
            assert (await play(c, room, moves, view["revision"]))["room"]["won"]
            return view["key"]

        key = await win(a, "puzzle:a1", "drrrrru")  # 7 moves
        await win(b, "puzzle:b1", "rrrrr")
        await win(a, "puzzle:a2", "rrrrr")  # ann's best is now 5, in another room
        walls = bundled("starter").level("walls").solution or ""
        await win(b, "puzzle:b2", walls, "walls")
        with trio.fail_after(10):
            while True:
                rows = await a.request("puzzleboard.level", "puzzleboard:main", {"key": key})
                users = await a.request("puzzleboard.users", "puzzleboard:main", {})
                if rows["fewest"] == [{"user": "ann", "moves": 5}, {"user": "bob", "moves": 5}] \
                        and users["levels"] == 2:
                    break
                await trio.sleep(0.05)
        assert users["solved"] == [{"user": "bob", "levels": 2}, {"user": "ann", "levels": 1}]
        mine = await a.request("puzzle.leaderboard", "puzzle:a1", {})
        assert mine["fewest"] == rows["fewest"] and mine["key"] == key


def test_a_claim_counts_only_when_its_moves_replay_and_beat_the_users_best() -> None:
    level = bundled("starter").levels[0]
    from actors.puzzle.leaderboard import level_key

    key = level_key(level, "classic")

    def claim(user: str, moves: str, profile: str = "classic") -> board.WinClaim:
        return board.WinClaim(user, key, moves, level, profile, "starter")

    def decide(state: board.Leaders, won: board.WinClaim) -> list[board.Won]:
        return board.decide_claim(state, won, board.replays(won))

    state = board.Leaders()
    assert decide(state, claim("ann", "rrrr")) == []  # does not win
    assert decide(state, claim("ann", "rrrrrl")) == []  # wins before its end
    assert decide(state, claim("ann", "rrrrr", "keke")) == []  # another key
    for event in decide(state, claim("ann", "drrrrru")):
        state = board.evolve(state, event)
    assert state.standings.board(key) == [("ann", 7)]
    assert decide(state, claim("ann", "drrrrru")) == []  # not better
    (event,) = decide(state, claim("ann", "rrrrr"))
    state = board.evolve(state, event)
    assert state.standings.board(key) == [("ann", 5)]
    assert board.load(board.dump(state)) == state
    assert board.decode(board.encode(event, state)) == event


def test_the_editor_refuses_a_level_whose_start_reads_too_many_rules() -> None:
    from actors.world import Caller, Ctx, Refusal

    ctx = Ctx(Caller("ann", "agent"), 0, 0)
    shelf = packs.WORLD.initial(PACK)
    for event in packs.decide_create(shelf, ops.PackCreateArgs(name="mine"), ctx):
        shelf = packs.evolve(shelf, event)
    over = "the start reads 576 rule sentences; the engine plays at most 512"
    checked = packs.answer_check(shelf, ops.CheckArgs(many_rules_level()), ctx)
    assert checked == ops.CheckResult(False, [ops.Problem("text", over)], [])
    saved = packs.decide_save(shelf, ops.SaveArgs(many_rules_level()), ctx)
    assert isinstance(saved, Refusal) and saved.detail["diagnostics"] == [
        {"path": "text", "message": over}]
