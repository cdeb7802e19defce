"""Nodes that lose PostgreSQL: a node that cannot reach the database but is still reached
by its peers gives its worlds up (they re-home on a node that can, as when a node dies);
while the database is away, requests and subscribes are refused `unavailable` (retry),
never `internal`, and without a traceback per request; once it is back, the first
requests succeed.

Node `a` reaches the database through a proxy (tests/pgproxy.py) that the test cuts."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
import trio

from protocol.client import Client, RequestError
from tests.cluster.conftest import Nodes, counter_add, wait_for
from tests.pgproxy import PgProxy

pytestmark = pytest.mark.postgres
WORLD = "counter:w"
TTL = 1.0


@pytest.fixture
async def proxy(nodes: Nodes, nursery: trio.Nursery) -> AsyncIterator[PgProxy]:
    made: PgProxy = await nursery.start(PgProxy(nodes.dsn).serve)
    yield made
    made.restore()  # the nodes leave while it still carries their connections
    for node in nodes.started:
        node.stop()
    with trio.move_on_after(15):
        for node in nodes.started:
            await node.ended.wait()


def _tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.ERROR or r.exc_info is not None]


async def test_a_node_that_loses_the_database_hands_its_worlds_over(
        nodes: Nodes, proxy: PgProxy, caplog: pytest.LogCaptureFixture) -> None:
    a = await nodes.start("a", dsn=proxy.dsn, lease_ttl=TTL)
    b = await nodes.start("b", lease_ttl=TTL)
    async with Client.connect(a.ws_url) as ca, Client.connect(b.ws_url) as cb:
        await ca.request("counter.create", WORLD)
        assert (await cb.request("counter.add", WORLD, counter_add(1)))["revision"] == 2
        assert WORLD in a.directory.hosted()  # and b forwards to a over a live link
        proxy.cut()
        await proxy.all_closed()
        refusals: list[tuple[str, str]] = []
        reply = None
        with trio.fail_after(30):  # the re-home takes about a TTL; no speed is asserted
            while reply is None:
                try:
                    reply = await cb.request("counter.add", WORLD, counter_add(2),
                                             request_id="after-cut", retry=False)
                except RequestError as refused:
                    refusals.append((refused.code, refused.message))
                    await trio.sleep(0.1)
        assert reply["revision"] == 3
        assert WORLD in b.directory.hosted() and WORLD not in a.directory.hosted()
        assert {code for code, _ in refusals} <= {"unavailable"}, refusals
        assert b.cluster.router.rehomes >= 1  # a sent it back: b waited for the lease
        # a, without the database, hosts nothing and says so: unavailable, retry
        for op in ("counter.get", "counter.add"):
            with pytest.raises(RequestError) as down:
                await ca.request(op, "counter:other", counter_add(1) if op != "counter.get"
                                 else None, retry=False)
            assert down.value.code == "unavailable"
            assert "cannot reach the cluster's database" in down.value.message
        with pytest.raises(RequestError) as down:
            async with ca.subscribe("counter:other"):
                pass
        assert down.value.code == "unavailable"
        assert _tracebacks(caplog) == []


async def test_requests_succeed_again_once_the_database_is_back(
        nodes: Nodes, proxy: PgProxy, caplog: pytest.LogCaptureFixture) -> None:
    a = await nodes.start("a", dsn=proxy.dsn, lease_ttl=TTL)
    async with Client.connect(a.ws_url) as ca:
        await ca.request("counter.create", WORLD)
        proxy.cut()
        await proxy.all_closed()
        with pytest.raises(RequestError) as down:
            await ca.request("counter.add", WORLD, counter_add(1), request_id="d1",
                             retry=False)
        assert down.value.code == "unavailable"
        assert down.value.detail.get("stored") in (None, "no"), down.value.detail
        await wait_for(lambda: not a.directory.hosted())  # self-fenced
        proxy.restore()
        # the first request after: its pooled connections died with the cut
        reply = await ca.request("counter.add", WORLD, counter_add(1), request_id="d2",
                                 retry=False)
        assert reply["revision"] == 2
        assert await ca.request("counter.get", WORLD, retry=False) == \
            {"total": 1, "adds": 1, "revision": 2}
    assert _tracebacks(caplog) == []
