"""The PostgreSQL store's fences: checked by the database under concurrency, drawn from one
sequence (never given out twice, whatever the claiming statement or session), and the row
of a stream nothing was written under deleted when its claim is let go."""

from __future__ import annotations

import psycopg
import pytest
import trio
import trio.testing
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from actors.store import FencedError, StoreUnavailable
from server.storage.pg_statements import SCHEMA_LOCK
from server.storage.pg_trio import TrioConnection
from server.storage.postgres import PostgresEventStore
from tests.pgsql import sql, wait_for_lock_waiters

pytestmark = pytest.mark.postgres
# The conftest's store, on PostgreSQL alone.
ON_POSTGRES = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


@ON_POSTGRES
async def test_the_database_fences_an_append_racing_a_claim(
        store: PostgresEventStore, postgres_dsn: str) -> None:
    """The old owner's append reaches the row after the new owner's claim took it: the
    statement itself sees the new fence and writes nothing."""
    await store.claim("w:1")
    await store.append("w:1", 0, [{"n": 1}])
    async with PostgresEventStore(postgres_dsn) as new:
        blocker = await TrioConnection.connect(postgres_dsn)  # holds the row locked
        await blocker.execute("SELECT * FROM streams WHERE name = 'w:1' FOR UPDATE")
        outcome: dict[str, object] = {}

        async def old_append() -> None:
            try:
                outcome["old"] = await store.append("w:1", 1, [{"n": "zombie"}])
            except FencedError as exc:
                outcome["old"] = exc

        async with trio.open_nursery() as nursery:
            nursery.start_soon(new.claim, "w:1")
            await wait_for_lock_waiters(postgres_dsn, 1)  # the claim waits first
            nursery.start_soon(old_append)
            await wait_for_lock_waiters(postgres_dsn, 2)  # then the append
            await blocker.commit()
            await blocker.close()
        assert isinstance(outcome["old"], FencedError)
        assert [e.data for e in await new.read("w:1")] == [{"n": 1}]
        assert await new.append("w:1", 1, [{"n": 2}]) == 2


@ON_POSTGRES
async def test_each_event_keeps_the_fence_it_was_written_under(
        store: PostgresEventStore, postgres_dsn: str) -> None:
    await store.append("w:new", 0, [{}])  # never claimed: fence 0
    first, _ = await store.claim("w:1")
    await store.append("w:1", 0, [{}, {}])
    async with PostgresEventStore(postgres_dsn) as other:
        second, _ = await other.claim("w:1")
        await other.append("w:1", 2, [{}])
    assert await sql(postgres_dsn, "SELECT stream, rev, fence FROM events ORDER BY stream, "
                                    "rev") == [("w:1", 1, first), ("w:1", 2, first),
                                               ("w:1", 3, second), ("w:new", 1, 0)]
    assert 0 < first < second


@ON_POSTGRES
async def test_a_let_go_claim_deletes_the_row_of_a_stream_nothing_was_written_under(
        store: PostgresEventStore, postgres_dsn: str) -> None:
    """Refused creates on fresh names (each claimed, nothing written, let go) leave no row;
    a stream written to keeps its row, and so does one another writer claimed since."""
    for i in range(20):
        await store.claim(f"refused:{i}")
        await store.unclaim(f"refused:{i}")
    await store.unclaim("w:never-claimed")  # nothing to let go
    await store.claim("w:written")
    await store.append("w:written", 0, [{}])
    await store.claim("w:taken")
    async with PostgresEventStore(postgres_dsn) as other:
        fence, _ = await other.claim("w:taken")
        await store.unclaim("w:written")
        await store.unclaim("w:taken")  # no longer this claim's: the row stays
        assert await sql(postgres_dsn, "SELECT name, rev FROM streams ORDER BY name") == [
            ("w:taken", 0), ("w:written", 1)]
        assert await other.append("w:taken", 0, [{}]) == 1
    assert await sql(postgres_dsn, "SELECT fence FROM streams WHERE name = 'w:taken'") == [
        (fence,)]
    # Nobody holds a claim on a forgotten stream, nothing was written under one: fence 0
    # works on it again, as on a stream never claimed.
    assert await store.append("refused:0", 0, [{}]) == 1


