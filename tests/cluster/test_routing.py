"""Several nodes in this process sharing one PostgreSQL: a world lives on one node, any node
answers for it, spectators anywhere see every revision, a caller's retries with a request
id apply once (another caller's write with that id is its own), and a world whose host
crashes, loses its lease or is fenced answers again."""

from __future__ import annotations

import logging
import random
import socket
from typing import Any

import pytest
import trio

from actors.runtime import Call, RuntimeConfig
from actors.runtime.mailbox import Pending
from protocol.client import Client, Push, RequestError
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops.counter import AddArgs, GetArgs
from server.budgets import Budgets
from server.hello import new_key
from tests.cluster.conftest import Nodes, counter_add, wait_for
from tests.ecosystem.live import POND, SIZE
from tests.pgproxy import PgProxy
from tests.pgsql import sql

pytestmark = pytest.mark.postgres
WORLD = "counter:w"
RUN = "ecosystem:routed"


def _revs(pushes: list[Push]) -> list[int]:
    """The revision of every event the pushes carried, in order."""
    return [p.rev - len(p.data) + 1 + i for p in pushes if p.kind == "events"
            for i in range(len(p.data))]


async def test_any_node_answers_for_a_world_that_lives_on_one(nodes: Nodes) -> None:
    a, b, c = [await nodes.start(n) for n in "abc"]
    async with Client.connect(a.ws_url) as ca, Client.connect(b.ws_url) as cb, \
            Client.connect(c.ws_url) as cc:
        assert (await cb.request("counter.create", WORLD))["revision"] == 1
        replies = [await client.request("counter.add", WORLD, counter_add(k))
                   for k, client in enumerate([ca, cb, cc, cb, ca], start=1)]
        assert [r["revision"] for r in replies] == [2, 3, 4, 5, 6]
        for client in (ca, cb, cc):
            assert await client.request("counter.get", WORLD) == \
                {"total": 15, "adds": 5, "revision": 6}
    hosts = [n.cluster.name for n in (a, b, c) if WORLD in n.directory.hosted()]
    assert hosts == ["b"]  # where the create landed
    assert a.cluster.router.forwards >= 3 and c.cluster.router.forwards >= 2
    assert b.cluster.peers.received >= 5
    assert b.cluster.leases.held() == 1 and a.cluster.leases.held() == 0


async def test_spectators_on_every_node_see_every_revision_in_order(nodes: Nodes) -> None:
    a, b, c = [await nodes.start(n) for n in "abc"]
    async with Client.connect(a.ws_url) as ca, Client.connect(b.ws_url) as cb, \
            Client.connect(c.ws_url) as cc:
        clients = [ca, cb, cc]
        await ca.request("counter.create", WORLD)
        seen: dict[str, list[Push]] = {"b": [], "c": []}

        async def watch(client: Client, name: str, since: int | None,
                        task_status: trio.TaskStatus[None]) -> None:
            async with client.subscribe(WORLD, since=since) as sub:
                task_status.started()
                async for push in sub:
                    seen[name].append(push)

        async with trio.open_nursery() as watchers:
            await watchers.start(watch, cb, "b", None)  # a snapshot first
            await watchers.start(watch, cc, "c", 0)  # every event from the first
            rng = random.Random(7)
            for k in range(30):
                await rng.choice(clients).request("counter.add", WORLD, counter_add(k))
            await wait_for(lambda: all(p and p[-1].rev == 31 for p in seen.values()))
            watchers.cancel_scope.cancel()
    assert seen["b"][0].kind == "snapshot" and seen["b"][0].rev == 1
    assert _revs(seen["b"]) == list(range(2, 32))
    assert _revs(seen["c"]) == list(range(1, 32))
    amounts = [e["amount"] for p in seen["c"] for e in p.data if e["type"] == "added"]
    assert amounts == list(range(30))
    assert b.cluster.mirrors.reads <= 31 + 2  # one read per notification batch at most


