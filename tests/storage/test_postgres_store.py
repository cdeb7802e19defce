"""The PostgreSQL store's own behaviour: one statement per batch, NOTIFY, timeouts and lost
connections (its fences: test_postgres_fences.py)."""

from __future__ import annotations

import traceback
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Self

import psycopg
import pytest
import trio
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from actors import counter
from actors.runtime import Call
from actors.runtime.directory import ActorKind, open_directory
from actors.store import ConflictError, FencedError, Receipt, StoreUnavailable
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops.counter import AddArgs, CreateArgs
from server.storage import pg_local
from server.storage.pg_durability import NotDurable, durable_dsn
from server.storage.pg_trio import TrioConnection
from server.storage.postgres import PostgresEventStore, _own, rows_of
from tests.pgproxy import PgProxy
from tests.pgsql import sql, wait_for_lock_waiters
from tests.server.garbage import collector_off, cyclic_garbage
from tests.server.server_process import ServerProcess

pytestmark = pytest.mark.postgres


@pytest.fixture
async def store(postgres_dsn: str) -> AsyncIterator[PostgresEventStore]:
    async with PostgresEventStore(postgres_dsn) as s:
        yield s


async def test_durability_settings_are_on(store: PostgresEventStore) -> None:
    assert store.settings == {"fsync": "on", "synchronous_commit": "on"}


async def test_every_connection_commits_synchronously_whatever_the_role_says(
        postgres_dsn: str) -> None:
    """A role (or database) with synchronous_commit off would have PostgreSQL acknowledge
    commits that its crash loses: the store's connections set it on themselves."""
    role = "petridish_async_commit"
    await sql(postgres_dsn, f"CREATE ROLE {role} LOGIN SUPERUSER")
    try:
        await sql(postgres_dsn, f"ALTER ROLE {role} SET synchronous_commit = off")
        dsn = make_conninfo(postgres_dsn, user=role)
        assert await sql(dsn, "SHOW synchronous_commit") == [("off",)]
        async with PostgresEventStore(dsn) as store:
            assert store.settings == {"fsync": "on", "synchronous_commit": "on"}
            assert await store.run(rows_of("SHOW synchronous_commit", None)) == [("on",)]
            await store.append("w:1", 0, [{}])  # the writer's connection, now open
            assert store._writer.conn is not None
            cur = await store._writer.conn.execute("SHOW synchronous_commit")
            assert await cur.fetchall() == [("on",)]
            # The listener and cluster.py's lease connections open `store.dsn` too.
            assert await sql(store.dsn, "SHOW synchronous_commit") == [("on",)]
            assert await sql(store.dsn, "SHOW search_path") \
                == await sql(postgres_dsn, "SHOW search_path")
    finally:
        await sql(postgres_dsn, f"REASSIGN OWNED BY {role} TO postgres")
        await sql(postgres_dsn, f"DROP ROLE {role}")


async def test_a_server_running_without_fsync_is_refused(tmp_path: Path) -> None:
    """No client can turn fsync on: the store refuses to open, naming it, and creates
    nothing; `petridish serve` on it exits 2 with that sentence."""
    if pg_local.unavailable() is not None:
        pytest.skip(pg_local.unavailable())
    server = await trio.to_thread.run_sync(lambda: pg_local.start(settings={"fsync": "off"}))
    try:
        with pytest.raises(NotDurable, match=(
                r"^the PostgreSQL server runs with fsync = off: a crash of it or of its "
                r"machine may lose or corrupt committed writes; set fsync = on in its "
                r"configuration \(postgresql.conf or ALTER SYSTEM\) and reload it$")):
            async with PostgresEventStore(server.dsn()):
                pass
        assert await sql(server.dsn(), "SELECT to_regclass('streams')") == [(None,)]
        node = ServerProcess(tmp_path, "--store", server.dsn(), "--node", "n1")
        with pytest.raises(RuntimeError, match="exited before listening"):
            await trio.to_thread.run_sync(node.start)
        assert node.proc is not None and node.proc.wait(10) == 2
        said = "".join(node.output)
        assert "petridish: the PostgreSQL server runs with fsync = off: " in said, said
    finally:
        await trio.to_thread.run_sync(pg_local.stop, server)