@ON_POSTGRES
async def test_an_append_in_flight_under_a_let_go_claim_is_refused_once_its_row_is_gone(
        store: PostgresEventStore, postgres_dsn: str) -> None:
    """Appends queued under claims that are then let go reach the database after their
    streams' empty rows were deleted: refused, writing nothing, whether the stream was
    claimed again meanwhile (under a new fence: never the old one) or not."""
    await store.claim("w:again")
    await store.claim("w:gone")
    await store.append("w:busy", 0, [{}])
    outcomes: dict[str, object] = {}

    async def append(stream: str, expected: int) -> None:
        try:
            outcomes[stream] = await store.append(stream, expected, [{"late": True}])
        except FencedError as exc:
            outcomes[stream] = exc

    blocker = await TrioConnection.connect(postgres_dsn)  # holds the writer up
    await blocker.execute("SELECT * FROM streams WHERE name = 'w:busy' FOR UPDATE")
    async with PostgresEventStore(postgres_dsn) as other:
        async with trio.open_nursery() as nursery:
            try:
                nursery.start_soon(append, "w:busy", 1)
                await wait_for_lock_waiters(postgres_dsn, 1)  # the writer's batch waits
                nursery.start_soon(append, "w:again", 0)
                nursery.start_soon(append, "w:gone", 0)
                await trio.testing.wait_all_tasks_blocked()  # queued, each under its claim
                await store.unclaim("w:again")
                await store.unclaim("w:gone")
                assert await sql(postgres_dsn, "SELECT name FROM streams ORDER BY name") == [
                    ("w:busy",)]
                fence, _ = await other.claim("w:again")
            finally:  # the writer goes on, whatever failed (appends cannot be cancelled)
                await blocker.close()
        again, gone = outcomes["w:again"], outcomes["w:gone"]
        assert outcomes["w:busy"] == 2
        assert isinstance(again, FencedError) and again.current == fence
        assert isinstance(gone, FencedError) and gone.current == 0
        assert str(gone) == (f"stream 'w:gone' is not claimed (its claim was let go with "
                             f"nothing written under it); this writer holds fence {gone.held}")
        assert await sql(postgres_dsn, "SELECT stream FROM events ORDER BY stream, rev") == [
            ("w:busy",), ("w:busy",)]
        assert await other.append("w:again", 0, [{}]) == 1


async def test_a_database_from_before_the_fence_sequence_starts_it_above_every_fence(
        postgres_dsn: str) -> None:
    """Fences were counted per stream (1, 2, 3 ...): the sequence starts above every one in
    use, and an older version's claim statement (`s.fence + 1`) draws from it too."""
    await sql(postgres_dsn, "CREATE TABLE streams (name text PRIMARY KEY, rev bigint NOT NULL "
                            "DEFAULT 0, fence bigint NOT NULL DEFAULT 0); INSERT INTO streams "
                            "VALUES ('w:1', 4, 7), ('w:2', 0, 3), ('w:3', 2, 0)")
    older_claim = ("INSERT INTO streams AS s (name, rev, fence) VALUES (%s, 0, 1) ON CONFLICT "
                   "(name) DO UPDATE SET fence = s.fence + 1 RETURNING fence")
    fences = [7]
    for _ in range(2):  # and the schema applies again to a migrated database
        async with PostgresEventStore(postgres_dsn) as store:
            for stream in ("w:2", "w:3", "w:1"):
                fence, _ = await store.claim(stream)
                fences.append(fence)
            for stream in ("w:1", "w:new"):
                fences.extend(f for (f,) in await sql(postgres_dsn, older_claim, stream))
            await store.unclaim("w:2")  # still empty: its row goes
    assert fences == sorted(set(fences)), fences  # each above every one before it
    assert await sql(postgres_dsn, "SELECT name, rev FROM streams ORDER BY name") == [
        ("w:1", 4), ("w:3", 2), ("w:new", 0)]


@pytest.mark.parametrize("bypass", ["replica", "disabled"])
async def test_claims_get_new_fences_where_the_trigger_does_not_fire(
        postgres_dsn: str, bypass: str) -> None:
    """Restore and replication tools run with session_replication_role = replica, and a
    table's trigger can be disabled: the claim statement draws its fence itself, so a
    paused old owner's append is still refused, and its let-go claim deletes nothing."""
    dsn = postgres_dsn
    if bypass == "replica":
        options = conninfo_to_dict(dsn)["options"]
        dsn = make_conninfo(dsn, options=f"{options} -c session_replication_role=replica")
    async with PostgresEventStore(dsn) as old, PostgresEventStore(dsn) as new:
        if bypass == "disabled":
            await sql(dsn, "ALTER TABLE streams DISABLE TRIGGER streams_fence")
        held, _ = await old.claim("w:1")
        current, _ = await new.claim("w:1")
        assert 0 < held < current
        assert await sql(dsn, "SELECT fence FROM streams") == [(current,)]
        with pytest.raises(FencedError):
            await old.append("w:1", 0, [{"by": "old"}])
        await old.unclaim("w:1")  # no longer its claim: the row stays
        assert await new.append("w:1", 0, [{"by": "new"}]) == 1


