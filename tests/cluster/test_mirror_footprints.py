"""A world followed from another node holds its host's `max_live_worlds` as firmly as its
followers there would hold it on the host itself: one followed only by anonymous
spectators (on any node) may be unloaded to make room, its spectators told `resync`
`actor_stopped`; one a token holder or the owner follows stays."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from protocol.envelope import PROTOCOL_VERSION
from server.budgets import Budgets
from server.cluster.wire import MAX_FOOTPRINT, Lines, encode
from tests.cluster.conftest import Nodes, wait_for
from tests.server.ws_harness import Raw, error, raw_client, result

pytestmark = pytest.mark.postgres
WORLD = "counter:x"
STOPPED = {"topic": WORLD, "rev": 2, "kind": "resync", "data": {"reason": "actor_stopped"}}
FULL = {"budget": "max_live_worlds", "limit": 1}


async def _follow(c: Raw, rid: int) -> None:
    """Subscribe to WORLD and take its reply and snapshot."""
    await c.send({"id": rid, "op": "subscribe", "to": WORLD})
    assert result(await c.recv()) == {"topic": WORLD, "rev": 2}
    assert (await c.recv())["kind"] == "snapshot"


def _held_by(node: Any) -> int | None:
    """How firmly WORLD's followers hold it live on `node` (`Actor.footprint`)."""
    return node.directory.alive(WORLD).footprint()


async def test_a_world_only_anonymous_spectators_on_another_node_follow_makes_room(
        nodes: Nodes) -> None:
    a = await nodes.start("a")
    b = await nodes.start("b", budgets=Budgets(max_live_worlds=1))
    async with raw_client(b.running) as cb, raw_client(a.running) as spectator:
        result(await cb.call("counter.create", WORLD))
        result(await cb.call("counter.add", WORLD, amount=2, note=""))
        await _follow(spectator, 1)  # on a: a mirror of b's world
        assert b.directory.hosted() == [WORLD] and a.directory.hosted() == []
        # b needs room: the world goes, as if a's spectator had been one of b's own.
        assert result(await cb.call("counter.create", "counter:y"))["revision"] == 1
        assert await spectator.recv() == STOPPED
        assert b.directory.hosted() == ["counter:y"]
        # It subscribes again, as it would there, and follows the world again.
        await spectator.send({"id": 2, "op": "subscribe", "to": WORLD, "since": 2})
        assert result(await spectator.recv()) == {"topic": WORLD, "rev": 2}
        result(await cb.call("counter.add", WORLD, amount=1, note=""))
        assert (await spectator.recv())["rev"] == 3


async def test_a_world_the_owner_follows_from_another_node_stays_until_they_leave(
        nodes: Nodes) -> None:
    a = await nodes.start("a")
    b = await nodes.start("b", budgets=Budgets(max_live_worlds=1))
    token = a.running.owner_token or b.running.owner_token  # (one data directory)
    async with raw_client(b.running) as cb, raw_client(a.running) as spectator, \
            raw_client(a.running, token) as owner:
        result(await cb.call("counter.create", WORLD))
        result(await cb.call("counter.add", WORLD, amount=2, note=""))
        await _follow(spectator, 1)
        await _follow(owner, 1)  # on the same mirror
        await wait_for(lambda: _held_by(b) is None)
        assert error(await cb.call("counter.create", "counter:y"))["detail"] == FULL
        await owner.send({"id": 2, "op": "unsubscribe", "to": WORLD})
        result(await owner.recv())
        await wait_for(lambda: _held_by(b) == 1, 20)  # a tells b (its sweep, every 5 s)
        assert result(await cb.call("counter.create", "counter:y"))["revision"] == 1
        assert await spectator.recv() == STOPPED


async def test_the_peer_port_takes_a_footprint_only_as_null_or_a_count_in_bounds(
        nodes: Nodes) -> None:
    a = await nodes.start("a")
    host, _, port = a.cluster.addr.rpartition(":")
    async with await trio.open_tcp_stream(host, int(port)) as stream:
        lines = Lines(stream)
        await stream.send_all(encode({"op": "hello", "protocol": PROTOCOL_VERSION, "id": 0,
                                      "token": a.cluster.peers.secret, "client": "peer:t"}))
        assert (await lines.next())["ok"]
        bad = [-1, MAX_FOOTPRINT + 1, 2.0, True, "3", [3]]
        for rid, footprint in enumerate(bad, start=1):
            await stream.send_all(encode({"id": rid, "op": "view", "to": WORLD, "hops": 1,
                                          "relay": True, "footprint": footprint}))
            assert await lines.next() == {"id": rid, "ok": False, "error": {
                "code": "bad_request", "message": "footprint: expected null or an integer "
                f"from 0 to {MAX_FOOTPRINT}", "detail": {"path": "footprint"}}}
        # An update of a relay that is not there changes nothing.
        await stream.send_all(encode({"id": 9, "op": "footprint", "to": WORLD,
                                      "footprint": 2}))
        assert await lines.next() == {"id": 9, "ok": True, "result": None}
        assert a.directory.hosted() == []  # (nothing was loaded for the refused views)
        # The bound is a footprint (the view goes on, to find no such world).
        await stream.send_all(encode({"id": 10, "op": "view", "to": "counter:none",
                                      "hops": 1, "footprint": MAX_FOOTPRINT}))
        assert (await lines.next())["error"]["code"] == "unknown_actor"