async def test_connections_that_lost_their_startup_options_are_refused() -> None:
    """A pooler that drops startup options (PgBouncer does) before a server whose commits
    are asynchronous: the store's synchronous_commit = on never reaches it, so the store
    refuses to open, naming it, and creates nothing."""
    if pg_local.unavailable() is not None:
        pytest.skip(pg_local.unavailable())
    server = await trio.to_thread.run_sync(
        lambda: pg_local.start(settings={"synchronous_commit": "off"}))
    try:
        async with trio.open_nursery() as nursery:
            proxy = await nursery.start(PgProxy(server.dsn(), drop_options=True).serve)
            assert await sql(durable_dsn(server.dsn()), "SHOW synchronous_commit") == [("on",)]
            assert await sql(durable_dsn(proxy.dsn), "SHOW synchronous_commit") == [("off",)]
            with pytest.raises(NotDurable, match=(
                    r"^the PostgreSQL connections run with synchronous_commit = off though "
                    r"the store sets it on in their startup options \(a connection pooler ")):
                async with PostgresEventStore(proxy.dsn):
                    pass
            nursery.cancel_scope.cancel()
        assert await sql(server.dsn(), "SELECT to_regclass('streams')") == [(None,)]
    finally:
        await trio.to_thread.run_sync(pg_local.stop, server)


async def test_every_append_waiting_goes_out_in_one_transaction(
        store: PostgresEventStore, postgres_dsn: str) -> None:
    """New streams, claimed streams and a fenced one, all in one batch."""
    for i in range(10):
        await store.claim(f"w:{i}")
    async with PostgresEventStore(postgres_dsn) as other:
        await other.claim("w:7")
    outcomes: dict[int, object] = {}

    async def append(i: int) -> None:
        try:
            outcomes[i] = await store.append(f"w:{i}", 0, [{"i": i}, {"i": -i}])
        except FencedError as exc:
            outcomes[i] = exc

    async with trio.open_nursery() as nursery:  # all queue before the writer task runs
        for i in range(100):
            nursery.start_soon(append, i)
    assert isinstance(outcomes.pop(7), FencedError)
    assert outcomes == {i: 2 for i in range(100) if i != 7}
    stats = store.statistics()
    assert (stats.appends, stats.commits, stats.events, stats.fenced) == (100, 1, 198, 1)
    # The database's own record: every row written by one transaction.
    assert await sql(postgres_dsn, "SELECT count(*), count(DISTINCT xmin::text) FROM events") \
        == [(198, 1)]


async def test_stored_text_is_byte_for_byte_what_the_server_wrote(
        store: PostgresEventStore, postgres_dsn: str) -> None:
    from protocol.jsontext import compact_encoder

    encode = compact_encoder(ensure_ascii=True)
    events = [{"z": 1, "a": [1.0, 1e300, 2**70]}, {"s": "é\u0000\n😀\"\\"}, {}]
    await store.append("a:1", 0, events)
    await store.save_snapshot("a:1", 3, {"b": 2, "a": 1.5})
    stored = await sql(postgres_dsn, "SELECT data FROM events WHERE stream = 'a:1' ORDER BY rev")
    assert [row[0].encode() for row in stored] == [encode(e).encode() for e in events]
    assert await sql(postgres_dsn, "SELECT data FROM snapshots") == [('{"b":2,"a":1.5}',)]


async def test_a_batch_the_server_cancels_writes_nothing(postgres_dsn: str) -> None:
    async with PostgresEventStore(postgres_dsn, write_timeout=0.3) as store:
        await store.append("w:1", 0, [{"n": 1}])
        blocker = await TrioConnection.connect(postgres_dsn)
        await blocker.execute("SELECT * FROM streams WHERE name = 'w:1' FOR UPDATE")
        with pytest.raises(psycopg.errors.QueryCanceled):
            await store.append("w:1", 1, [{"n": "late"}])
        await blocker.commit()
        await blocker.close()
        assert await store.revision("w:1") == 1
        assert await store.append("w:1", 1, [{"n": 2}]) == 2