async def test_a_spectator_resumes_on_another_node_with_since(nodes: Nodes) -> None:
    a, b, c = [await nodes.start(n) for n in "abc"]
    async with Client.connect(a.ws_url) as writer:
        await writer.request("counter.create", WORLD)
        for k in range(5):
            await writer.request("counter.add", WORLD, counter_add(k))
        async with Client.connect(b.ws_url) as first, first.subscribe(WORLD, since=2) as sub:
            with trio.fail_after(10):
                push = await anext(sub)
            assert (push.kind, push.rev, len(push.data)) == ("events", 6, 4)
        for k in range(5, 8):
            await writer.request("counter.add", WORLD, counter_add(k))
        async with Client.connect(c.ws_url) as again, again.subscribe(WORLD, since=6) as sub:
            with trio.fail_after(10):
                push = await anext(sub)
            assert (push.kind, push.rev) == ("events", 9)
            assert [e["amount"] for e in push.data] == [5, 6, 7]


async def test_a_resume_from_before_a_mirror_started_gets_the_events_it_missed(
        nodes: Nodes) -> None:
    runtime = RuntimeConfig(history_size=8)
    a, b = await nodes.start("a", runtime=runtime), await nodes.start("b", runtime=runtime)

    async def first_push(url: str, since: int) -> Push:
        async with Client.connect(url) as client, client.subscribe(WORLD, since=since) as sub:
            with trio.fail_after(10):
                return await anext(sub)

    async with Client.connect(a.ws_url) as writer, Client.connect(b.ws_url) as watcher:
        await writer.request("counter.create", WORLD)
        for k in range(5):
            await writer.request("counter.add", WORLD, counter_add(k))
        async with watcher.subscribe(WORLD) as live:  # b's mirror starts at a view of 6
            await writer.request("counter.add", WORLD, counter_add(5))
            with trio.fail_after(10):
                assert [(p.kind, p.rev) for p in (await anext(live), await anext(live))] \
                    == [("snapshot", 6), ("events", 7)]
            # Resumed from 3 through b: the events it missed, then the live ones.
            async with Client.connect(b.ws_url) as again, \
                    again.subscribe(WORLD, since=3) as sub:
                with trio.fail_after(10):
                    pushes = [await anext(sub)]
                for k in range(6, 8):
                    await writer.request("counter.add", WORLD, counter_add(k))
                with trio.fail_after(10):
                    while pushes[-1].rev < 9:
                        pushes.append(await anext(sub))
            assert (pushes[0].kind, pushes[0].rev, len(pushes[0].data)) == ("events", 7, 4)
            assert _revs(pushes) == list(range(4, 10))
            assert [e["amount"] for p in pushes for e in p.data] == [2, 3, 4, 5, 6, 7]
            reads = b.cluster.mirrors.reads
            assert (await first_push(b.ws_url, 3)).rev == 9
            assert b.cluster.mirrors.reads == reads + 1  # a subscribe's one: no reach back
            # As far back as the host's history (8 events), and not further, on both.
            for node in (a, b):
                reached = await first_push(node.ws_url, 1)
                assert (reached.kind, reached.rev, len(reached.data)) == ("events", 9, 8)
                assert (await first_push(node.ws_url, 0)).kind == "snapshot"


async def test_a_retried_write_is_applied_once_wherever_it_lands(nodes: Nodes) -> None:
    a, b, c = [await nodes.start(n) for n in "abc"]
    key = new_key()  # one anonymous caller on every node: a request id is its caller's
    async with Client.connect(a.ws_url, key=key) as ca, \
            Client.connect(b.ws_url, key=key) as cb, Client.connect(c.ws_url, key=key) as cc:
        await ca.request("counter.create", WORLD)
        first = await cb.request("counter.add", WORLD, counter_add(5), request_id="once-1")
        await ca.request("counter.add", WORLD, counter_add(1))
        for client in (ca, cb, cc):  # at the host, and forwarded to it
            assert await client.request("counter.add", WORLD, counter_add(5),
                                        request_id="once-1") == first
        a.stop()  # a graceful leave: the world re-homes on the next request
        await a.ended.wait()
        assert await cc.request("counter.add", WORLD, counter_add(5),
                                request_id="once-1") == first
        assert (await cb.request("counter.get", WORLD))["total"] == 6
        async with Client.connect(b.ws_url) as other:  # another caller, the same id
            assert await other.request("counter.add", WORLD, counter_add(5),
                                       request_id="once-1") == \
                {"total": 11, "adds": 3, "revision": 4}
    stored = await b.directory.store.read(WORLD)
    assert [e.data.get("amount") for e in stored] == [None, 5, 1, 5]
    assert [n.cluster.name for n in (b, c) if WORLD in n.directory.hosted()] == ["c"]


