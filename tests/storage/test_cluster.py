"""Leases and the node registry (server/storage/cluster.py) on a real PostgreSQL.

Lapses use a 300 ms TTL and sleep past it; a lease's expiry is judged by the database's
clock, which a sleep on this side can only move forward.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio

from server.cluster.leases import Leases
from server.storage.cluster import Cluster, NodeNameInUse, Replaced
from server.storage.postgres import PostgresEventStore
from tests.pgsql import sql

pytestmark = pytest.mark.postgres
TTL = 0.3


@pytest.fixture
async def store(postgres_dsn: str) -> AsyncIterator[PostgresEventStore]:
    async with PostgresEventStore(postgres_dsn) as s:
        yield s


async def test_one_holder_at_a_time(store: PostgresEventStore) -> None:
    a, b = Cluster(store, "a", ttl=5), Cluster(store, "b", ttl=5)
    await a.join("127.0.0.1:7001")
    assert await a.holder("field:1") is None
    assert await a.acquire("field:1") == "a"
    assert await b.acquire("field:1") == "a"  # held: b learns who holds it
    assert await a.acquire("field:1") == "a"  # the holder's acquire renews
    holder = await b.holder("field:1")
    assert holder is not None
    assert (holder.node, holder.addr) == ("a", "127.0.0.1:7001")
    assert 0 < holder.expires_in <= 5
    assert await b.renew(["field:1"]) == set()  # b cannot renew what it does not hold


async def test_concurrent_acquires_agree_on_one_holder(store: PostgresEventStore) -> None:
    answers: dict[str, str] = {}

    async def acquire(node: str) -> None:
        answers[node] = await Cluster(store, node).acquire("field:1")

    async with trio.open_nursery() as nursery:
        for i in range(8):
            nursery.start_soon(acquire, f"n{i}")
    assert len(set(answers.values())) == 1
    (winner,) = set(answers.values())
    assert answers[winner] == winner


async def test_renewal_extends_the_lease(store: PostgresEventStore) -> None:
    a = Cluster(store, "a", ttl=5)
    await a.acquire("field:1")
    await trio.sleep(0.2)
    before = await a.holder("field:1")
    assert await a.renew(["field:1", "field:not-held"]) == {"field:1"}
    after = await a.holder("field:1")
    assert before is not None and after is not None
    assert after.expires_in > before.expires_in


async def test_a_lapsed_lease_is_taken_over_and_its_renewal_fails(
        store: PostgresEventStore) -> None:
    a, b = Cluster(store, "a", ttl=TTL), Cluster(store, "b", ttl=TTL)
    assert await a.acquire("field:1") == "a"
    await trio.sleep(TTL + 0.1)
    assert await a.holder("field:1") is None  # lapsed, nobody took it yet
    assert await a.renew(["field:1"]) == set()  # too late: lost, even though free
    assert await b.acquire("field:1") == "b"
    assert await a.renew(["field:1"]) == set()
    assert await a.acquire("field:1") == "b"


async def test_release_frees_the_world_at_once(store: PostgresEventStore) -> None:
    a, b = Cluster(store, "a", ttl=5), Cluster(store, "b", ttl=5)
    await a.acquire("field:1")
    assert await b.release("field:1") is False  # not b's to release
    assert await a.release("field:1") is True
    assert await a.holder("field:1") is None
    assert await b.acquire("field:1") == "b"


async def test_nodes_register_beat_and_leave(store: PostgresEventStore) -> None:
    a, b = Cluster(store, "a", ttl=5), Cluster(store, "b", ttl=5)
    await a.join("10.0.0.1:7001")
    await a.join("127.0.0.1:7001")  # a restart may move the address
    await b.join("127.0.0.1:7002")
    await b.acquire("field:1")
    await trio.sleep(0.2)
    await a.renew([])  # the heartbeat rides on the renewal
    nodes = await a.nodes()
    assert {n: v.addr for n, v in nodes.items()} == {"a": "127.0.0.1:7001",
                                                      "b": "127.0.0.1:7002"}
    assert nodes["a"].seen_ago < nodes["b"].seen_ago
    await b.leave()
    assert set(await a.nodes()) == {"a"}
    assert await a.holder("field:1") is None  # leaving released b's leases
    assert await a.acquire("field:1") == "a"


async def test_every_node_reads_the_same_secret(store: PostgresEventStore) -> None:
    a, b = Cluster(store, "a"), Cluster(store, "b", connections=1)
    try:
        secret = await a.secret()
        assert len(secret) == 64
        assert await b.secret() == secret == await a.secret()
    finally:
        await b.aclose()


async def test_a_cluster_with_connections_of_its_own_leaves_the_store_s_pool_free(
        store: PostgresEventStore) -> None:
    a = Cluster(store, "a", connections=1)
    try:
        async with store.connection(), store.connection():  # every pooled one taken
            with trio.fail_after(5):
                assert await a.acquire("field:1") == "a"
                assert await a.renew(["field:1"]) == {"field:1"}
    finally:
        await a.aclose()


async def beating(cluster: Cluster, task_status: trio.TaskStatus[None]) -> None:
    """A live process's heartbeats (more often than any process beats)."""
    task_status.started()
    while True:
        await cluster.renew([])
        await trio.sleep(0.2)


