"""Nodes that lose PostgreSQL: a node that cannot reach the database but is still reached
by its peers gives its worlds up (they re-home on a node that can, as when a node dies);
while the database is away, requests and subscribes are refused `unavailable` (retry),
never `internal`, and without a traceback per request, and `/healthz` says so (503); once
it is back, the first requests succeed and `/healthz` is ok again.

Node `a` reaches the database through a proxy (tests/pgproxy.py) that the test cuts."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable

import httpx
import pytest
import trio

from protocol.client import Client, RequestError
from protocol.ops.admin import ADMIN_ID
from server.cluster import mirrors
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


async def _health(url: str) -> tuple[int, dict]:
    async with httpx.AsyncClient() as http:
        r = await http.get(f"{url}/healthz")
    return r.status_code, r.json()


async def _store_up(url: str) -> str:
    async with httpx.AsyncClient() as http:
        metrics = (await http.get(f"{url}/metrics")).text
    return next(line for line in metrics.splitlines() if line.startswith("petridish_store_up "))


async def _health_until(url: str, done: Callable[[int, dict], bool]) -> dict:
    """The body of the first `/healthz` answer that is `done` (polled, within 20 s)."""
    with trio.fail_after(20):
        while not done(*(health := await _health(url))):
            await trio.sleep(0.1)  # (within the address's http_rate)
    return health[1]


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
            # (`reroute` is a signal between processes only)
            assert down.value.detail == {"actor": "counter:other", "store": "down"}
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


async def test_healthz_says_503_while_the_database_cannot_be_reached(
        nodes: Nodes, proxy: PgProxy, caplog: pytest.LogCaptureFixture) -> None:
    a = await nodes.start("a", dsn=proxy.dsn, lease_ttl=TTL)
    url = a.running.url
    async with Client.connect(a.ws_url) as ca:
        await ca.request("counter.create", WORLD)
    await wait_for(lambda: a.cluster.mirrors.notified > 0)  # listening (not while cut)
    status, body = await _health(url)
    assert status == 200 and body["ok"] is True and "trouble" not in body
    assert await _store_up(url) == "petridish_store_up 1"
    proxy.cut()
    await proxy.all_closed()
    down = await _health_until(url, lambda status, _: status == 503)
    assert down["ok"] is False
    failed = "renewing its leases failed: PostgreSQL cannot be reached: "
    assert down["trouble"].startswith((failed, "no lease renewal for ")), down
    fenced = await _health_until(url, lambda _, body: "no lease renewal for" in
                                 body.get("trouble", ""))
    assert "(the last failed: PostgreSQL cannot be reached: " in fenced["trouble"], fenced
    assert fenced["trouble"].endswith(": it hosts no world until the cluster's database "
                                      "answers"), fenced
    assert await _store_up(url) == "petridish_store_up 0"  # (still cut: still fenced)
    proxy.restore()
    back = await _health_until(url, lambda status, _: status == 200)
    assert back["ok"] is True and "trouble" not in back
    assert await _store_up(url) == "petridish_store_up 1"
    assert _tracebacks(caplog) == []


async def test_listening_again_through_an_outage_is_not_warned_about_every_time(
        nodes: Nodes, proxy: PgProxy, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mirrors, "RELISTEN", 0.02)
    monkeypatch.setattr(mirrors, "RELISTEN_LOG_EVERY", 600.0, raising=False)
    await nodes.start("a", dsn=proxy.dsn)
    proxy.cut()
    await proxy.all_closed()
    before = proxy.connections
    await wait_for(lambda: proxy.connections >= before + 20)  # most of them: listening
    lines = [r.getMessage() for r in caplog.records
             if r.getMessage().startswith("the store's notifications stopped")]
    assert len(lines) == 1, lines
    assert lines[0].endswith("; listening again every 0.02 s (1 time(s) since the last "
                             "report)"), lines


async def test_reads_for_followers_through_an_outage_log_a_line_not_a_traceback(
        nodes: Nodes, proxy: PgProxy, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The feed's reads (the holds' catch-up, a mirror's events) that find the store down
    log one line at most every DOWN_LOG_EVERY seconds for them all, without a traceback."""
    monkeypatch.setattr(mirrors, "DOWN_LOG_EVERY", 600.0, raising=False)
    a = await nodes.start("a", dsn=proxy.dsn)
    b = await nodes.start("b")
    async with Client.connect(b.ws_url) as cb, Client.connect(a.ws_url) as ca:
        await cb.request("counter.create", WORLD)
        async with ca.subscribe(WORLD):  # a mirror on a
            proxy.cut()
            await proxy.all_closed()
            feed = a.cluster.mirrors
            for _ in range(3):  # what a notification of both streams has it read
                await feed._feed({ADMIN_ID: -1, WORLD: -1})
    lines = [r.getMessage() for r in caplog.records if r.name == "petridish.cluster"
             and r.getMessage().startswith(("following ", "reading "))]
    assert len(lines) == 1, lines
    assert lines[0].startswith("following admin:main failed: PostgreSQL cannot be reached: ")
    assert lines[0].endswith("; read again once the store answers (0 more since the last "
                             "report)"), lines
    assert _tracebacks(caplog) == []
