"""The PostgreSQL store and the cluster's statements when the database goes away and comes
back: pooled connections the server closed are not used, a call whose pooled connection
breaks runs once more on a fresh one, an append that never left says so (`stored: no`),
an unreachable or silent database is `unavailable` within a bounded time.

The database "goes away" behind a proxy (tests/pgproxy.py) or by terminating the
store's own backends (what a restart of PostgreSQL does to them)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio

from actors.store import StoreUnavailable
from protocol.errors import ErrorCode
from server.storage.cluster import Cluster
from server.storage.pg_trio import TrioConnection
from server.storage.postgres import PostgresEventStore
from tests.pgproxy import PgProxy
from tests.pgsql import sql

pytestmark = pytest.mark.postgres


async def _terminate(dsn: str, pid: int) -> None:
    """Terminate backend `pid` (as a restart of PostgreSQL does) and wait until it is gone:
    its client's socket then holds the AdminShutdown and the end of the stream."""
    await sql(dsn, "SELECT pg_terminate_backend(%s)", pid)
    with trio.fail_after(10):
        while await sql(dsn, "SELECT 1 FROM pg_stat_activity WHERE pid = %s", pid):
            await trio.sleep(0.02)


@pytest.fixture
async def proxy(postgres_dsn: str, nursery: trio.Nursery) -> AsyncIterator[PgProxy]:
    yield await nursery.start(PgProxy(postgres_dsn).serve)


async def test_a_pooled_connection_the_server_closed_is_not_used(postgres_dsn: str) -> None:
    async with PostgresEventStore(postgres_dsn, readers=1) as store:
        await store.append("w:1", 0, [{"n": 1}])
        async with store.connection() as conn:
            pid = conn.info.backend_pid
        await _terminate(postgres_dsn, pid)
        assert await store.revision("w:1") == 1  # not AdminShutdown
        async with store.connection() as conn:
            assert conn.info.backend_pid != pid


async def test_a_read_whose_pooled_connection_breaks_runs_once_more_afresh(
        proxy: PgProxy) -> None:
    """The pooled connection looks fine but dies when used (its backend ends while the
    statement runs): the read runs again on a new connection; a fresh one that breaks
    is not retried."""
    async with PostgresEventStore(proxy.dsn, readers=1) as store:
        await store.append("w:1", 0, [{"n": 1}])
        pids: list[int] = []

        async def dies_once(conn: TrioConnection) -> int:
            pids.append(conn.info.backend_pid)
            if len(pids) == 1:
                await conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")
            cur = await conn.execute("SELECT rev FROM streams WHERE name = 'w:1'")
            row = await cur.fetchone()
            assert row is not None
            return row[0]

        assert await store.run(dies_once) == 1
        assert len(set(pids)) == 2

        async def always_dies(conn: TrioConnection) -> None:
            await conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")

        pids.clear()
        with pytest.raises(StoreUnavailable) as down:
            await store.run(always_dies)  # pooled, then fresh: twice, no more
        assert down.value.detail == {"store": "down", "stored": "no"}
        assert await store.revision("w:1") == 1


async def test_an_idle_writer_connection_the_server_closed_is_replaced_before_sending(
        postgres_dsn: str) -> None:
    async with PostgresEventStore(postgres_dsn) as store:
        await store.append("w:1", 0, [{"n": 1}])
        (pid,) = store._writer_pids
        await _terminate(postgres_dsn, pid)
        # Nothing was sent on the dead connection: the append lands, its outcome known.
        assert await store.append("w:1", 1, [{"n": 2}]) == 2
        assert store._writer_pids != {pid}
        assert [e.data["n"] for e in await store.read("w:1")] == [1, 2]


async def test_while_postgresql_is_down_calls_are_unavailable_and_appends_stored_no(
        proxy: PgProxy) -> None:
    async with PostgresEventStore(proxy.dsn) as store:
        await store.append("w:1", 0, [{"n": 1}])
        cluster = Cluster(store, "a", ttl=1.0, connections=1)
        try:
            assert await cluster.acquire("counter:x") == "a"
            proxy.cut()
            await proxy.all_closed()
            with pytest.raises(StoreUnavailable) as refused:
                await store.append("w:1", 1, [{"n": 2}])
            # the statement never reached the server: not "whether it was stored is unknown"
            assert refused.value.detail == {"store": "down", "stored": "no"}
            for call in (store.revision("w:1"), store.read("w:1"), store.claim("w:1"),
                         cluster.acquire("counter:x"), cluster.renew(["counter:x"]),
                         cluster.nodes()):
                with pytest.raises(StoreUnavailable) as down:
                    await call
                assert down.value.code == ErrorCode.UNAVAILABLE
                assert "PostgreSQL cannot be reached" in down.value.message
            proxy.restore()
            assert await store.append("w:1", 1, [{"n": 2}]) == 2  # as if nothing happened
            assert await cluster.renew(["counter:x"]) == {"counter:x"}
        finally:
            await cluster.aclose()


async def test_a_silent_database_fails_calls_in_bounded_time(proxy: PgProxy) -> None:
    """A partition: the connections stay open and nothing comes back. Reads, lease
    statements and new connections give up (a bounded wait, not TCP's many minutes)."""
    async with PostgresEventStore(proxy.dsn, query_timeout=0.5, write_timeout=0.5) as store:
        await store.append("w:1", 0, [{"n": 1}])
        cluster = Cluster(store, "a", ttl=1.0, connections=1)
        try:
            await cluster.acquire("counter:x")
            proxy.blackhole()
            with trio.fail_after(30):
                for call in (store.revision("w:1"), cluster.acquire("counter:x"),
                             cluster.renew(["counter:x"]), store.revision("w:1")):
                    with pytest.raises(StoreUnavailable):
                        await call
        finally:
            proxy.cut()
            await cluster.aclose()
