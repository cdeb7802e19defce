"""Ownership of worlds between server processes: leases and the node registry in PostgreSQL.

Each world lives on one process at a time. A process (a *node*) holds a world by a lease
that expires `ttl` seconds after it was last taken or renewed, judged by the database's
clock alone (`now()`), so the nodes' clocks never matter. The protocol (SCALEOUT.md 4.4),
which the server follows:

1. activate world w: `acquire(w)` == me -> `store.claim(w)` -> replay -> serve;
2. every second: `renew(worlds held)`; a world missing from its answer is lost: stop it
   at once; if no renewal succeeded for 0.8 x ttl (local monotonic clock), stop them all;
3. deactivate: stop taking commands, drain, `release(w)`;
4. a request for a world held elsewhere goes to `holder(w).addr`.

A lease may be wrong for a moment (a paused process still believes it holds one): the
store's fence (`claim`) refuses that process's late appends, so no acknowledged write
is ever lost or doubled by it.

`nodes` keeps each process's internal address (for forwarding) and its heartbeat, which
`renew` refreshes in the same statement. `secret` is the cluster's shared secret (one
random value kept in the database), which the processes present to each other when
they connect: whoever may reach the database is in the cluster, nobody else.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Collection
from typing import Any, TypeVar

import attrs

from server.storage.pg_trio import TrioConnection
from server.storage.postgres import PostgresEventStore, _Pool, rows_of

T = TypeVar("T")
ACQUIRE_TRIES = 3  # the upsert-then-select can miss a row inserted concurrently: retry

ACQUIRE = """
WITH up AS (INSERT INTO leases AS l (world, node, expires_at)
            VALUES (%(w)s, %(me)s, now() + %(ttl)s * interval '1 millisecond')
            ON CONFLICT (world) DO UPDATE SET node = excluded.node,
                                              expires_at = excluded.expires_at
              WHERE l.expires_at < now() OR l.node = excluded.node
            RETURNING node)
SELECT node FROM up
UNION ALL SELECT node FROM leases WHERE world = %(w)s AND NOT EXISTS (SELECT 1 FROM up)
"""
RENEW = """
WITH beat AS (UPDATE nodes SET seen_at = now() WHERE node = %(me)s)
UPDATE leases SET expires_at = now() + %(ttl)s * interval '1 millisecond'
WHERE node = %(me)s AND world = ANY(%(worlds)s) AND expires_at > now() RETURNING world
"""
HOLDER = """
SELECT l.node, n.addr, extract(epoch FROM l.expires_at - now()) FROM leases l
LEFT JOIN nodes n ON n.node = l.node WHERE l.world = %s AND l.expires_at > now()
"""
JOIN = """
INSERT INTO nodes (node, addr, seen_at) VALUES (%s, %s, now())
ON CONFLICT (node) DO UPDATE SET addr = excluded.addr, seen_at = excluded.seen_at
"""
SECRET = """
WITH made AS (INSERT INTO cluster (key, value) VALUES ('peer_secret', %s)
              ON CONFLICT (key) DO NOTHING RETURNING value)