async def test_a_crashed_host_s_worlds_answer_again_once_its_lease_lapses(
        nodes: Nodes) -> None:
    ttl = 1.0
    a, b = await nodes.start("a", lease_ttl=ttl), await nodes.start("b", lease_ttl=ttl)
    async with Client.connect(b.ws_url) as cb:
        async with Client.connect(a.ws_url) as ca:
            await ca.request("counter.create", WORLD)
            for k in range(3):
                await cb.request("counter.add", WORLD, counter_add(k))
        a.crash()
        await a.ended.wait()
        crashed = trio.current_time()
        reply = await cb.request("counter.add", WORLD, counter_add(9), request_id="after")
        waited = trio.current_time() - crashed
        assert reply == {"total": 12, "adds": 4, "revision": 5}
    assert WORLD in b.directory.hosted()
    assert b.cluster.router.rehomes == 1
    # waited for the lease to lapse, not for the request's time (10 s); no bound on speed
    # is asserted, only that it did not give up and retry from the client
    assert waited < b.running.state.config.runtime.ask_timeout


async def test_a_sent_write_that_runs_out_of_time_waiting_for_its_host_is_of_unknown_outcome(
        nodes: Nodes, nursery: trio.Nursery) -> None:
    """The link to the world's host carries nothing more once a write was sent on it (a
    partition: both nodes alive, the host renews its lease). The write waits for the world
    to re-home until its time runs out, then is refused `unavailable` with `outcome:
    "unknown"`: the host may have applied it. Retried with its request id once the link
    carries again, it is applied once."""
    with socket.socket() as s:  # the host's peer port, behind a proxy the test can stop
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proxy = await nursery.start(PgProxy(f"host=127.0.0.1 port={port}").serve)
    a = await nodes.start("a", peer_port=port, peer_addr=f"127.0.0.1:{proxy.port}")
    b = await nodes.start("b", runtime=RuntimeConfig(ask_timeout=3.0))
    add = Call("counter.add", AddArgs(5), "agent", "ann", request_id="add-5")
    async with Client.connect(a.ws_url) as ca, Client.connect(b.ws_url) as cb:
        await ca.request("counter.create", WORLD)
        assert (await cb.request("counter.get", WORLD))["total"] == 0  # the link is up
        proxy.blackhole()
        with pytest.raises(ProtocolError) as refused:
            await b.directory.ask(WORLD, add, timeout=30)  # past b's ask timeout
        assert (refused.value.code, refused.value.detail) == (
            ErrorCode.UNAVAILABLE, {"actor": WORLD, "outcome": "unknown"})
        assert refused.value.message == (
            "the process hosting counter:w cannot be reached and its lease did not lapse "
            "in time; the write had been sent to it and may or may not have been applied "
            "(a write sent with a request_id can be retried safely)")
        proxy.restore()
        assert (await b.directory.ask(WORLD, add, timeout=30)).total == 5
        assert await cb.request("counter.get", WORLD) == {"total": 5, "adds": 1,
                                                          "revision": 2}
    assert WORLD in a.directory.hosted()


async def test_refused_creates_leave_no_claim_behind(nodes: Nodes) -> None:
    """A create refused on a fresh name claimed its stream first: once its actor ended,
    the process forgets the claim and the stream's empty row is deleted (an agent repeating
    refused creates, which cost no create budget, grew the store's memory of claims and
    the `streams` table without bound)."""
    a = await nodes.start("a")
    store = a.directory.store
    async with Client.connect(a.ws_url) as c:
        for k in range(20):
            with pytest.raises(RequestError) as refused:
                await c.request("puzzle.create", f"puzzle:nope-{k}", {"level": "nope"})
            assert refused.value.code == "bad_request"
        await c.request("counter.create", WORLD)
    with trio.fail_after(10):  # the claims are let go once each actor ended
        while [s for s in store._fences if s.startswith("puzzle:")] or await sql(
                nodes.dsn, "SELECT name FROM streams WHERE starts_with(name, 'puzzle:')"):
            await trio.sleep(0.02)
    assert WORLD in store._fences  # the live world's claim stays, and its row
    assert await sql(nodes.dsn, "SELECT name, rev FROM streams") == [(WORLD, 1)]


