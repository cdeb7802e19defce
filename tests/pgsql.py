"""One SQL statement on a PostgreSQL of the tests' own, outside any store (to look at what a
store wrote, or to do to its connections what an outage would)."""

from __future__ import annotations

from server.storage.pg_trio import TrioConnection


async def sql(dsn: str, query: str, *params: object) -> list[tuple]:
    """The rows `query` gives (none for a statement), on a connection of its own."""
    conn = await TrioConnection.connect(dsn, autocommit=True)
    try:
        cur = await conn.execute(query, params or None)
        return await cur.fetchall() if cur.description else []
    finally:
        await conn.close()
