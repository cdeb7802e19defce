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
`renew` refreshes in the same statement, and the random `instance` id of the process that
registered under the name: two processes never serve as one node. A start under a name
another live process holds is refused (`NodeNameInUse`); a lease statement that finds the
name registered by another process changes nothing and raises `Replaced` (this process
was silent for a while and another took the name over: it holds nothing now). `secret`
is the cluster's shared secret (one random value kept in the database), which the
processes present to each other when they connect: whoever may reach the database is in
the cluster, nobody else.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Collection
from typing import Any, TypeVar

import attrs
import trio

from actors.store import StoreUnavailable
from server.storage.pg_trio import TrioConnection
from server.storage.postgres import PostgresEventStore, _Pool, rows_of

T = TypeVar("T")
ACQUIRE_TRIES = 3  # the upsert-then-select can miss a row inserted concurrently: retry
# Seconds without a heartbeat after which a process registered under a name counts as
# gone: a start watches a younger row that long (every process, whatever its TTL, beats at
# least every second while its database answers: leases.py), and takes an older one at once.
JOIN_QUIET = 2.5

# Every lease statement acts only while no other process (`instance`) has registered under
# this node's name; else it answers a NULL node (see `Replaced`).
MINE = "NOT EXISTS (SELECT FROM nodes WHERE node = %(me)s AND instance <> %(instance)s)"
ACQUIRE = f"""
WITH up AS (INSERT INTO leases AS l (world, node, expires_at)
            SELECT %(w)s, %(me)s, now() + %(ttl)s * interval '1 millisecond' WHERE {MINE}
            ON CONFLICT (world) DO UPDATE SET node = excluded.node,
                                              expires_at = excluded.expires_at
              WHERE l.expires_at < now() OR l.node = excluded.node
            RETURNING node)
SELECT node FROM up
UNION ALL SELECT node FROM leases WHERE world = %(w)s AND NOT EXISTS (SELECT 1 FROM up)
                                        AND {MINE}
UNION ALL SELECT NULL WHERE NOT {MINE}
"""
# The heartbeat registers the node again if its row is gone (an older version's leave
# under the same name deleted it), never over another instance's row.
RENEW = """
WITH beat AS (INSERT INTO nodes AS n (node, addr, seen_at, instance)
              VALUES (%(me)s, %(addr)s, now(), %(instance)s)
              ON CONFLICT (node) DO UPDATE SET seen_at = excluded.seen_at
                WHERE n.instance = excluded.instance
              RETURNING node),
     kept AS (UPDATE leases SET expires_at = now() + %(ttl)s * interval '1 millisecond'
              WHERE node = %(me)s AND world = ANY(%(worlds)s) AND expires_at > now()
                AND EXISTS (SELECT FROM beat)
              RETURNING world)
SELECT world FROM kept UNION ALL SELECT NULL WHERE NOT EXISTS (SELECT FROM beat)
"""
HOLDER = """
SELECT l.node, n.addr, extract(epoch FROM l.expires_at - now()) FROM leases l
LEFT JOIN nodes n ON n.node = l.node WHERE l.world = %s AND l.expires_at > now()
"""
# Taken over from this process, or from one silent for JOIN_QUIET or since `quiet` (its
# heartbeat seen then did not advance: dead, paused or cut off; if it runs again, its next
# heartbeat finds the row another's). Not the starting process's TTL: the owner's beats
# follow its own. Else the owner's address, silence and heartbeat.
JOIN = """
WITH mine AS (INSERT INTO nodes AS n (node, addr, seen_at, instance)
              VALUES (%(me)s, %(addr)s, now(), %(instance)s)
              ON CONFLICT (node) DO UPDATE SET addr = excluded.addr, seen_at = excluded.seen_at,
                                               instance = excluded.instance
                WHERE n.instance = excluded.instance OR n.seen_at = %(quiet)s
                   OR n.seen_at < now() - %(gone)s * interval '1 millisecond'
              RETURNING node)
SELECT NULL, NULL, NULL FROM mine
UNION ALL SELECT addr, extract(epoch FROM now() - seen_at), seen_at FROM nodes
WHERE node = %(me)s AND NOT EXISTS (SELECT FROM mine)
"""
SECRET = """
WITH made AS (INSERT INTO cluster (key, value) VALUES ('peer_secret', %s)
              ON CONFLICT (key) DO NOTHING RETURNING value)
SELECT value FROM made UNION ALL SELECT value FROM cluster WHERE key = 'peer_secret'
"""
LEAVE = f"""
WITH gone AS (DELETE FROM leases WHERE node = %(me)s AND {MINE})
DELETE FROM nodes WHERE node = %(me)s AND instance = %(instance)s
"""
RELEASE = f"DELETE FROM leases WHERE world = %(w)s AND node = %(me)s AND {MINE}"