async def test_a_claim_that_cannot_be_let_go_still_gives_the_lease_back(nodes: Nodes) -> None:
    """The empty row of a refused create cannot be deleted (a statement error): it stays,
    and the world's lease is released all the same (not kept until it lapses)."""
    a = await nodes.start("a")
    await sql(nodes.dsn, "CREATE FUNCTION no_deletes() RETURNS trigger LANGUAGE plpgsql AS "
                         "$$ BEGIN RAISE EXCEPTION 'no deletes here'; END $$; "
                         "CREATE TRIGGER no_deletes BEFORE DELETE ON streams FOR EACH ROW "
                         "EXECUTE FUNCTION no_deletes()")
    async with Client.connect(a.ws_url) as c:
        with pytest.raises(RequestError):
            await c.request("puzzle.create", "puzzle:nope", {"level": "nope"})
    with trio.fail_after(10):  # released once its actor ended
        while await sql(nodes.dsn, "SELECT world FROM leases"):
            await trio.sleep(0.02)
    assert "puzzle:nope" not in a.directory.store._fences
    assert await sql(nodes.dsn, "SELECT name, rev FROM streams") == [("puzzle:nope", 0)]


async def test_a_lost_lease_stops_the_world_at_once_and_it_answers_from_the_new_holder(
        nodes: Nodes) -> None:
    a, b = await nodes.start("a"), await nodes.start("b")
    async with Client.connect(a.ws_url) as ca:
        await ca.request("counter.create", WORLD)
        await sql(nodes.dsn, "UPDATE leases SET node = 'b' WHERE world = %s", WORLD)
        await wait_for(lambda: WORLD not in a.directory.hosted())
        assert a.cluster.leases.lost == 1
        assert (await ca.request("counter.add", WORLD, counter_add(2)))["revision"] == 2
    assert WORLD in b.directory.hosted()


async def test_a_fenced_append_stops_the_zombie_and_the_write_lands_once(
        nodes: Nodes) -> None:
    a, b = await nodes.start("a"), await nodes.start("b")
    async with Client.connect(a.ws_url) as ca:
        await ca.request("counter.create", WORLD)
        await b.directory.store.claim(WORLD)  # another writer took the stream over
        reply = await ca.request("counter.add", WORLD, counter_add(4), request_id="z1")
        assert reply["revision"] == 2
    assert a.directory.store.statistics().fenced == 1
    assert [e.data.get("amount") for e in await a.directory.store.read(WORLD)] == [None, 4]


async def test_a_node_that_cannot_renew_stops_all_its_worlds(
        nodes: Nodes, monkeypatch: pytest.MonkeyPatch) -> None:
    a = await nodes.start("a", lease_ttl=1.0)
    async with Client.connect(a.ws_url) as ca:
        for name in ("x", "y"):
            await ca.request("counter.create", f"counter:{name}")
        assert sorted(a.directory.hosted()) == ["counter:x", "counter:y"]

        async def unreachable(worlds: Any) -> set[str]:
            raise OSError("the database is unreachable")

        monkeypatch.setattr(a.cluster.cluster, "renew", unreachable)
        await wait_for(lambda: not a.directory.hosted())
        assert a.cluster.leases.self_fenced == 2