async def test_each_append_of_a_failed_batch_raises_its_own_error(postgres_dsn: str) -> None:
    """The appends of one batch the server cancels each raise their own QueryCanceled: one
    instance raised in every caller's task chained their tracebacks (the second caller's
    held the first's frames), and it held the batch, and so itself, in a cycle."""
    seen: dict[str, tuple[int, list[str]]] = {}  # the error's id, its frames

    async def append(stream: str, expected: int) -> None:
        try:
            await store.append(stream, expected, [{"n": "late"}])
        except psycopg.errors.QueryCanceled as exc:
            frames = [f.name for f in traceback.extract_tb(exc.__traceback__)]
            seen[stream] = (id(exc), frames)

    async with PostgresEventStore(postgres_dsn, write_timeout=0.3) as store:
        await store.append("w:1", 0, [{"n": 1}])
        blocker = await TrioConnection.connect(postgres_dsn)
        await blocker.execute("SELECT * FROM streams WHERE name = 'w:1' FOR UPDATE")
        async with collector_off():
            async with trio.open_nursery() as nursery:  # queued together: one batch
                for stream, expected in (("w:1", 1), ("w:2", 0), ("w:3", 0)):
                    nursery.start_soon(append, stream, expected)
            await blocker.commit()
            await blocker.close()
            await store.append("w:4", 0, [{}])  # (the writer lets the failed batch go)
            assert cyclic_garbage() == Counter()
        assert [await store.revision(f"w:{i}") for i in (1, 2, 3, 4)] == [1, 0, 0, 1]
    assert len({own for own, _ in seen.values()}) == 3
    for frames in [frames for _, frames in seen.values()]:
        assert frames.count("append") == 2  # this test's and the store's, once each