class NodeNameInUse(Exception):
    """Another live process is registered under this node's name: this one does not start."""


class Replaced(StoreUnavailable):
    """Another process registered under this node's name (this one was paused or cut off
    from the database for longer than a TTL): this process holds no lease any more."""

    def __init__(self, node: str) -> None:
        super().__init__(f"another process now serves as node {node!r}", sent=False)
        self.node = node


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
        self.instance = secrets.token_hex(8)  # this process, whatever its node's name
        self.addr = ""  # its internal address, once joined
        self._left = False  # once `leave` was called: renewals touch nothing
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

    def _me(self, **params: Any) -> dict[str, Any]:
        return {"me": self.node, "instance": self.instance, "ttl": self._ttl_ms} | params

    async def join(self, addr: str) -> None:
        """Register this process under its node's name at `addr` (counts as a heartbeat).
        A row of that name owned by another process is taken over if that process made
        no heartbeat for JOIN_QUIET seconds (watched for here unless its last is older: a
        restart after a crash); NodeNameInUse if it did (it is alive)."""
        quiet = None
        for _ in range(ACQUIRE_TRIES):  # (no row at all: it left meanwhile; again)
            rows = await self._rows(JOIN, self._me(addr=addr, quiet=quiet,
                                                   gone=round(JOIN_QUIET * 1000)))
            if rows[:1] == [(None, None, None)]:
                self.addr = addr
                return
            if rows and quiet is not None:
                other, silent, _ = rows[0]
                raise NodeNameInUse(
                    f"another process runs as node {self.node!r} (at {other}, last heard "
                    f"{float(silent):.1f} s ago): give this one another --node name")
            if rows:
                quiet = rows[0][2]
                await trio.sleep(JOIN_QUIET)
        raise RuntimeError(f"the registry row of {self.node!r} changed {ACQUIRE_TRIES} times "
                           "while joining")

    async def leave(self) -> None:
        """Release every lease of this node and remove it from the registry (nothing if
        another process took its name). Renewals from then on touch nothing (a heartbeat
        would register the node again): on the renewal connection, the statement runs
        after any renewal already sent."""
        self._left = True
        await self._rows(LEAVE, self._me(), renewal=True)

    async def nodes(self) -> dict[str, Node]:
        """Every registered node (stale ones too: judge by `seen_ago`)."""
        rows = await self._rows("SELECT node, addr, extract(epoch FROM now() - seen_at) "
                                "FROM nodes ORDER BY node", None)
        return {node: Node(addr, float(age)) for node, addr, age in rows}

    async def acquire(self, world: str) -> str:
        """Take the world's lease if it is free or lapsed, or renew it if this node holds
        it; the node holding it afterwards (this one when it succeeded)."""
        for _ in range(ACQUIRE_TRIES):
            rows = await self._rows(ACQUIRE, self._me(w=world))
            if rows and rows[0][0] is None:
                raise Replaced(self.node)
            if rows:
                return rows[0][0]
        raise RuntimeError(f"the lease of {world!r} changed hands {ACQUIRE_TRIES} times "
                           "while acquiring it")

    async def renew(self, worlds: Collection[str]) -> set[str]:
        """Extend, in one statement, this node's live leases among `worlds` and its
        heartbeat; the worlds still held (any other is lost: stop it at once). Replaced
        if another process registered under this node's name. Nothing once it left."""
        if self._left:
            return set()
        rows = await self._rows(RENEW, self._me(addr=self.addr, worlds=list(worlds)),
                                renewal=True)
        if rows and rows[0][0] is None:
            raise Replaced(self.node)
        return {world for (world,) in rows}

    async def release(self, world: str) -> bool:
        """Give the world's lease up (after its actor stopped); False if not held here."""
        async def work(conn: TrioConnection) -> bool:
            cur = await conn.execute(RELEASE, self._me(w=world))
            return cur.rowcount == 1

        return await self._run(work)

    async def holder(self, world: str) -> Holder | None:
        """Who holds the world's live lease, with its address; None when no one does."""
        rows = await self._rows(HOLDER, (world,))
        return None if not rows else Holder(rows[0][0], rows[0][1], float(rows[0][2]))
