"""Messages worlds send each other (not ops: no client can send one) cross the cluster: a
puzzle win in a room on one node reaches the board on another, a world's summary reaches
the lobby wherever it lives, and a message the router cannot carry is logged, not lost
without a word."""

from __future__ import annotations

import logging

import pytest
import trio

from actors.lobby.actor import Seen
from actors.puzzle.catalog import bundled
from actors.runtime.mailbox import Pending
from protocol.client import Client
from protocol.ops.lobby import LOBBY_ID
from server.hello import new_key
from tests.cluster.conftest import Nodes, wait_for
from tests.puzzle.live import play

pytestmark = pytest.mark.postgres
BOARD = "puzzleboard:main"


async def test_a_win_in_a_room_on_another_node_reaches_the_board(nodes: Nodes) -> None:
    a, b = await nodes.start("a"), await nodes.start("b")
    solution = bundled("starter").levels[0].solution or ""
    async with Client.connect(a.ws_url, key=new_key()) as ca, \
            Client.connect(b.ws_url, key=new_key()) as cb:
        await ca.request("puzzleboard.level", BOARD, {"key": "x@y"})  # the board lives on a
        await cb.request("puzzle.create", "puzzle:far", {})  # the room on b
        assert BOARD in a.directory.hosted() and "puzzle:far" in b.directory.hosted()
        won = await play(cb, "puzzle:far", solution, 1)
        assert won["room"]["won"]
        with trio.fail_after(20):
            while not (board := await cb.request("puzzle.leaderboard", "puzzle:far",
                                                 {"level": "first-steps"}))["fewest"]:
                await trio.sleep(0.1)
        assert board["fewest"][0]["moves"] == len(solution)
        assert BOARD not in b.directory.hosted(), "the claim went to the board where it lives"


async def test_a_claim_is_not_an_op_a_client_may_send(nodes: Nodes) -> None:
    a = await nodes.start("a")
    async with Client.connect(a.ws_url, key=new_key()) as ca:
        with pytest.raises(Exception, match="unknown_op"):
            await ca.request("puzzleboard.claim", BOARD, {"user": "x"})


async def test_a_summary_reaches_the_lobby_on_another_node(nodes: Nodes) -> None:
    a, b = await nodes.start("a"), await nodes.start("b")
    async with Client.connect(a.ws_url) as ca:
        await ca.request("lobby.list", LOBBY_ID, {})  # the lobby lives on a
    assert LOBBY_ID in a.directory.hosted()
    b.directory.ref(LOBBY_ID).tell(Seen("counter:elsewhere", {"state": "live", "agents": 2}))
    lobby = a.directory.alive(LOBBY_ID)
    await wait_for(lambda: "counter:elsewhere" in lobby._seen)
    assert lobby._seen["counter:elsewhere"] == {"state": "live", "agents": 2}
    assert LOBBY_ID not in b.directory.hosted()


class _Opaque:
    """A message only this process could handle: no wire form."""


async def test_a_message_that_cannot_be_forwarded_is_logged(
        nodes: Nodes, caplog: pytest.LogCaptureFixture) -> None:
    a, b = await nodes.start("a"), await nodes.start("b")
    async with Client.connect(a.ws_url) as ca:
        await ca.request("counter.create", "counter:here")
    caplog.set_level(logging.INFO)
    b.directory.ref("counter:here").tell(_Opaque())
    await wait_for(lambda: any("cannot be forwarded" in r.getMessage()
                               and r.levelno >= logging.WARNING for r in caplog.records))
    pending = Pending()
    b.directory.send("counter:here", _Opaque(), pending)
    with trio.fail_after(5):
        await pending.done.wait()
    assert pending.error is not None and pending.error.code == "internal"