@ON_POSTGRES
async def test_no_claim_stands_under_a_fence_that_is_not_positive(
        store: PostgresEventStore, postgres_dsn: str) -> None:
    """An older version's placeholder fence (-1) is replaced where the trigger fires, and
    refused by the table where it does not; a sequence altered to give 0 makes the claim
    fail, claiming nothing (fence 0 is a writer's that never claimed): the row stays as it
    was, or absent."""
    (fence,), = await sql(postgres_dsn, "INSERT INTO streams VALUES ('w:0', 0, -1) "
                                        "RETURNING fence")
    assert fence > 0
    with pytest.raises(psycopg.errors.CheckViolation):
        await sql(postgres_dsn, "SET session_replication_role = replica; "
                                "INSERT INTO streams VALUES ('w:1', 0, -1)")
    # A new row: the claim's own draw (0) does not fire the trigger. An existing one: the
    # claim draws 2, the trigger 1, the update 0 (which does not fire it).
    for stream, altered in (("w:2", "MINVALUE 0 RESTART WITH 0"),
                            ("w:0", "INCREMENT BY -1 MINVALUE -9 RESTART WITH 2")):
        await sql(postgres_dsn, f"ALTER SEQUENCE stream_fences {altered}")
        with pytest.raises(RuntimeError, match=rf"^stream '{stream}' was not claimed: the "
                                               r"sequence stream_fences gave fence 0 to a "
                                               r"claim \(was it altered\?\): a fence must "
                                               r"be positive$"):
            await store.claim(stream)
    assert not store._fences
    assert await sql(postgres_dsn, "SELECT name, fence FROM streams") == [("w:0", fence)]


@ON_POSTGRES
async def test_a_let_go_claim_raises_nothing_when_its_row_cannot_be_deleted(
        store: PostgresEventStore, postgres_dsn: str) -> None:
    """`unclaim` is best effort: a statement error or a closed store keeps the row."""
    await sql(postgres_dsn, "CREATE FUNCTION no_deletes() RETURNS trigger LANGUAGE plpgsql "
                            "AS $$ BEGIN RAISE EXCEPTION 'no deletes here'; END $$; "
                            "CREATE TRIGGER no_deletes BEFORE DELETE ON streams FOR EACH ROW "
                            "EXECUTE FUNCTION no_deletes()")
    await store.claim("w:1")
    await store.unclaim("w:1")
    async with PostgresEventStore(postgres_dsn) as closing:
        await closing.claim("w:2")
    await closing.unclaim("w:2")  # closed
    assert await sql(postgres_dsn, "SELECT name FROM streams ORDER BY name") == [
        ("w:1",), ("w:2",)]
    assert not store._fences and not closing._fences


async def test_a_migration_behind_a_held_lock_fails_the_open_in_time(postgres_dsn: str) -> None:
    """The migration locks `streams`: behind a session idle in a transaction that wrote
    to it, the open gives up (every other process's append would queue behind its lock
    request) and says why; it succeeds once the session ended."""
    await sql(postgres_dsn, "CREATE TABLE streams (name text PRIMARY KEY, rev bigint NOT NULL "
                            "DEFAULT 0, fence bigint NOT NULL DEFAULT 0)")
    idle = await TrioConnection.connect(postgres_dsn)
    store = PostgresEventStore(postgres_dsn)
    try:
        await idle.execute("INSERT INTO streams VALUES ('w:1', 1, 1)")  # idle in transaction
        with trio.fail_after(10), pytest.raises(StoreUnavailable) as refused:
            await store.open()
        assert refused.value.why.startswith("the schema could not be applied: a table it "
                                            "locks is held by another session for over 2 s")
        await idle.commit()
    finally:  # (its lock would keep the test's schema from being dropped)
        await idle.close()
    async with store:
        assert (await store.claim("w:1"))[0] > 1


