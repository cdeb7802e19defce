"""psycopg driven by trio (server/storage/pg_trio.py): the contract to re-check whenever
psycopg is upgraded, since the driver leans on two of its private names."""

from __future__ import annotations

import contextlib
import os
import socket

import psycopg
import pytest
import trio

from server.storage.pg_local import LocalPostgres
from server.storage.pg_trio import TrioConnection

pytestmark = pytest.mark.postgres


async def test_queries_and_transactions(postgres_server: LocalPostgres) -> None:
    conn = await TrioConnection.connect(postgres_server.dsn())
    try:
        cur = await conn.execute("SELECT %s::int + 1, %s::text", (41, "é"))
        assert await cur.fetchone() == (42, "é")
        await conn.execute("CREATE TEMP TABLE t (x int)")
        await conn.execute("INSERT INTO t VALUES (1)")
        await conn.rollback()  # not autocommit: the table went with the transaction
        with pytest.raises(psycopg.errors.UndefinedTable):
            await conn.execute("SELECT * FROM t")
    finally:
        await conn.close()


async def test_tasks_sharing_one_connection_take_turns(postgres_server: LocalPostgres) -> None:
    conn = await TrioConnection.connect(postgres_server.dsn(), autocommit=True)
    got: list[int] = []

    async def query(i: int) -> None:
        cur = await conn.execute("SELECT pg_sleep(0.02), %s::int", (i,))
        row = await cur.fetchone()
        assert row is not None
        got.append(row[1])

    async with trio.open_nursery() as nursery:
        for i in range(5):
            nursery.start_soon(query, i)
    assert sorted(got) == [0, 1, 2, 3, 4]
    await conn.close()


async def test_a_cancelled_query_closes_its_connection(postgres_server: LocalPostgres) -> None:
    conn = await TrioConnection.connect(postgres_server.dsn(), autocommit=True)
    with trio.move_on_after(0.1) as scope:
        await conn.execute("SELECT pg_sleep(10)")
    assert scope.cancelled_caught
    assert conn.closed
    again = await TrioConnection.connect(postgres_server.dsn(), autocommit=True)
    assert await (await again.execute("SELECT 1")).fetchone() == (1,)
    await again.close()


async def test_a_large_parameter_goes_out_and_back(postgres_server: LocalPostgres) -> None:
    conn = await TrioConnection.connect(postgres_server.dsn(), autocommit=True)
    big = "x" * 5_000_000
    cur = await conn.execute("SELECT length(%s::text), %s::text", (big, big))
    assert await cur.fetchone() == (5_000_000, big)
    await conn.close()


async def test_listen_notify(postgres_server: LocalPostgres) -> None:
    listener = await TrioConnection.connect(postgres_server.dsn(), autocommit=True)
    sender = await TrioConnection.connect(postgres_server.dsn(), autocommit=True)
    await listener.execute("LISTEN ch")
    await sender.execute("SELECT pg_notify('ch', 'a'), pg_notify('ch', 'b')")
    payloads = []
    with trio.fail_after(10):
        async with contextlib.aclosing(listener.notifies()) as notes:
            async for note in notes:
                payloads.append(note.payload)
                if len(payloads) == 2:
                    break
    assert payloads == ["a", "b"]
    await listener.close()
    await sender.close()


async def test_host_names_are_resolved(postgres_server: LocalPostgres) -> None:
    conn = await TrioConnection.connect(postgres_server.dsn(host="localhost"))
    assert conn.info.host in ("localhost", "127.0.0.1", "::1")
    await conn.close()


async def test_a_refused_connection_raises(postgres_server: LocalPostgres) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(psycopg.OperationalError):
        await TrioConnection.connect(f"host=127.0.0.1 port={port} user=postgres")


async def test_connections_have_keepalives_unless_the_dsn_sets_them(
        postgres_server: LocalPostgres) -> None:
    conn = await TrioConnection.connect(postgres_server.dsn())
    assert conn.info.get_parameters()["keepalives_idle"] == "10"
    await conn.close()
    conn = await TrioConnection.connect(postgres_server.dsn(keepalives_idle="30"))
    assert conn.info.get_parameters()["keepalives_idle"] == "30"
    await conn.close()


async def test_works_with_descriptors_past_1024(postgres_server: LocalPostgres) -> None:
    """A busy server has many sockets: the readiness check must not use select()."""
    pipes = [os.pipe() for _ in range(520)]
    try:
        conn = await TrioConnection.connect(postgres_server.dsn(), autocommit=True)
        assert conn.pgconn.socket > 1024
        cur = await conn.execute("SELECT %s::text", ("y" * 1_000_000,))
        assert await cur.fetchone() == ("y" * 1_000_000,)
        await conn.close()
    finally:
        for r, w in pipes:
            os.close(r)
            os.close(w)