SELECT value FROM made UNION ALL SELECT value FROM cluster WHERE key = 'peer_secret'
"""
LEAVE = """
WITH gone AS (DELETE FROM leases WHERE node = %(me)s)
DELETE FROM nodes WHERE node = %(me)s
"""


@attrs.frozen
class Holder:
    """Who holds a world's live lease: the node, its internal address (None if it never
    joined), and the seconds left on the lease."""

    node: str
    addr: str | None
    expires_in: float


@attrs.frozen
class Node:
    """A registered process: its internal address and seconds since its last heartbeat."""

    addr: str
    seen_ago: float


class Cluster:
    """The leases and the registry entry of one node, on a PostgresEventStore's pool, or
    on `connections` connections of its own plus one more that only renews (so a
    renewal never waits behind the store's reads nor behind a burst of acquires;
    `aclose` closes them).

    `ttl` (seconds, about 3 in production) is the life of a lease from its last
    acquire or renew; on connections of its own, a statement not answered within it
    (or one that cannot be sent: PostgreSQL is unreachable) raises StoreUnavailable.
    Every statement may run twice (once more after a lost connection): each is safe to.
    """

    def __init__(self, store: PostgresEventStore, node: str, *, ttl: float = 3.0,
                 connections: int = 0) -> None:
        self.store, self.node, self.ttl = store, node, ttl
        timeout = max(ttl, 1.0)
        self._pool = _Pool(store.dsn, connections, timeout) if connections else None
        self._renewer = _Pool(store.dsn, 1, timeout) if connections else None

    async def _run(self, work: Callable[[TrioConnection], Awaitable[T]], *,
                   renewal: bool = False) -> T:
        pool = self._renewer if renewal else self._pool
        return await (pool.run(work) if pool is not None else self.store.run(work))

    async def _rows(self, query: str, params: Any, *, renewal: bool = False) -> list[Any]:
        return await self._run(rows_of(query, params), renewal=renewal)

    async def aclose(self) -> None:
        """Close the connections of its own, if any."""
        for pool in (self._pool, self._renewer):
            if pool is not None and not pool.closed:
                await pool.aclose()

    async def secret(self) -> str:
        """The cluster's shared secret (made by the first node that asks)."""
        for _ in range(ACQUIRE_TRIES):  # the same race as acquire's
            rows = await self._rows(SECRET, (secrets.token_hex(32),))
            if rows:
                return rows[0][0]
        raise RuntimeError("the cluster secret could not be read")

    @property
    def _ttl_ms(self) -> int:
        return round(self.ttl * 1000)

    async def join(self, addr: str) -> None:
        """Register (or update) this node's internal address; counts as a heartbeat."""
        await self._rows(JOIN, (self.node, addr))

    async def leave(self) -> None:
        """Release every lease of this node and remove it from the registry."""
        await self._rows(LEAVE, {"me": self.node})

    async def nodes(self) -> dict[str, Node]:
        """Every registered node (stale ones too: judge by `seen_ago`)."""
        rows = await self._rows("SELECT node, addr, extract(epoch FROM now() - seen_at) "
                                "FROM nodes ORDER BY node", None)
        return {node: Node(addr, float(age)) for node, addr, age in rows}

    async def acquire(self, world: str) -> str:
        """Take the world's lease if it is free or lapsed, or renew it if this node holds
        it; the node holding it afterwards (this one when it succeeded)."""
        for _ in range(ACQUIRE_TRIES):
            rows = await self._rows(ACQUIRE, {"w": world, "me": self.node,
                                              "ttl": self._ttl_ms})
            if rows:
                return rows[0][0]
        raise RuntimeError(f"the lease of {world!r} changed hands {ACQUIRE_TRIES} times "
                           "while acquiring it")

    async def renew(self, worlds: Collection[str]) -> set[str]:
        """Extend, in one statement, this node's live leases among `worlds` and its
        heartbeat; the worlds still held (any other is lost: stop it at once)."""
        rows = await self._rows(RENEW, {"me": self.node, "worlds": list(worlds),
                                        "ttl": self._ttl_ms}, renewal=True)
        return {world for (world,) in rows}

    async def release(self, world: str) -> bool:
        """Give the world's lease up (after its actor stopped); False if not held here."""
        async def work(conn: TrioConnection) -> bool:
            cur = await conn.execute("DELETE FROM leases WHERE world = %s AND node = %s",
                                     (world, self.node))
            return cur.rowcount == 1

        return await self._run(work)

    async def holder(self, world: str) -> Holder | None:
        """Who holds the world's live lease, with its address; None when no one does."""
        rows = await self._rows(HOLDER, (world,))
        return None if not rows else Holder(rows[0][0], rows[0][1], float(rows[0][2]))