@ON_POSTGRES
async def test_the_trigger_is_made_afresh_and_the_sequence_never_goes_back(
        store: PostgresEventStore, postgres_dsn: str) -> None:
    """The trigger's function is replaced at every open (a later version's reaches an
    existing database); a table restored without the trigger gets it again at the next
    open, the sequence left where it was when that is above every fence in use."""
    await store.claim("w:1")
    await sql(postgres_dsn, "CREATE OR REPLACE FUNCTION streams_fence() RETURNS trigger "
                            "LANGUAGE plpgsql AS $f$ BEGIN NEW.fence := 7; RETURN NEW; END $f$")
    async with PostgresEventStore(postgres_dsn):
        (body,), = await sql(postgres_dsn, "SELECT prosrc FROM pg_proc "
                                           "WHERE oid = 'streams_fence'::regproc")
        assert "nextval" in body
    await sql(postgres_dsn, "SELECT setval('stream_fences', 100); "
                            "DROP TRIGGER streams_fence ON streams")
    async with PostgresEventStore(postgres_dsn) as other:
        fence, _ = await other.claim("w:1")
        assert fence > 100
        assert await sql(postgres_dsn, "SELECT count(*) FROM pg_trigger WHERE tgrelid = "
                                       "'streams'::regclass AND tgname = 'streams_fence'") \
            == [(1,)]


async def _before_the_check(dsn: str, *rows: str) -> None:
    """A database as a version before `streams_fence_check` left it, holding `rows`."""
    async with PostgresEventStore(dsn):
        pass
    await sql(dsn, "ALTER TABLE streams DROP CONSTRAINT streams_fence_check; "
                   "ALTER TABLE streams DISABLE TRIGGER streams_fence; "
                   f"INSERT INTO streams VALUES {', '.join(rows)}; "
                   "ALTER TABLE streams ENABLE TRIGGER streams_fence")


async def _validated(dsn: str) -> list[tuple]:
    return await sql(dsn, "SELECT convalidated FROM pg_constraint WHERE conrelid = "
                          "'streams'::regclass AND conname = 'streams_fence_check'")


async def test_a_database_with_a_negative_fence_gets_the_check_and_fences_its_holder(
        postgres_dsn: str) -> None:
    """A row an older version's claim left at -1 gets a fresh fence, above every other,
    then the table gets its constraint."""
    await sql(postgres_dsn, "CREATE TABLE streams (name text PRIMARY KEY, rev bigint NOT NULL "
                            "DEFAULT 0, fence bigint NOT NULL DEFAULT 0); INSERT INTO streams "
                            "VALUES ('w:1', 2, -1), ('w:2', 0, 5)")
    async with PostgresEventStore(postgres_dsn):
        rows = dict(await sql(postgres_dsn, "SELECT name, fence FROM streams"))
        assert rows["w:1"] > 5 and rows["w:2"] == 5
        assert await _validated(postgres_dsn) == [(True,)]


async def test_a_negative_fence_written_while_the_check_is_added_is_mended(
        postgres_dsn: str) -> None:
    """An older process's claim where the trigger does not fire writes -1 while the open
    mends the table's -1 rows and adds the constraint (it commits once the open waits for
    the table its insert holds): the constraint is added, the row mended, the open goes on."""
    await _before_the_check(postgres_dsn, "('w:0', 1, 0)")
    options = conninfo_to_dict(postgres_dsn)["options"]
    older = await TrioConnection.connect(make_conninfo(
        postgres_dsn, options=f"{options} -c session_replication_role=replica"))
    store = PostgresEventStore(postgres_dsn)
    try:
        await older.execute("INSERT INTO streams VALUES ('w:1', 0, -1)")  # unseen till commit
        async with trio.open_nursery() as nursery:
            nursery.start_soon(store.open)
            await wait_for_lock_waiters(postgres_dsn, 1)  # the open waits for the table
            await older.commit()
        assert await _validated(postgres_dsn) == [(True,)]
        assert (await sql(postgres_dsn, "SELECT fence FROM streams WHERE name = 'w:1'")
                )[0][0] > 0
    finally:
        await older.close()
        await store.aclose()


async def test_between_the_two_transactions_no_row_is_left_at_minus_one(
        postgres_dsn: str) -> None:
    """The first transaction mends the -1 rows before it adds the constraint (which checks
    every later update of a row): while the second waits, an older process's append to its
    -1 row (an update of rev only, as its batch sends it) is fenced, not refused by the
    constraint (which would fail every other stream of its batch)."""
    await _before_the_check(postgres_dsn, "('w:0', 1, -1)")
    first, second = [await TrioConnection.connect(postgres_dsn) for _ in range(2)]
    store = PostgresEventStore(postgres_dsn)
    between = trio.Event()

    async def take_the_lock_between() -> None:  # queued before the open's second request
        await second.execute(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK})")
        between.set()

    try:
        await first.execute(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK})")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(store.open)
            await wait_for_lock_waiters(postgres_dsn, 1)  # the open waits for the lock
            nursery.start_soon(take_the_lock_between)
            await wait_for_lock_waiters(postgres_dsn, 2)
            await first.commit()  # the first transaction runs; then `second` holds the lock
            await between.wait()
            assert await sql(postgres_dsn, "UPDATE streams SET rev = 2 WHERE name = 'w:0' "
                                           "AND fence = -1 RETURNING rev") == []
            assert (await sql(postgres_dsn, "SELECT fence FROM streams"))[0][0] > 0
            assert await _validated(postgres_dsn) == [(False,)]
            await second.commit()
        assert await _validated(postgres_dsn) == [(True,)]
    finally:
        await first.close()
        await second.close()
        await store.aclose()