async def test_an_unanswered_batch_fails_as_unknown_and_the_writer_reconnects(
        postgres_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The database's backend stops answering (SIGSTOP): the batch fails after
    write_timeout + UNANSWERED without waiting forever; once it runs again the store
    goes on, and the revision tells whether the batch had landed."""
    import os
    import signal

    from server.storage import postgres

    monkeypatch.setattr(postgres, "UNANSWERED", 0.3)
    async with PostgresEventStore(postgres_dsn, write_timeout=0.2) as store:
        await store.append("w:1", 0, [{"n": 1}])
        (pid,) = store._writer_pids
        os.kill(pid, signal.SIGSTOP)
        try:
            with pytest.raises(StoreUnavailable, match=r"no answer within 0\.5 s\); whether "
                                                       "it was stored is unknown"):
                await store.append("w:1", 1, [{"n": 2}])
        finally:
            os.kill(pid, signal.SIGCONT)
        # Resumed, the backend finishes (or cancels) the batch, then finds its client
        # gone and exits: only then does the revision say whether the batch landed.
        with trio.fail_after(10):
            while await sql(postgres_dsn, "SELECT 1 FROM pg_stat_activity WHERE pid = %s",
                             pid):
                await trio.sleep(0.02)
        rev = await store.revision("w:1")
        assert rev in (1, 2)
        assert await store.append("w:1", rev, [{"n": 3}]) == rev + 1


async def test_a_writer_connection_lost_mid_batch_fails_it_as_unknown_then_reconnects(
        store: PostgresEventStore, postgres_dsn: str) -> None:
    """The batch was sent (it waits on a row lock) when its backend is terminated: whether
    it landed is unknown to the writer. (A connection lost while idle is replaced before
    the next batch: tests/storage/test_pg_outage.py.)"""
    await store.append("w:1", 0, [{"n": 1}])
    (pid,) = store._writer_pids
    blocker = await TrioConnection.connect(postgres_dsn)
    await blocker.execute("SELECT * FROM streams WHERE name = 'w:1' FOR UPDATE")
    outcome: list[BaseException] = []

    async def append() -> None:
        try:
            await store.append("w:1", 1, [{"n": 2}])
        except StoreUnavailable as exc:
            outcome.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(append)
        await wait_for_lock_waiters(postgres_dsn, 1)
        await sql(postgres_dsn, "SELECT pg_terminate_backend(%s)", pid)
    await blocker.rollback()
    await blocker.close()
    (unknown,) = outcome
    assert unknown.detail == {"store": "down", "stored": "unknown", "outcome": "unknown"}
    rev = await store.revision("w:1")  # terminated before it ran: not stored
    assert await store.append("w:1", rev, [{"n": 3}]) == rev + 1
    assert store._writer_pids != {pid}


async def test_a_cancelled_query_drops_its_connection_and_the_pool_goes_on(
        store: PostgresEventStore) -> None:
    with trio.move_on_after(0.2):
        async with store.connection() as conn:
            await conn.execute("SELECT pg_sleep(10)")
    assert conn.closed
    await store.append("w:1", 0, [{}])
    assert [e.rev for e in await store.read("w:1")] == [1]


async def test_stores_opening_together_apply_the_schema_once(postgres_dsn: str) -> None:
    stores = [PostgresEventStore(postgres_dsn) for _ in range(4)]
    async with trio.open_nursery() as nursery:
        for s in stores:
            nursery.start_soon(s.open)
    for i, s in enumerate(stores):
        assert await s.append(f"w:{i}", 0, [{}]) == 1
        await s.aclose()


async def test_receipts_from_before_callers_are_migrated(postgres_dsn: str) -> None:
    """A receipt stored before receipts had callers comes back as no caller's ('')."""
    await sql(postgres_dsn, "CREATE TABLE receipts (stream text NOT NULL, rev bigint NOT "
               "NULL, request_id text NOT NULL, result text NOT NULL, PRIMARY KEY (stream, "
               "rev)); INSERT INTO receipts VALUES ('a:1', 1, 'r1', '{\"old\":true}')")
    for _ in range(2):  # and the schema applies again to a migrated database
        async with PostgresEventStore(postgres_dsn) as store:
            assert await store.receipts("a:1") == [Receipt(1, "", "r1", {"old": True})]
    async with PostgresEventStore(postgres_dsn) as store:
        assert await store.append("a:1", 0, [{}, {}], [Receipt(2, "ann", "r1", 2)]) == 2
        assert await store.receipts("a:1", after=1) == [Receipt(2, "ann", "r1", 2)]


async def test_close_finishes_queued_appends_and_refuses_later_ones(postgres_dsn: str) -> None:
    store = PostgresEventStore(postgres_dsn)
    await store.open()
    revs: list[int] = []

    async def append(i: int) -> None:
        revs.append(await store.append(f"w:{i}", 0, [{}]))

    async with trio.open_nursery() as nursery:
        for i in range(20):
            nursery.start_soon(append, i)
        await trio.lowlevel.checkpoint()  # all queued
        nursery.start_soon(store.aclose)
    assert revs == [1] * 20
    with pytest.raises(RuntimeError, match="closed, not open"):
        await store.append("w:0", 1, [{}])
    async with PostgresEventStore(postgres_dsn) as again:
        assert len(await again.streams("w:")) == 20


async def test_other_processes_are_notified_of_new_revisions(
        store: PostgresEventStore, postgres_dsn: str) -> None:
    async with PostgresEventStore(postgres_dsn) as other, other.listen() as notes, \
            store.listen() as own_left_out, store.listen(own=True) as own_too:
        await store.append("w:1", 0, [{}, {}])
        await store.append("w:1", 2, [{}])
        await store.append("w:2", 0, [{}])
        moved: dict[str, int] = {}
        with trio.fail_after(10):
            async for batch in notes:
                moved |= batch
                if moved == {"w:1": 3, "w:2": 1}:
                    break
        assert moved == {"w:1": 3, "w:2": 1}
        await other.append("w:3", 0, [{}])  # notifications arrive in commit order
        with trio.fail_after(10):
            assert await anext(own_left_out) == {"w:3": 1}
        seen: dict[str, int] = {}
        with trio.fail_after(10):
            async for batch in own_too:
                seen |= batch
                if "w:3" in seen:
                    break
        assert seen == {"w:1": 3, "w:2": 1, "w:3": 1}
        assert notes.statistics().batches >= 1
        assert own_left_out.statistics().foreign == own_too.statistics().foreign == 1


async def test_a_large_batch_is_notified_in_pieces_under_the_payload_limit(
        store: PostgresEventStore, postgres_dsn: str) -> None:
    names = [f"w:{i:03d}" + "x" * 240 for i in range(300)]  # 300 x ~270 bytes > 8000
    async with PostgresEventStore(postgres_dsn) as other, other.listen() as notes:
        async with trio.open_nursery() as nursery:
            for name in names:
                nursery.start_soon(store.append, name, 0, [{}])
        moved: dict[str, int] = {}
        with trio.fail_after(10):
            async for batch in notes:
                moved |= batch
                if len(moved) == len(names):
                    break
        assert moved == dict.fromkeys(names, 1)
        assert store.statistics().commits == 1
        assert notes.statistics().received >= 11  # 81,000 bytes of lines in 7,000-byte pieces


async def test_a_lost_listener_connection_raises_in_the_consumer(
        store: PostgresEventStore, postgres_dsn: str) -> None:
    async with store.listen() as notes:
        (pid,) = (await sql(postgres_dsn, "SELECT pid FROM pg_stat_activity "
                                           "WHERE query LIKE 'LISTEN%%'"))[0]
        await sql(postgres_dsn, "SELECT pg_terminate_backend(%s)", pid)
        with trio.fail_after(10), pytest.raises(psycopg.OperationalError):
            await anext(notes)


class _AnswerLosingProxy:
    """A loopback TCP proxy to PostgreSQL that, once `armed`, passes the next append
    statement on, swallows the server's whole answer (up to its ReadyForQuery: the
    statement has committed) and then hangs up on the client."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.armed = False
        self.port = 0

    async def serve(self, *, task_status: trio.TaskStatus[None]) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started()
        await trio.serve_listeners(self._relay, listeners)

    async def _relay(self, client: trio.SocketStream) -> None:
        server = await trio.open_tcp_stream(*self.target)
        cutting = trio.Event()
        async with client, server, trio.open_nursery() as nursery:
            async def upstream() -> None:
                async for data in client:
                    if self.armed and b"pg_notify" in data:
                        self.armed = False
                        cutting.set()
                    await server.send_all(data)

            nursery.start_soon(upstream)
            seen = b""
            async for data in server:
                if not cutting.is_set():
                    await client.send_all(data)
                    continue
                seen += data
                if b"Z\x00\x00\x00\x05" in seen:  # ReadyForQuery: committed, answer lost
                    break
            nursery.cancel_scope.cancel()


async def test_an_append_whose_answer_was_lost_is_unavailable_not_retryable(
        postgres_dsn: str) -> None:
    """The connection drops after the append committed: the caller must hear that the
    outcome is unknown (`unavailable`, stored unknown), not `actor_restarted` ("may be
    retried"), which a client without a request id would obey and apply it twice."""
    info = conninfo_to_dict(postgres_dsn)
    proxy = _AnswerLosingProxy((str(info["host"]), int(info["port"])))
    async with trio.open_nursery() as nursery:
        await nursery.start(proxy.serve)
        dsn = make_conninfo(postgres_dsn, host="127.0.0.1", port=str(proxy.port))
        async with PostgresEventStore(dsn) as store, \
                open_directory(store, [ActorKind.of(counter.WORLD)]) as d:
            await d.ask("counter:c", Call("counter.create", CreateArgs(), "agent", "ann"))
            proxy.armed = True
            with pytest.raises(ProtocolError) as err:
                await d.ask("counter:c", Call("counter.add", AddArgs(5), "agent", "ann"))
            assert (err.value.code, err.value.detail.get("stored")) == (
                ErrorCode.UNAVAILABLE, "unknown")
            assert [e.data.get("amount") for e in await store.read("counter:c")] == [None, 5]
            total = (await d.ask("counter:c", Call("counter.get", None, "agent", "ann"))).total
            assert total == 5  # the world loads again, with the write
        nursery.cancel_scope.cancel()


def test_a_failure_is_copied_whatever_its_constructor_asks() -> None:
    class Odd(Exception):
        def __init__(self, *, why: str) -> None:
            super().__init__(why)
            self.why = why

    own = _own(Odd(why="odd"))
    assert (type(own), own.args, own.why) == (Odd, ("odd",), "odd")
    down = StoreUnavailable("gone", sent=True)
    again = _own(down)
    assert again is not down and type(again) is StoreUnavailable
    assert (again.message, again.sent) == (down.message, True)
    conflict = ConflictError("counter:c", 3, 5)  # stays a conflict, not a crash
    copied = _own(conflict)
    assert copied is not conflict and type(copied) is ConflictError
    assert (copied.stream, copied.expected, copied.actual, str(copied)) == (
        "counter:c", 3, 5, str(conflict))
    refusal = ProtocolError(ErrorCode.OVERLOADED, "busy", {"retry_after": 1.0})
    told = _own(refusal)
    assert told is not refusal and told.to_wire() == refusal.to_wire()
    assert told.detail is not refusal.detail  # a caller may add to its own

    class Errno(OSError):
        def __init__(self, why: str) -> None:
            super().__init__(5, why)

    lost = _own(Errno("io"))  # its errno and text live outside __dict__: not copied whole
    assert type(lost) is RuntimeError and str(lost).endswith("Errno(5, 'io')")

    class Unmade(Exception):
        def __new__(cls, *, why: str) -> Self:
            return super().__new__(cls, why)

        def __init__(self, *, why: str) -> None:
            super().__init__(why)

    fallback = _own(Unmade(why="x"))
    assert (type(fallback), str(fallback)) == (
        RuntimeError, "the event store's batch failed: Unmade('x')")
