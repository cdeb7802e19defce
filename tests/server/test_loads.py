"""Loading a stored world for a client, over real sockets: what it costs is charged to the
request or subscribe that named the world, one client's loads in flight are capped
(`loads_at_once`), so a burst of requests naming many stored worlds cannot make the
server read and fold them all before any of that time is charged, and the worlds live in
the process are capped (`max_live_worlds`), so naming them one after another cannot make
it hold them all."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from protocol.ops.admin import ADMIN_ID
from server.budgets import Budgets
from tests.server import burn_world
from tests.server.ws_harness import Raw, error, raw_client, result, running_server

ANONYMOUS = "address:127.0.0.1"
LOAD = 0.3  # seconds a slow world takes to load in the charge test
FULL = {"code": "over_budget", "message": "the server's live worlds are at their most (3), "
        "and each is followed or answering a request; retry once one is not (a world nobody "
        "follows is unloaded to make room)", "detail": {"budget": "max_live_worlds", "limit": 3}}


async def test_loading_a_world_is_charged_to_the_request_or_subscribe_that_named_it(
        tmp_path: Path) -> None:
    budgets = Budgets(cpu_rate=1e-6, cpu_burst_anonymous=10.0)
    loading = burn_world.Loading(LOAD)
    async with running_server(tmp_path, budgets=budgets,
                              **burn_world.slow_settings(loading)) as srv, \
            raw_client(srv) as c:
        account = srv.state.ledger.accounts[ANONYMOUS]

        def spent() -> float:
            return budgets.cpu_burst_anonymous - account.cpu.refill(trio.current_time())

        result(await c.call("slow.spin", "slow:a", ms=0))
        assert spent() >= LOAD
        await c.send({"id": 50, "op": "subscribe", "to": "slow:b"})
        assert result(await c.recv())["topic"] == "slow:b"
        assert spent() >= 2 * LOAD
        assert loading.started == 2


async def test_the_worlds_loading_for_one_client_at_once_are_capped(tmp_path: Path) -> None:
    loading = burn_world.Loading()
    loading.gate = trio.Event()
    async with running_server(tmp_path, budgets=Budgets(loads_at_once=2),
                              **burn_world.slow_settings(loading)) as srv, \
            raw_client(srv) as c, raw_client(srv, srv.owner_token) as owner:
        for rid, name in enumerate("ab", 1):
            await c.send({"id": rid, "op": "slow.spin", "to": f"slow:{name}",
                          "args": {"ms": 0}})
        refusal = {"code": "over_budget", "message": "more than 2 worlds not live are "
                   "being loaded for this client at once; retry when one is answered",
                   "detail": {"budget": "loads_at_once", "limit": 2}}
        await c.send({"id": 3, "op": "slow.spin", "to": "slow:c", "args": {"ms": 0}})
        assert await c.recv() == {"id": 3, "ok": False, "error": refusal}
        await c.send({"id": 4, "op": "subscribe", "to": "slow:d"})
        assert await c.recv() == {"id": 4, "ok": False, "error": refusal}
        await owner.send({"id": 1, "op": "slow.spin", "to": "slow:e", "args": {"ms": 0}})
        with trio.fail_after(5):
            while loading.started < 3:  # the owner has no such budget
                await trio.sleep(0.01)
        assert loading.started == 3  # c and d were not loaded
        loading.gate.set()
        assert {(await c.recv())["id"] for _ in range(2)} == {1, 2}
        result(await owner.recv())
        result(await c.call("slow.spin", "slow:a", ms=0))  # live now: not a load
        result(await c.call("slow.spin", "slow:c", ms=0))
        await c.send({"id": 9, "op": "subscribe", "to": "slow:d"})
        assert result(await c.recv())["topic"] == "slow:d"
        assert srv.state.ledger.accounts[ANONYMOUS].loading == 0


def _live(srv) -> list[str]:
    """The live worlds within the bound: all but the owner's console, a house world that
    is never unloaded to make room (and is live throughout)."""
    live = sorted(s.actor_id for s in srv.state.directory.live())
    assert ADMIN_ID in live
    return [i for i in live if i != ADMIN_ID]


async def _store(owner: Raw, srv, count: int) -> None:
    """Create counters w0..w{count-1}, w{i} holding i + 1 (each create may unload one)."""
    for i in range(count):
        result(await owner.call("counter.create", f"counter:w{i}"))
        result(await owner.call("counter.add", f"counter:w{i}", amount=i + 1))
        assert len(_live(srv)) <= 3


async def _follow(c: Raw, rid: int, world: str) -> dict:
    """Subscribe to `world`; its first push."""
    await c.send({"id": rid, "op": "subscribe", "to": world})
    assert result(await c.recv())["topic"] == world
    return await c.recv()


async def test_a_spectator_following_stored_worlds_one_after_another_keeps_the_server_at_its_bound(
        tmp_path: Path) -> None:
    async with running_server(tmp_path, budgets=Budgets(max_live_worlds=3)) as srv, \
            raw_client(srv, srv.owner_token) as owner, raw_client(srv) as c:
        await _store(owner, srv, 5)  # w0 and w1 unloaded to make room
        assert _live(srv) == ["counter:w2", "counter:w3", "counter:w4"]
        first = {}
        for i in range(5):
            first[i] = await _follow(c, 2 * i, f"counter:w{i}")
            assert first[i]["data"]["total"] == i + 1
            await c.send({"id": 2 * i + 1, "op": "unsubscribe", "to": f"counter:w{i}"})
            assert result(await c.recv()) == {"topic": f"counter:w{i}"}
            # The world used least lately went: the process holds the last three.
            expected = [f"counter:w{j % 5}" for j in range(i + 3, i + 6)]
            assert _live(srv) == sorted(expected)
        assert "counter:w0" not in _live(srv)
        assert await _follow(c, 20, "counter:w0") == first[0]  # loaded again, as it was
        assert _live(srv) == ["counter:w0", "counter:w3", "counter:w4"]
        assert srv.state.metrics.budget_hits.labels("max_live_worlds").value == 0


async def test_a_load_is_refused_when_every_live_world_is_in_use_and_changes_nothing(
        tmp_path: Path) -> None:
    async with running_server(tmp_path, budgets=Budgets(max_live_worlds=3)) as srv, \
            raw_client(srv, srv.owner_token) as owner, \
            raw_client(srv, srv.state.tokens.create("agent", "ann")) as c:
        await _store(owner, srv, 4)
        for i in (1, 2, 3):  # followed by a token holder: each in use
            await _follow(c, i, f"counter:w{i}")
        store = srv.state.directory.store
        await c.send({"id": 9, "op": "subscribe", "to": "counter:w0"})
        assert await c.recv() == {"id": 9, "ok": False, "error": FULL}
        assert error(await c.call("counter.get", "counter:w0")) == FULL
        assert error(await owner.call("counter.create", "counter:new")) == FULL  # creates too
        assert _live(srv) == ["counter:w1", "counter:w2", "counter:w3"]
        assert await store.revision("counter:w0") == 2
        assert await store.revision("counter:new") == 0  # not created
        assert srv.state.ledger.accounts["ann"].loading == 0
        assert srv.state.metrics.budget_hits.labels("max_live_worlds").value == 3
        assert [(h.budget, h.who) for h in srv.state.ledger.hits.values()] == [
            ("max_live_worlds", "counter:w0"), ("max_live_worlds", "counter:new")]
        await c.send({"id": 10, "op": "unsubscribe", "to": "counter:w1"})
        result(await c.recv())
        assert result(await c.call("counter.get", "counter:w0"))["total"] == 1
        assert _live(srv) == ["counter:w0", "counter:w2", "counter:w3"]


async def test_refusals_naming_world_after_world_log_one_line_an_interval(
        tmp_path: Path, caplog) -> None:
    """Each refused load is counted and kept for the console by the world it named, but
    the error log gets one line an interval, not one per world named."""
    async with running_server(tmp_path, budgets=Budgets(max_live_worlds=3)) as srv, \
            raw_client(srv, srv.owner_token) as owner:
        await _store(owner, srv, 3)
        for i in range(3):  # followed by the owner: each in use
            await _follow(owner, 10 + i, f"counter:w{i}")
        with caplog.at_level("WARNING", logger="petridish.trace"):
            for i in range(5):
                assert error(await owner.call("counter.create", f"counter:x{i}"))["detail"][
                    "budget"] == "max_live_worlds"
        assert srv.state.metrics.budget_hits.labels("max_live_worlds").value == 5
        assert {h.who for h in srv.state.ledger.hits.values()} == {
            f"counter:x{i}" for i in range(5)}
        lines = [r.getMessage() for r in caplog.records if "max_live_worlds" in r.getMessage()]
        assert len(lines) == 1 and lines[0].startswith("budget: counter:x0 hit"), lines


@asynccontextmanager
async def _anonymous(srv, address: str) -> AsyncIterator[Raw]:
    """An anonymous spectator connected from loopback address `address`."""
    stream = await trio.open_tcp_stream("127.0.0.1", srv.port, local_address=address)
    async with raw_client(srv, stream=stream) as c:
        yield c


async def test_anonymous_spectators_cannot_pin_every_live_world(tmp_path: Path) -> None:
    """Two anonymous addresses following every live world lock nobody out: a world only
    anonymous spectators follow is unloaded to make room (theirs who follow most first,
    told `resync` `actor_stopped`), for the owner and for a spectator following fewer; one
    following as many or more is refused rather than unload its peer's world."""
    async with running_server(tmp_path, budgets=Budgets(max_live_worlds=4)) as srv, \
            raw_client(srv, srv.owner_token) as owner, \
            _anonymous(srv, "127.0.0.2") as many, _anonymous(srv, "127.0.0.3") as few:
        for i in range(4):
            result(await owner.call("counter.create", f"counter:w{i}"))
            result(await owner.call("counter.add", f"counter:w{i}", amount=i + 1))
        for i in range(3):
            await _follow(many, i, f"counter:w{i}")
        await _follow(few, 1, "counter:w3")
        assert _live(srv) == [f"counter:w{i}" for i in range(4)]
        # The owner creates: the world used least lately of the heaviest follower goes.
        assert result(await owner.call("counter.create", "counter:new"))["revision"] == 1
        assert await many.recv() == {"topic": "counter:w0", "rev": 2, "kind": "resync",
                                     "data": {"reason": "actor_stopped"}}
        assert _live(srv) == ["counter:new", "counter:w1", "counter:w2", "counter:w3"]
        # It resubscribes (the owner's new world, followed by nobody, goes for it).
        await many.send({"id": 10, "op": "subscribe", "to": "counter:w0", "since": 2})
        assert result(await many.recv()) == {"topic": "counter:w0", "rev": 2}
        assert _live(srv) == ["counter:w0", "counter:w1", "counter:w2", "counter:w3"]
        # A spectator following fewer worlds is served: one of the heavy one's goes.
        assert (await _follow(few, 2, "counter:new"))["data"]["total"] == 0
        assert (await many.recv())["kind"] == "resync"
        assert _live(srv) == ["counter:new", "counter:w0", "counter:w2", "counter:w3"]
        # The heavy one, following as many as anyone, may not unload theirs in turn.
        await many.send({"id": 11, "op": "subscribe", "to": "counter:w1", "since": 2})
        assert await many.recv() == {"id": 11, "ok": False, "error": {**FULL, "message":
                                     FULL["message"].replace("(3)", "(4)"), "detail": {
                                         "budget": "max_live_worlds", "limit": 4}}}
        # Any world not live still loads for the owner.
        assert result(await owner.call("counter.get", "counter:w1"))["total"] == 2
        assert "counter:w1" in _live(srv) and len(_live(srv)) == 4
        assert srv.state.ledger.accounts["address:127.0.0.3"].footprint == 2
        assert srv.state.ledger.accounts["address:127.0.0.2"].footprint == 3
