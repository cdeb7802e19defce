"""The embedded event store: one SQLite database (WAL, synchronous=FULL) in the data directory.

All SQL runs on one worker thread that owns the connection. Trio tasks hand it jobs
through a queue and wait for a completion. The worker takes every job that is waiting
when it wakes: a run of consecutive appends becomes ONE transaction (one fsync). This
group commit is why durability does not cost one fsync per message.

The worker checks each append's expected revision against its own cache of stream
revisions (it is the only writer), refuses the stale ones with ConflictError, and writes
the rest with two statements whose rows arrive as one JSON array (`json_each`), then
wakes all the group's callers with one call into trio. Why: the sqlite3 module releases
the GIL around every row it steps, and a busy trio thread keeps the worker waiting up to
the interpreter's switch interval (5 ms) each time it wants the GIL back; per-row calls
made a group of 20 appends cost 100 ms under load. If the transaction itself fails,
every append of that group fails with the error.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self

import attrs
import trio

from actors.store import ConflictError, Event, EventStore, Snapshot, StoredEvent, StoreStatistics

_SCHEMA = """
CREATE TABLE IF NOT EXISTS streams (name TEXT PRIMARY KEY, rev INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
    stream TEXT NOT NULL, rev INTEGER NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (stream, rev)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots (
    stream TEXT PRIMARY KEY, rev INTEGER NOT NULL, data TEXT NOT NULL) WITHOUT ROWID;
"""
_MAX_GROUP = 512  # appends per transaction: bounds the latency of the first one in a group
# Rows arrive as a JSON array of [stream, rev, data-as-JSON-text]: data stays the exact text
# Python wrote (SQLite re-rendering it could turn a big integer into a float).
_INSERT_EVENTS = ("INSERT INTO events (stream, rev, data) SELECT json_extract(value, '$[0]'), "
                  "json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?)")
_UPSERT_STREAMS = ("INSERT INTO streams (name, rev) SELECT json_extract(value, '$[0]'), "
                   "json_extract(value, '$[1]') FROM json_each(?) WHERE true "
                   "ON CONFLICT (name) DO UPDATE SET rev = excluded.rev")


@attrs.frozen
class _Append:
    stream: str
    expected: int
    rows: list[str]  # the events as JSON text


@attrs.define
class _Job:
    """One call waiting for the worker: an append, or `run(conn)`; `task` is its caller."""

    run: Callable[[sqlite3.Connection], Any] | _Append
    token: trio.lowlevel.TrioToken
    task: trio.lowlevel.Task
    result: Any = None
    error: BaseException | None = None
    abandoned: bool = False  # the caller was cancelled (reads only) and is gone

    def finish(self) -> None:
        """Wake the caller (from the worker thread)."""
        self.token.run_sync_soon(_wake, [self])


def _finish_all(jobs: list[_Job]) -> None:
    """Wake every job's caller with one call per trio run (usually one in all)."""
    by_token: dict[trio.lowlevel.TrioToken, list[_Job]] = {}
    for job in jobs:
        by_token.setdefault(job.token, []).append(job)
    for token, waiting in by_token.items():
        token.run_sync_soon(_wake, waiting)


def _wake(jobs: list[_Job]) -> None:
    for job in jobs:
        if not job.abandoned:
            trio.lowlevel.reschedule(job.task)


_STOP = object()
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)  # one, not one per call


