"""The puzzle room over real sockets: an agent plays the starter pack's first level to a win,
undoes, resets, asks a hint, wins again from it and goes on to level 2, while a spectator
watching the room receives every turn; stale writes, other players' writes and spectators'
writes are refused and change nothing; the board over every room counts the win."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from actors.puzzle.catalog import bundled
from protocol.client import Client, RequestError
from server.auth import TokenStore
from tests.puzzle.live import DIRS, play
from tests.server.ws_harness import running_server

ROOM = "puzzle:e2e"




async def refused(c: Client, op: str, to: str, args: dict[str, Any]) -> RequestError:
    with pytest.raises(RequestError) as caught:
        await c.request(op, to, args)
    return caught.value


async def test_a_room_played_end_to_end_over_sockets(tmp_path: Path) -> None:
    tokens = TokenStore(tmp_path)
    ann, bob = tokens.create("agent", "ann"), tokens.create("agent", "bob")
    solution = bundled("starter").levels[0].solution or ""
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, token=ann) as agent, \
            Client.connect(srv.ws_url, token=bob) as other, \
            Client.connect(srv.ws_url) as watcher:
        assert watcher.role == "spectator"
        view = await agent.request("puzzle.create", ROOM, {"pack": "starter"})
        assert (view["player"], view["level_id"], view["revision"]) == ("ann", "first-steps", 1)
        seen: list[dict[str, Any]] = []
        async with trio.open_nursery() as nursery, watcher.subscribe(ROOM) as sub:
            assert sub.result["rev"] == 1

            async def collect() -> None:
                async for push in sub:
                    if push.kind == "events":
                        seen.extend(push.data)

            nursery.start_soon(collect)
            won = await play(agent, ROOM, solution, 1)
            assert won["room"]["won"] and won["turn"]["won"]
            rev = won["room"]["revision"]
            assert rev == 1 + len(solution)

            # Refusals change nothing: stale, another player, a spectator, a won level.
            stale = await refused(agent, "puzzle.move", ROOM, {"dir": "up",
                                                               "expected_revision": 2})
            assert (stale.code, stale.detail) == ("stale_revision", {"revision": rev})
            theirs = await refused(other, "puzzle.undo", ROOM, {})
            assert (theirs.code, theirs.detail) == ("forbidden", {"player": "ann"})
            spectator = await refused(watcher, "puzzle.move", ROOM, {"dir": "up",
                                                                     "expected_revision": rev})
            assert spectator.code == "forbidden"
            assert (await refused(agent, "puzzle.move", ROOM, {
                "dir": "up", "expected_revision": rev})).code == "game_over"
            assert (await agent.request("puzzle.view", ROOM))["revision"] == rev

            undone = await agent.request("puzzle.undo", ROOM, {"expected_revision": rev})
            assert undone["room"]["moves"] == solution[:-1] and not undone["room"]["won"]
            reset = await agent.request("puzzle.reset", ROOM, {})
            assert reset["room"]["moves"] == "" and reset["turn"] == {"cause": "reset",
                                                                      "turn": 0}
            hint = await agent.request("puzzle.hint", ROOM, {"budget_ms": 8000})
            assert hint["status"] == "solved" and hint["revision"] == rev + 2
            assert hint["next"] == DIRS[hint["moves"][0]]
            again = await play(agent, ROOM, hint["moves"], rev + 2)
            assert again["room"]["won"]
            nxt = await agent.request("puzzle.next", ROOM, {})
            assert (nxt["room"]["level"], nxt["room"]["level_id"]) == (1, "walls")
            last = nxt["room"]["revision"]
            with trio.fail_after(10):
                while len(seen) < last - 1:
                    await trio.sleep(0.02)
            nursery.cancel_scope.cancel()
        expected = ([{"type": "moved", "dir": DIRS[x]} for x in solution[:-1]]
                    + [{"type": "moved", "dir": DIRS[solution[-1]], "won": True,
                        "level_id": "first-steps", "moves": solution}]
                    + [{"type": "undone"}, {"type": "reset"}]
                    + [{"type": "moved", "dir": DIRS[x]} for x in hint["moves"][:-1]]
                    + [{"type": "moved", "dir": DIRS[hint["moves"][-1]], "won": True,
                        "level_id": "first-steps", "moves": hint["moves"]},
                       {"type": "advanced"}])
        assert seen == expected, "the watcher received every turn, in order"

        # The board over every room counted the first win (verified by replay).
        with trio.fail_after(10):
            while True:
                board = await watcher.request("puzzle.leaderboard", ROOM,
                                              {"level": "first-steps"})
                if board["fewest"]:
                    break
                await trio.sleep(0.05)
        assert board["fewest"] == [{"user": "ann", "moves": len(solution)}]
        assert board["solved"] == [{"user": "ann", "levels": 1}]
        direct = await watcher.request("puzzleboard.level", "puzzleboard:main",
                                       {"key": board["key"]})
        assert direct["fewest"] == board["fewest"] and direct["level_id"] == "first-steps"
