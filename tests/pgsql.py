"""One SQL statement on a PostgreSQL of the tests' own, outside any store (to look at what a
store wrote, or to do to its connections what an outage would)."""

from __future__ import annotations

import trio

from server.storage.pg_trio import TrioConnection


async def sql(dsn: str, query: str, *params: object) -> list[tuple]:
    """The rows `query` gives (none for a statement), on a connection of its own."""
    conn = await TrioConnection.connect(dsn, autocommit=True)
    try:
        cur = await conn.execute(query, params or None)
        return await cur.fetchall() if cur.description else []
    finally:
        await conn.close()


async def wait_for_lock_waiters(dsn: str, n: int) -> None:
    """Poll until `n` backends wait for a lock (bounded: fails after 10 s)."""
    with trio.fail_after(10):
        while (await sql(dsn, "SELECT count(*) FROM pg_locks WHERE NOT granted"))[0][0] < n:
            await trio.sleep(0.01)