class SqliteEventStore(EventStore):
    """An EventStore in `<data_dir>/events.sqlite3`; use `async with` or call `aclose`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._appends = self._commits = self._events = 0

    @classmethod
    def in_directory(cls, data_dir: str | Path) -> SqliteEventStore:
        """The store of a data directory (created if missing)."""
        Path(data_dir).mkdir(parents=True, exist_ok=True)
        return cls(Path(data_dir) / "events.sqlite3")

    async def __aenter__(self) -> Self:
        self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def open(self) -> None:
        """Open the database and start the worker thread (idempotent)."""
        if self._thread is not None:
            return
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.executescript(_SCHEMA)
        self._thread = threading.Thread(target=self._work, args=(conn,), daemon=True,
                                        name=f"sqlite:{self.path.name}")
        self._thread.start()

    async def aclose(self) -> None:
        """Finish the queued jobs, stop the worker and close the database."""
        if self._thread is None:
            return
        self._jobs.put(_STOP)
        await trio.to_thread.run_sync(self._thread.join)
        self._thread = None

    # ---- the worker thread ----------------------------------------------------------------

    def _work(self, conn: sqlite3.Connection) -> None:
        revs: dict[str, int] = {}  # stream -> revision, as committed
        try:
            while True:
                batch = [self._jobs.get()]
                while len(batch) < _MAX_GROUP:
                    try:
                        batch.append(self._jobs.get_nowait())
                    except queue.Empty:
                        break
                stop = any(job is _STOP for job in batch)
                jobs = [job for job in batch if job is not _STOP]
                i = 0
                while i < len(jobs):  # consecutive appends share one transaction
                    j = i
                    while j < len(jobs) and isinstance(jobs[j].run, _Append):
                        j += 1
                    if j > i:
                        self._commit_group(conn, jobs[i:j], revs)
                        i = j
                    else:
                        self._run_one(conn, jobs[i])
                        i += 1
                if stop:
                    return
        finally:
            conn.close()

    def _run_one(self, conn: sqlite3.Connection, job: _Job) -> None:
        try:
            job.result = job.run(conn)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting task, which raises it
            job.error = exc
        job.finish()

    def _commit_group(self, conn: sqlite3.Connection, group: list[_Job],
                      revs: dict[str, int]) -> None:
        staged: dict[str, int] = {}  # revisions after this group
        rows: list[tuple[str, int, str]] = []
        accepted: list[_Job] = []
        for job in group:
            append = job.run
            assert isinstance(append, _Append)
            current = staged.get(append.stream)
            if current is None:
                current = revs.get(append.stream)
            if current is None:
                row = conn.execute("SELECT rev FROM streams WHERE name = ?",
                                   (append.stream,)).fetchone()
                current = revs[append.stream] = row[0] if row else 0
            if current != append.expected:
                job.error = ConflictError(append.stream, append.expected, current)
                continue
            rows.extend((append.stream, append.expected + i, text)
                        for i, text in enumerate(append.rows, 1))
            job.result = staged[append.stream] = append.expected + len(append.rows)
            accepted.append(job)
        if accepted:
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(_INSERT_EVENTS, (json.dumps(rows),))
                conn.execute(_UPSERT_STREAMS, (json.dumps(list(staged.items())),))
                conn.execute("COMMIT")
                self._commits += 1
                revs.update(staged)
            except Exception as exc:  # noqa: BLE001 - the whole group failed; each caller raises it
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                revs.clear()  # the database is the truth again
                for job in accepted:
                    job.result, job.error = None, exc
        _finish_all(group)

    # ---- the trio side --------------------------------------------------------------------

    async def _call(self, run: Callable[[sqlite3.Connection], Any] | _Append) -> Any:
        if self._thread is None:
            raise RuntimeError("the event store is not open")
        job = _Job(run, trio.lowlevel.current_trio_token(), trio.lowlevel.current_task())
        self._jobs.put(job)

        def abort(_: Any) -> trio.lowlevel.Abort:
            if isinstance(run, _Append):
                # Once queued, an append may commit: its caller must learn the outcome.
                return trio.lowlevel.Abort.FAILED
            job.abandoned = True
            return trio.lowlevel.Abort.SUCCEEDED

        # Parked until the worker wakes us (no Event, no cancel scope: this is per append).
        await trio.lowlevel.wait_task_rescheduled(abort)
        if job.error is not None:
            raise job.error
        return job.result

    async def append(self, stream: str, expected_rev: int, events: Sequence[Event]) -> int:
        """See EventStore.append; groups with the appends queued beside it."""
        rows = [_ENCODER.encode(e) for e in events]
        self._appends += 1

        rev = await self._call(_Append(stream, expected_rev, rows))
        self._events += len(rows)
        return rev

    async def read(self, stream: str, after: int = 0) -> list[StoredEvent]:
        """See EventStore.read."""
        def run(conn: sqlite3.Connection) -> list[StoredEvent]:
            cur = conn.execute("SELECT rev, data FROM events WHERE stream = ? AND rev > ? "
                               "ORDER BY rev", (stream, after))
            return [StoredEvent(rev, json.loads(data)) for rev, data in cur]

        return await self._call(run)

    async def revision(self, stream: str) -> int:
        """See EventStore.revision."""
        def run(conn: sqlite3.Connection) -> int:
            row = conn.execute("SELECT rev FROM streams WHERE name = ?", (stream,)).fetchone()
            return row[0] if row else 0

        return await self._call(run)

    async def save_snapshot(self, stream: str, rev: int, data: Any) -> None:
        """See EventStore.save_snapshot (its own small transaction)."""
        text = _ENCODER.encode(data)

        def run(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO snapshots (stream, rev, data) VALUES (?, ?, ?) "
                         "ON CONFLICT (stream) DO UPDATE SET rev = excluded.rev, "
                         "data = excluded.data", (stream, rev, text))

        await self._call(run)

    async def load_snapshot(self, stream: str) -> Snapshot | None:
        """See EventStore.load_snapshot."""
        def run(conn: sqlite3.Connection) -> Snapshot | None:
            row = conn.execute("SELECT rev, data FROM snapshots WHERE stream = ?",
                               (stream,)).fetchone()
            return Snapshot(row[0], json.loads(row[1])) if row else None

        return await self._call(run)

    async def streams(self, prefix: str = "") -> dict[str, int]:
        """See EventStore.streams."""
        def run(conn: sqlite3.Connection) -> dict[str, int]:
            cur = conn.execute("SELECT name, rev FROM streams WHERE substr(name, 1, ?) = ? "
                               "AND rev > 0 ORDER BY name", (len(prefix), prefix))
            return dict(cur.fetchall())

        return await self._call(run)

    def statistics(self) -> StoreStatistics:
        """Appends requested, transactions committed (one per group), events written."""
        return StoreStatistics(self._appends, self._commits, self._events)