async def test_appends_go_on_while_the_check_is_validated(postgres_dsn: str) -> None:
    """A database whose constraint was added, not yet validated (a process stopped between
    the schema's two transactions): the open mends and validates, under a lock that lets
    other processes' appends and claims through while it waits or scans."""
    await _before_the_check(postgres_dsn, "('w:0', 1, -1)")
    await sql(postgres_dsn, "ALTER TABLE streams ADD CONSTRAINT streams_fence_check "
                            "CHECK (fence >= 0) NOT VALID")
    blocker = await TrioConnection.connect(postgres_dsn)
    other = await TrioConnection.connect(postgres_dsn, autocommit=True)  # one round trip
    store = PostgresEventStore(postgres_dsn)
    try:
        await blocker.execute("LOCK TABLE streams IN SHARE UPDATE EXCLUSIVE MODE")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(store.open)
            await wait_for_lock_waiters(postgres_dsn, 1)  # the validation waits
            with trio.fail_after(10):  # an append and a claim go on meanwhile
                await other.execute("INSERT INTO streams VALUES ('w:1', 1, 0); UPDATE "
                                    "streams SET fence = 7 WHERE name = 'w:1'")
            await blocker.commit()
        assert await _validated(postgres_dsn) == [(True,)]
        assert (await sql(postgres_dsn, "SELECT fence FROM streams WHERE name = 'w:0'")
                )[0][0] > 0
    finally:
        await blocker.close()
        await other.close()
        await store.aclose()


async def test_a_validation_kept_waiting_lets_the_open_go_on(
        postgres_dsn: str, caplog: pytest.LogCaptureFixture) -> None:
    """The constraint cannot be validated within the lock timeout (a VACUUM holds the lock
    it needs): the open goes on, warning; the next open validates it."""
    await _before_the_check(postgres_dsn, "('w:0', 1, 0)")
    await sql(postgres_dsn, "ALTER TABLE streams ADD CONSTRAINT streams_fence_check "
                            "CHECK (fence >= 0) NOT VALID")
    blocker = await TrioConnection.connect(postgres_dsn)
    try:
        await blocker.execute("LOCK TABLE streams IN SHARE UPDATE EXCLUSIVE MODE")
        async with PostgresEventStore(postgres_dsn) as store:
            await store.claim("w:1")
        assert [r.getMessage() for r in caplog.records if r.name == "petridish.store"] == [(
            "the fence constraint is left for the next start to validate (the schema could "
            "not be applied: a table it locks is held by another session for over 2 s (one "
            "idle in a transaction?))")]
        assert await _validated(postgres_dsn) == [(False,)]
        await blocker.commit()
        async with PostgresEventStore(postgres_dsn):
            assert await _validated(postgres_dsn) == [(True,)]
    finally:
        await blocker.close()


async def test_a_schema_that_cannot_be_applied_fails_the_open_saying_why(
        postgres_dsn: str) -> None:
    """A fence the constraint cannot take (the sequence altered to go below 0) fails the
    open as StoreUnavailable, not a driver error; mended, the next open succeeds."""
    await _before_the_check(postgres_dsn, "('w:0', 1, -1)")
    await sql(postgres_dsn, "ALTER SEQUENCE stream_fences MINVALUE -9 RESTART WITH -5")
    with pytest.raises(StoreUnavailable) as refused:
        async with PostgresEventStore(postgres_dsn):
            pass
    assert refused.value.why == ('the schema could not be applied: PostgreSQL refused it (new '
                                 'row for relation "streams" violates check constraint '
                                 '"streams_fence_check")')
    await sql(postgres_dsn, "ALTER SEQUENCE stream_fences RESTART WITH 10")
    async with PostgresEventStore(postgres_dsn):
        assert await _validated(postgres_dsn) == [(True,)]