async def test_a_start_under_a_live_node_s_name_is_refused_and_changes_nothing(
        store: PostgresEventStore, postgres_dsn: str) -> None:
    a, again = Cluster(store, "a", ttl=5), Cluster(store, "a", ttl=5)
    await a.join("127.0.0.1:7001")
    assert await a.acquire("field:1") == "a"
    async with trio.open_nursery() as nursery:
        await nursery.start(beating, a)
        with pytest.raises(NodeNameInUse, match=r"^another process runs as node 'a' \(at "
                           r"127\.0\.0\.1:7001, last heard \d+\.\d s ago\): give this one "
                           r"another --node name$"):
            await again.join("127.0.0.1:7002")
        await again.leave()  # (a refused start that leaves anyway takes nothing)
        nursery.cancel_scope.cancel()
    assert {n: v.addr for n, v in (await a.nodes()).items()} == {"a": "127.0.0.1:7001"}
    assert await a.renew(["field:1"]) == {"field:1"}
    assert (await sql(postgres_dsn, "SELECT instance FROM nodes"))[0][0] == a.instance


class Idle:
    """The directory's part the renewal loop uses, hosting nothing."""

    def hosted(self) -> list[str]:
        return []

    def evict(self, world: str) -> bool:
        return False


@pytest.mark.parametrize("live_ttl", [3.0, 300.0])
async def test_a_start_with_a_shorter_ttl_than_a_live_node_s_beats_is_refused(
        store: PostgresEventStore, postgres_dsn: str, live_ttl: float) -> None:
    """The live process beats every second (its TTL's cadence, not the starting one's): a
    start with the shortest TTL, 0.6 s after a beat, watches it and is refused."""
    live = Cluster(store, "a", ttl=live_ttl)
    await live.join("127.0.0.1:7001")
    leases = Leases(live)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(leases.run, Idle())
        while leases.renewals < 1:
            await trio.sleep(0.01)
        await trio.sleep(0.6)
        with pytest.raises(NodeNameInUse):
            await Cluster(store, "a", ttl=0.5).join("127.0.0.1:7002")
        nursery.cancel_scope.cancel()
    assert not leases.replaced.is_set()
    assert (await sql(postgres_dsn, "SELECT instance, addr FROM nodes")) == [
        (live.instance, "127.0.0.1:7001")]


async def test_a_renewal_after_leave_does_not_register_the_node_again(
        store: PostgresEventStore) -> None:
    """The renewal loop runs until the worlds stopped, after the leave: its beats do not
    put the row back (a restart would wait for it, peers would link to a dead address)."""
    a, b = Cluster(store, "a", ttl=5), Cluster(store, "b", ttl=5)
    await a.join("127.0.0.1:7001")
    await b.join("127.0.0.1:7002")
    assert await a.acquire("field:1") == "a"
    await a.leave()
    assert await a.renew(["field:1"]) == set()
    assert set(await b.nodes()) == {"b"}
    assert await b.acquire("field:1") == "b"


async def test_a_restart_after_a_crash_takes_the_name_over_and_the_old_process_holds_nothing(
        store: PostgresEventStore) -> None:
    """The first process stopped beating (killed, or paused): the next one under its name
    waits for a heartbeat, sees none, and registers; should the first run again, its
    lease statements find the name another's (Replaced), and its leave takes nothing."""
    old, new = Cluster(store, "a", ttl=5), Cluster(store, "a", ttl=5)
    await old.join("127.0.0.1:7001")
    assert await old.acquire("field:1") == "a"
    await new.join("127.0.0.1:7002")
    assert await new.acquire("field:1") == "a"  # its old lease, under the same name
    for statement in (old.renew(["field:1"]), old.acquire("field:2")):
        with pytest.raises(Replaced, match=r"another process now serves as node 'a'"):
            await statement
    assert await old.release("field:1") is False
    await old.leave()
    assert {n: v.addr for n, v in (await new.nodes()).items()} == {"a": "127.0.0.1:7002"}
    assert await new.renew(["field:1"]) == {"field:1"}


async def test_a_heartbeat_registers_the_node_again_once_its_row_is_gone(
        store: PostgresEventStore, postgres_dsn: str) -> None:
    """An older version's process leaving under the same name deletes the row by name:
    the next heartbeat puts it back, so the node stays reachable."""
    a = Cluster(store, "a", ttl=5)
    await a.join("127.0.0.1:7001")
    await sql(postgres_dsn, "DELETE FROM nodes")
    assert await a.renew([]) == set()
    assert {n: v.addr for n, v in (await a.nodes()).items()} == {"a": "127.0.0.1:7001"}


async def test_the_registry_of_an_older_version_gains_the_instance_column(
        postgres_dsn: str) -> None:
    """A `nodes` table made before the column: the open adds it, its rows get '' (no
    process's id), and a live process of the older version under a name (it beats by
    UPDATE) keeps a newer process from starting under it."""
    await sql(postgres_dsn, "CREATE TABLE nodes (node text PRIMARY KEY, addr text NOT NULL, "
                            "seen_at timestamptz NOT NULL)")
    await sql(postgres_dsn, "INSERT INTO nodes VALUES ('a', '127.0.0.1:7001', now())")

    async def old_beats(task_status: trio.TaskStatus[None]) -> None:
        task_status.started()
        while True:
            await sql(postgres_dsn, "UPDATE nodes SET seen_at = now() WHERE node = 'a'")
            await trio.sleep(0.2)

    async with PostgresEventStore(postgres_dsn) as store:
        assert await sql(postgres_dsn, "SELECT node, instance FROM nodes") == [("a", "")]
        async with trio.open_nursery() as nursery:
            await nursery.start(old_beats)
            with pytest.raises(NodeNameInUse):
                await Cluster(store, "a").join("127.0.0.1:7002")
            nursery.cancel_scope.cancel()
        b = Cluster(store, "b")
        await b.join("127.0.0.1:7003")
        assert set(await b.nodes()) == {"a", "b"}
