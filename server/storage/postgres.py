"""The shared event store: PostgreSQL, for several server processes serving the worlds.

Tables (postgres_schema.sql, applied at open): `streams (name, rev, fence)` (fences drawn
from one sequence, never twice: so the row of a stream nothing was written under can be
deleted when its claim is let go), `events (stream, rev, data text, fence)` keyed by
`(stream, rev)` (`fence`: the claim each event was written under, for audits),
`snapshots`, `receipts (stream, rev, request_id, result, caller)` (written by the
append's statement), and the ownership tables that server/storage/cluster.py uses.
`data` is text: the stored text is exactly what the server wrote (jsonb would re-render
numbers and key order).

How it talks to PostgreSQL from trio: psycopg 3's AsyncConnection with trio doing the
waiting (pg_trio.py), in this process. SCALEOUT.md names a second way, psycopg's sync API
in a writer process shaped like sqlite_writer.py; this one was picked because it was the
fastest per append there (937 vs 483-564 appends/s on one stream), LISTEN/NOTIFY runs on
the same event loop without a relay, and a cancelled read just drops its connection. The
price is two private names of psycopg, pinned and checked by tests/storage/test_pg_trio.py;
should an upgrade break them, the writer process is the fallback.

Connections: one writer connection, owned by a writer task, and a small pool (a trio
memory channel of connections) for reads, claims, snapshots and cluster.py's statements.
All run in autocommit, so one statement is one transaction. A connection is checked
before each use (a restart of PostgreSQL leaves every idle one holding its AdminShutdown:
it is dropped, unused); a pooled call whose connection breaks anyway runs once more on a
fresh one (every pooled statement may run twice). Every call is bounded: connecting by
pg_trio.CONNECT_TIMEOUT, a pooled call by `query_timeout`, a batch as below. A database
that cannot be reached is StoreUnavailable (`unavailable`, retry), never a driver error.

Group commit: `append` queues its request and parks; the writer task takes every append
waiting (at most one per stream, at most `max_batch`) and sends them as ONE statement,
which is ONE commit: it checks every stream's expected revision and fence in the
database (`UPDATE ... WHERE rev = expected AND fence = held`), inserts the events of the
streams that passed, and NOTIFYs their new revisions (pg_listen.py), all at once. A
stream that did not pass is looked up afterwards: another fence -> FencedError, another
revision -> ConflictError; the others in the batch commit regardless. If the statement
fails, every append of the batch fails with that error: after `write_timeout` the server
cancels it (QueryCanceled: nothing was written); if no connection could be opened (or
the idle one was found dead), the statement never left: StoreUnavailable, nothing
stored; if the connection is lost once the statement was handed to it, or the server
does not answer within 2 s more, the outcome is unknown (StoreUnavailable, sent): the
caller stops, and a claim + replay tells the truth.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Self, TypeVar

import psycopg
import trio
from psycopg.pq import TransactionStatus

from actors.store import (
    MAX_REV,
    ConflictError,
    Event,
    EventStore,
    FencedError,
    Receipt,
    Snapshot,
    StoredEvent,
    StoreStatistics,
    StoreUnavailable,
    check_read_bounds,
    check_receipts,
    check_stream_name,
)
from protocol.jsontext import compact_encoder
from server.storage.pg_durability import NotDurable, durable_dsn, not_durable
from server.storage.pg_listen import Notifications, listen
from server.storage.pg_statements import (
    APPEND,
    CLAIM,
    FORGET,
    SAVE_SNAPSHOT,
    SCHEMA,
    SCHEMA_LOCK,
    SCHEMA_WAIT,
    STATES,
)
from server.storage.pg_trio import TrioConnection
from server.storage.rows import stored_events

T = TypeVar("T")
log = logging.getLogger("petridish.store")
_encode = compact_encoder(ensure_ascii=True)  # ASCII: no NUL byte or encoding can differ
CHANNEL = "world_events"
UNANSWERED = 2.0  # seconds past write_timeout before the writer gives a batch up itself


class _Append:
    """One append waiting for the writer: what to write, and, once answered, the outcome."""

    __slots__ = ("error", "expected", "fence", "receipts", "result", "rows", "stream", "task")

    def __init__(self, stream: str, expected: int, fence: int, rows: list[str],
                 receipts: list[tuple[int, str, str, str]]) -> None:
        self.stream, self.expected, self.fence, self.rows = stream, expected, fence, rows
        self.receipts = receipts
        self.task = trio.lowlevel.current_task()
        self.result = 0
        self.error: BaseException | None = None


class _Slot:
    """The place of one connection (in the pool, or the writer's): None until one is
    needed; a connection found stale or broken is dropped here, and only here."""

    __slots__ = ("conn", "fresh")

    def __init__(self, conn: TrioConnection | None = None) -> None:
        self.conn = conn
        self.fresh = False  # the last `ready` opened `conn`

    async def ready(self, dsn: str) -> TrioConnection:
        """Its connection, checked before use: one the server closed while it was idle
        (`TrioConnection.reusable`) is dropped and a new one opened (`fresh`);
        StoreUnavailable when none can be."""
        self.fresh = False
        if self.conn is not None and not self.conn.reusable():
            await self.drop()
        if self.conn is None:
            self.conn = await _connect(dsn)
            self.fresh = True
        return self.conn

    async def drop_broken(self) -> bool:
        """Drop the connection if it is closed or was left inside a statement (cut short:
        its state is unknown); True when it was."""
        conn = self.conn
        if conn is None or not (
                conn.closed or conn.info.transaction_status != TransactionStatus.IDLE):
            return False
        await self.drop()
        return True

    async def drop(self) -> None:
        """Close the connection, if any (whatever is cancelled meanwhile)."""
        conn, self.conn = self.conn, None
        if conn is not None:
            with trio.CancelScope(shield=True):
                await conn.close()


class _Pool:
    """Up to `size` autocommit connections, opened when first needed, dropped when broken.

    `run(work)` is how the store and cluster.py talk to the database: `work(conn)` on a
    pooled connection, bounded by `timeout` seconds (a partition drops no packet it could
    answer: without a bound, a call would wait for TCP to give up, many minutes). An idle
    connection is checked before use (`TrioConnection.reusable`: after a restart of the
    database, a pooled connection holds its AdminShutdown); one that still breaks under
    `work` is dropped and `work` runs once more on a fresh connection (every statement
    run through the pool may run twice: reads, claims, leases). A database that cannot
    be reached, or does not answer in time, is `StoreUnavailable` (nothing stored).
    """

    def __init__(self, dsn: str, size: int, timeout: float = 30.0) -> None:
        self.dsn, self.size, self.timeout = dsn, size, timeout
        self._put, self._take = trio.open_memory_channel[TrioConnection | None](size)
        for _ in range(size):
            self._put.send_nowait(None)
        self.closed = False

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[TrioConnection]:
        """A pooled connection for the block (no retry: `run` retries)."""
        async with self._slot() as slot:
            yield await slot.ready(self.dsn)

    async def run(self, work: Callable[[TrioConnection], Awaitable[T]]) -> T:
        """`work` on a pooled connection (see the class docstring)."""
        try:
            with trio.fail_after(self.timeout):  # the wait for a connection included
                return await self._run(work)
        except trio.TooSlowError:
            raise StoreUnavailable(f"PostgreSQL did not answer within {self.timeout:g} s",
                                   sent=False) from None

    async def _run(self, work: Callable[[TrioConnection], Awaitable[T]]) -> T:
        async with self._slot() as slot:
            for attempt in (1, 2):
                conn = await slot.ready(self.dsn)
                try:
                    return await work(conn)
                except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                    if not conn.closed:
                        raise  # the statement failed, the connection is fine
                    if slot.fresh or attempt == 2:
                        raise _unreachable(exc) from exc
                    # A pooled connection that broke under `work`: once more, afresh.
            raise AssertionError("unreachable")

    @asynccontextmanager
    async def _slot(self) -> AsyncIterator[_Slot]:
        """One of the pool's places for the block; its connection goes back to the pool
        if it is still idle, else it is closed (the next user of the place connects)."""
        if self.closed:
            raise RuntimeError("the event store is closed")
        slot = _Slot(await self._take.receive())
        try:
            yield slot
        finally:
            await slot.drop_broken()
            self._put.send_nowait(slot.conn)

    async def aclose(self) -> None:
        """Wait for the connections in use to come back; close them all."""
        self.closed = True
        for _ in range(self.size):
            conn = await self._take.receive()
            if conn is not None:
                await conn.close()


async def _connect(dsn: str) -> TrioConnection:
    """A new autocommit connection (within its connect_timeout: pg_trio.CONNECT_TIMEOUT by
    default); StoreUnavailable when PostgreSQL cannot be reached."""
    try:
        return await TrioConnection.connect(dsn, autocommit=True)
    except (psycopg.OperationalError, psycopg.InterfaceError, OSError) as exc:
        raise _unreachable(exc) from exc


def rows_of(query: str, params: Any) -> Callable[[TrioConnection], Awaitable[list[Any]]]:
    """The work (for `run`) of one statement: its rows, none for a statement that has none."""
    async def work(conn: TrioConnection) -> list[Any]:
        cur = await conn.execute(query, params)
        return await cur.fetchall() if cur.description else []

    return work


async def _apply_schema(conn: TrioConnection) -> None:
    """postgres_schema.sql, one transaction per part under the advisory lock, every lock wait
    bounded: StoreUnavailable if a part fails (it changed nothing); the second's lock waits warn."""
    for second, part in enumerate(SCHEMA):
        await _schema_step(conn, f"BEGIN; SET LOCAL lock_timeout = '{SCHEMA_WAIT}s'; SELECT "
                                 f"pg_advisory_xact_lock({SCHEMA_LOCK})", f"another process "
                                 f"has held its lock for over {SCHEMA_WAIT} s (stuck?)")
        try:
            await _schema_step(conn, f"SET LOCAL lock_timeout = '2s'; {part}\nCOMMIT;",
                               "a table it locks is held by another session for over 2 s "
                               "(one idle in a transaction?)")
        except StoreUnavailable as exc:  # (the first part keeps new fences positive)
            if not (second and isinstance(exc.__cause__, psycopg.errors.LockNotAvailable)):
                raise
            await conn.execute("ROLLBACK")
            log.warning("the fence constraint is left for the next start to validate (%s)", exc.why)


async def _schema_step(conn: TrioConnection, statements: str, held_too_long: str) -> None:
    """`statements` of the schema; StoreUnavailable saying why if they fail."""
    try:
        await conn.execute(statements)
    except psycopg.errors.LockNotAvailable as exc:
        why = f"the schema could not be applied: {held_too_long}"
        raise StoreUnavailable(why, sent=False) from exc
    except psycopg.Error as exc:
        if conn.closed:
            raise _unreachable(exc) from exc
        raise StoreUnavailable(f"the schema could not be applied: PostgreSQL refused "
                               f"it ({_first_line(exc)})", sent=False) from exc


def _first_line(exc: Exception) -> str:
    """The first line of `exc`'s message (its class name if it has none)."""
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _unreachable(exc: Exception) -> StoreUnavailable:
    """What a call refused by a lost or impossible connection raises (nothing stored)."""
    return StoreUnavailable(f"PostgreSQL cannot be reached: {_first_line(exc)}", sent=False)


def _own(exc: Exception) -> Exception:
    """One append's instance of its batch's failure `exc`, which is never raised itself: one
    instance raised in the tasks of every append would chain their tracebacks into one
    another's. Not chained to `exc`: its traceback holds the writer's frames and so the
    batch, whose appends hold their errors (a cycle). Copied without its class's
    `__init__` (whose arguments are not always its `args`: a ProtocolError's are not)."""
    try:
        own = type(exc).__new__(type(exc), *exc.args)
        own.__dict__.update({k: v.copy() if type(v) in (dict, list) else v  # (a detail)
                             for k, v in exc.__dict__.items()})
        if str(own) != str(exc):  # state kept outside its __dict__ (an OSError's errno)
            raise TypeError("not copied whole")
    except Exception:  # noqa: BLE001 - a class that cannot be copied so
        own = RuntimeError(f"the event store's batch failed: {exc!r}")
    own.__cause__ = exc.__cause__
    return own


class PostgresEventStore(EventStore):
    """An EventStore in a PostgreSQL database; use `async with` or `open`/`aclose`.

    `dsn` is a libpq connection string or URI (host names are resolved off the event loop;
    the schema is the search_path's); every connection adds `synchronous_commit=on` to its
    options (`durable_dsn`), and `open` refuses what `not_durable` names (fsync off).
    `readers` is the pool's size. `channel` is the NOTIFY channel of this store's appends
    (one per database that several clusters share). `write_timeout` bounds one batch's
    statement, `query_timeout` any other call (seconds; a long stream's read included).
    """

    def __init__(self, dsn: str, *, readers: int = 2, channel: str = CHANNEL,
                 max_batch: int = 512, write_timeout: float = 10.0,
                 query_timeout: float = 30.0) -> None:
        self.dsn, self.channel = durable_dsn(dsn), channel
        self.max_batch, self.write_timeout = max_batch, write_timeout
        self.settings: dict[str, str] = {}  # the server's fsync and synchronous_commit
        self._pool = _Pool(self.dsn, readers, query_timeout)
        self._writer = _Slot()
        self._writer_pids: set[int] = set()  # the backend that sends our NOTIFYs
        self._queue: deque[_Append] = deque()
        self._inflight: list[_Append] = []  # the batch being committed
        self._queued = trio.lowlevel.ParkingLot()  # the writer task waits here
        self._writer_done = trio.Event()
        self._sending = False  # the batch's statement has been handed to the connection
        self._fences: dict[str, int] = {}  # stream -> fence this client claimed
        self._state = "new"  # -> open -> closing -> closed
        self._appends = self._commits = self._events = self._fenced = 0

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Check that commits are durable (NotDurable: `not_durable`), apply the schema
        (StoreUnavailable, saying why, if it cannot be: open may be tried again), start the
        writer task (idempotent)."""
        if self._state != "new":
            return
        async with self._pool.connection() as conn:
            cur = await conn.execute("SELECT current_setting('fsync'), "
                                     "current_setting('synchronous_commit')")
            row = await cur.fetchone()
            assert row is not None
            self.settings = {"fsync": row[0], "synchronous_commit": row[1]}
            if (refusal := not_durable(*row)) is None:
                await _apply_schema(conn)
        if refusal is not None:
            await self._pool.aclose()
            raise NotDurable(refusal)
        self._state = "open"
        trio.lowlevel.spawn_system_task(self._write_batches, name="postgres-writer")

    async def aclose(self) -> None:
        """Let the writer finish the queued appends, then close every connection."""
        if self._state != "open":
            return
        self._state = "closing"
        self._queued.unpark_all()
        await self._writer_done.wait()
        await self._pool.aclose()
        self._state = "closed"

    def connection(self) -> AbstractAsyncContextManager[TrioConnection]:
        """A pooled autocommit connection for the block (checked, never retried)."""
        return self._pool.connection()

    async def run(self, work: Callable[[TrioConnection], Awaitable[T]]) -> T:
        """`work(conn)` on a pooled connection, bounded by `query_timeout`, once more on a
        fresh connection if the pooled one broke; StoreUnavailable when PostgreSQL cannot
        be reached (`_Pool.run`; cluster.py's statements go through here too)."""
        return await self._pool.run(work)

    def listen(self, *, own: bool = False) -> AbstractAsyncContextManager[Notifications]:
        """Notifications of the streams that moved, on a connection of their own.

        `async with store.listen() as notes: async for moved in notes:` where `moved`
        maps every stream appended to since the last batch to its latest revision
        (`store.read(stream, after=last_rev)` fetches the events). LISTEN is in force
        once the `async with` is entered. Without `own`, this store's own appends are
        left out (its process already has them). If the connection is lost, iterating
        raises: notifications may have been missed, so listen again and read after the
        last revision of every stream followed.
        """
        return listen(self.dsn, self.channel, self._writer_pids, deliver_own=own)

    # ---- the writer task ----------------------------------------------------------------

    async def _write_batches(self) -> None:
        """Take every append waiting, commit them as one batch, answer them; repeat."""
        try:
            while True:
                while not self._queue:
                    if self._state != "open":
                        return
                    await self._queued.park()
                batch = self._inflight = self._take_batch()
                try:
                    await self._commit(batch)
                except Exception as exc:  # noqa: BLE001 - each caller raises its own
                    exc = await self._batch_failed(exc)
                    for a in batch:
                        if a.error is None:
                            a.error = _own(exc)
                self._inflight = []
                for a in batch:
                    trio.lowlevel.reschedule(a.task)
        finally:
            for a in [*self._inflight, *self._queue]:  # cancelled: the run is ending
                a.error = RuntimeError("the event store's writer stopped; outcome unknown")
                trio.lowlevel.reschedule(a.task)
            self._inflight = []
            self._queue.clear()
            await self._writer.drop()
            self._writer_done.set()

    async def _batch_failed(self, exc: Exception) -> Exception:
        """What each append of a batch that failed with `exc` raises."""
        sent, self._sending = self._sending, False
        lost = await self._writer.drop_broken()
        if isinstance(exc, StoreUnavailable):  # no connection: the batch never left
            return exc
        slow = isinstance(exc, trio.TooSlowError)
        if not sent:  # lost while connecting or setting up: the batch never left
            if lost or slow or isinstance(exc, psycopg.OperationalError):
                return _unreachable(exc) if not slow else StoreUnavailable(
                    "no connection to PostgreSQL in time", sent=False)
            return exc
        if lost or slow:
            # Sent, the statement may have committed: no caller may be told that it
            # failed (a claim and a replay will tell).
            why = (f"no answer within {self.write_timeout + UNANSWERED:g} s" if slow
                   else "its connection to PostgreSQL was lost")
            return StoreUnavailable(why, sent=True)
        return exc

    def _take_batch(self) -> list[_Append]:
        """The oldest append of each stream waiting (others stay queued, in order)."""
        batch: list[_Append] = []
        later: list[_Append] = []
        streams: set[str] = set()
        while self._queue and len(batch) < self.max_batch:
            a = self._queue.popleft()
            (later if a.stream in streams else batch).append(a)
            streams.add(a.stream)
        self._queue.extendleft(reversed(later))
        return batch

    async def _commit(self, batch: list[_Append]) -> None:
        """One statement, one commit for `batch`; sets each append's result or error."""
        params: dict[str, Any] = {"s": [], "x": [], "n": [], "f": [], "es": [], "er": [],
                                  "ed": [], "rs": [], "rr": [], "rc": [], "ri": [], "rd": [],
                                  "channel": self.channel}
        for a in batch:
            params["s"].append(a.stream)
            params["x"].append(a.expected)
            params["n"].append(len(a.rows))
            params["f"].append(a.fence)
            params["es"].extend([a.stream] * len(a.rows))
            params["er"].extend(range(a.expected + 1, a.expected + 1 + len(a.rows)))
            params["ed"].extend(a.rows)
            for rev, caller, request_id, text in a.receipts:
                params["rs"].append(a.stream)
                params["rr"].append(rev)
                params["rc"].append(caller)
                params["ri"].append(request_id)
                params["rd"].append(text)
        self._sending = False
        with trio.fail_after(self.write_timeout + UNANSWERED):
            writer = await self._writer.ready(self.dsn)  # (closed while idle: none sent)
            if self._writer.fresh:
                self._writer_pids.clear()  # in place: listeners hold this set
                self._writer_pids.add(writer.info.backend_pid)
                await writer.execute(f"SET statement_timeout = "
                                     f"{round(self.write_timeout * 1000)}")
            self._sending = True  # from here, the batch may have reached the server
            cur = await writer.execute(APPEND, params)
            moved = {name: rev for name, rev in await cur.fetchall() if name is not None}
            self._commits += bool(moved)  # as SQLite counts: commits that wrote
            refused = [a for a in batch if a.stream not in moved]
            truth: dict[str, tuple[int, int]] = {}
            if refused:
                cur = await writer.execute(STATES, ([a.stream for a in refused],))
                truth = {name: (rev, fence) for name, rev, fence in await cur.fetchall()}
        for a in batch:
            if a.stream in moved:
                a.result = moved[a.stream]
                self._events += len(a.rows)
                continue
            rev, fence = truth.get(a.stream, (0, 0))
            if fence != a.fence:
                self._fenced += 1
                a.error = FencedError(a.stream, a.fence, fence)
            else:
                a.error = ConflictError(a.stream, a.expected, rev)

    # ---- the EventStore interface -------------------------------------------------------

    async def append(self, stream: str, expected_rev: int, events: Sequence[Event],
                     receipts: Sequence[Receipt] = (), sizes: list[int] | None = None) -> int:
        """See EventStore.append; commits with every other append waiting (group commit)."""
        check_stream_name(stream)
        check_receipts(expected_rev, len(events), receipts)
        rows = [_encode(e) for e in events]
        if sizes is not None:  # (ASCII: a character is a byte)
            sizes.extend(map(len, rows))
        kept = [(r.rev, r.caller, r.request_id, _encode(r.result)) for r in receipts]
        if self._state != "open":
            raise RuntimeError(f"the event store is {self._state}, not open")
        self._appends += 1
        append = _Append(stream, expected_rev, self._fences.get(stream, 0), rows, kept)
        self._queue.append(append)
        self._queued.unpark()
        # Not cancellable once queued: it may commit, and the caller must learn it did.
        await trio.lowlevel.wait_task_rescheduled(lambda _: trio.lowlevel.Abort.FAILED)
        error, result, append = append.error, append.result, None
        if error is not None:
            try:
                raise error
            finally:  # raised from a name, it would hold its traceback's frame (a cycle)
                error = None
        return result

    async def claim(self, stream: str) -> tuple[int, int]:
        """See EventStore.claim (run again after a lost connection: one more fence)."""
        check_stream_name(stream)
        try:
            (row,) = await self._fetch(CLAIM, (stream,))  # the upsert always returns its row
        except psycopg.errors.RaiseException as exc:  # the schema's claimed_fence: undone
            raise RuntimeError(f"stream {stream!r} was not claimed: {_first_line(exc)}"
                               ) from exc
        fence, rev = row
        self._fences[stream] = fence
        return fence, rev

    async def unclaim(self, stream: str) -> None:
        """See EventStore.unclaim: a stream nothing was written under loses its row too
        (its fences are never given out again), unless another claim took it since."""
        fence = self._fences.pop(stream, None)
        if fence is None:
            return
        try:
            await self._fetch(FORGET, (stream, fence))
        except StoreUnavailable:
            pass  # the row stays: ~150 bytes, harmless (its next claim reuses it)
        except Exception:  # a statement error, a closed store: the row stays too
            log.exception("the empty row of %s could not be deleted", stream)

    async def read(self, stream: str, after: int = 0, upto: int | None = None
                   ) -> list[StoredEvent]:
        """See EventStore.read."""
        return await stored_events(await self.read_rows(stream, after, upto))

    async def read_rows(self, stream: str, after: int = 0, upto: int | None = None
                        ) -> list[tuple[int, str]]:
        """See EventStore.read_rows (one indexed range scan of `(stream, rev)`)."""
        check_read_bounds(after, upto)
        return await self._fetch("SELECT rev, data FROM events WHERE stream = %s "
                                 "AND rev > %s AND rev <= %s ORDER BY rev",
                                 (stream, after, MAX_REV if upto is None else upto))

    async def receipts(self, stream: str, after: int = 0) -> list[Receipt]:
        """See EventStore.receipts."""
        rows = await self._fetch("SELECT rev, caller, request_id, result FROM receipts "
                                 "WHERE stream = %s AND rev > %s ORDER BY rev", (stream, after))
        return [Receipt(rev, caller, request_id, json.loads(text))
                for rev, caller, request_id, text in rows]

    async def forget_receipts(self, stream: str, upto: int) -> None:
        """See EventStore.forget_receipts."""
        await self._fetch("DELETE FROM receipts WHERE stream = %s AND rev <= %s",
                          (stream, upto))

    async def revision(self, stream: str) -> int:
        """See EventStore.revision."""
        rows = await self._fetch("SELECT rev FROM streams WHERE name = %s", (stream,))
        return rows[0][0] if rows else 0

    async def save_snapshot(self, stream: str, rev: int, data: Any) -> None:
        """See EventStore.save_snapshot."""
        await self._fetch(SAVE_SNAPSHOT, (stream, rev, _encode(data)))

    async def load_snapshot(self, stream: str) -> Snapshot | None:
        """See EventStore.load_snapshot."""
        rows = await self._fetch("SELECT rev, data FROM snapshots WHERE stream = %s",
                                 (stream,))
        return Snapshot(rows[0][0], json.loads(rows[0][1])) if rows else None

    async def streams(self, prefix: str = "") -> dict[str, int]:
        """See EventStore.streams."""
        return dict(await self._fetch("SELECT name, rev FROM streams WHERE rev > 0 "
                                      "AND starts_with(name, %s) ORDER BY name", (prefix,)))

    async def _fetch(self, query: str, params: Any) -> list[Any]:
        """The rows of one statement on a pooled connection (`run`)."""
        return await self.run(rows_of(query, params))

    def statistics(self) -> StoreStatistics:
        """Appends requested, commits (one per batch), events written, appends fenced."""
        return StoreStatistics(self._appends, self._commits, self._events, self._fenced)