async def test_a_node_restarted_under_its_name_is_reached_at_its_new_address(
        nodes: Nodes) -> None:
    ttl = 30.0  # no lapse within the test: the world is reached where its holder now is
    a, b = await nodes.start("a", lease_ttl=ttl), await nodes.start("b", lease_ttl=ttl)
    async with Client.connect(b.ws_url) as cb:
        await cb.request("counter.create", "counter:b-first")  # b learns a's address later
        async with Client.connect(a.ws_url) as ca:
            await ca.request("counter.create", WORLD)
        assert (await cb.request("counter.add", WORLD, counter_add(1)))["revision"] == 2
        old = a.cluster.addr
        a.crash()
        await a.ended.wait()
        again = await nodes.start("a", lease_ttl=ttl)
        assert again.cluster.addr != old
        assert (await cb.request("counter.add", WORLD, counter_add(1)))["revision"] == 3
    assert WORLD in again.directory.hosted()


async def test_a_full_node_gives_back_the_lease_of_a_world_it_cannot_host(
        nodes: Nodes) -> None:
    """`max_live_worlds` counts the worlds a node hosts: one it refuses (every live world
    followed) is left to the others at once, and a peer's worlds are reached as ever."""
    a = await nodes.start("a", budgets=Budgets(max_live_worlds=1))
    b = await nodes.start("b")
    async with Client.connect(a.ws_url) as ca, Client.connect(b.ws_url) as cb:
        await ca.request("counter.create", "counter:x")
        async with ca.subscribe("counter:x"):  # a's one live world, followed
            with pytest.raises(RequestError) as refused:
                await ca.request("counter.create", WORLD)
            assert (refused.value.code, refused.value.detail) == (
                "over_budget", {"budget": "max_live_worlds", "limit": 1})
            assert a.directory.hosted() == ["counter:x"] and a.cluster.leases.held() == 1
            assert (await cb.request("counter.create", WORLD))["revision"] == 1
            assert (await ca.request("counter.add", WORLD, counter_add(2)))["total"] == 2
    assert a.directory.hosted() == ["counter:x"] and b.directory.hosted() == [WORLD]


async def test_a_rule_patch_forwarded_to_its_run_s_node_is_taken(nodes: Nodes) -> None:
    """A RulePatch crosses to the run's node with its unset fields left out: they went as
    nulls, which that node refused as it refuses a client's."""
    a, b = [await nodes.start(n) for n in "ab"]
    key = new_key()  # the run's owner, on both nodes
    async with Client.connect(a.ws_url, key=key) as ca, Client.connect(b.ws_url, key=key) as cb:
        await cb.request("ecosystem.create", RUN, {"answers": POND, "seed": 3, "size": SIZE})
        patch = {"kind": "self", "species": "A", "value": "cooperative"}
        for change in (
                ("ecosystem.patch", {"patch": patch, "expected_graph_version": 1}),
                ("ecosystem.schedule", {"change": {
                    "generation": 5, "activation": "immediate", "duration": "short",
                    "transition": "abrupt", "patch": {**patch, "species": "B"}}})):
            assert "decision" in await ca.request(change[0], RUN, change[1])
    assert [n.cluster.name for n in (a, b) if RUN in n.directory.hosted()] == ["b"]
    assert a.cluster.router.forwards >= 2


async def test_a_node_shut_down_while_a_message_waits_for_a_re_home_refuses_it_cleanly(
        nodes: Nodes, caplog: pytest.LogCaptureFixture) -> None:
    """A message waits for a crashed host's world to re-home when its node shuts down: it
    is refused as the stopping directory refuses any message it cannot deliver any more,
    and nothing is logged as an error."""
    a, b = await nodes.start("a", lease_ttl=30.0), await nodes.start("b")
    async with Client.connect(a.ws_url) as ca:
        await ca.request("counter.create", WORLD)
    a.crash()
    await a.ended.wait()
    answer = Pending()
    b.directory.send(WORLD, Call("counter.get", GetArgs(), "spectator", "ann"), answer)
    await wait_for(lambda: WORLD in b.cluster.router._rehoming)  # (the lease holds 30 s)
    b.stop()
    await b.ended.wait()
    assert answer.done.is_set() and answer.error is not None
    assert (answer.error.code, answer.error.message, answer.error.detail) == (
        ErrorCode.UNAVAILABLE, f"{WORLD} was not delivered: the server is shutting down",
        {"actor": WORLD})
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
