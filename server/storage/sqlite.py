"""The embedded event store: one SQLite database (WAL, synchronous=FULL) in the data directory.

All SQL runs in one writer process (server/storage/sqlite_writer.py) that owns the
connection; why a process and not a thread is told there. A trio task hands it a job by
queueing it for a sender task, which writes all the jobs queued meanwhile as one frame to
the writer's stdin, and parks; a reader task wakes the callers as the answers arrive on
the writer's stdout. The writer takes every
job that is waiting when it looks: a run of consecutive appends becomes ONE transaction
(one fsync), inside which it checks each append's fence and expected revision against the
database and refuses stale ones (FencedError, ConflictError). This group commit is
why durability does not cost one fsync per message. If the transaction itself fails,
every append of that group fails with the error; a full disk fails them with
`StoreUnavailable` (nothing stored: the transaction rolled back), which a world answers
`unavailable` instead of counting a crash.

One server process owns every stream of its file, so fences matter here only between two
clients of one file (each `SqliteEventStore` is one, with its own writer process); they
work as on PostgreSQL, and nothing above the interface needs to know which it has.

The writer dies with the server (Linux parent-death signal) and stops at the end of its
input. A writer that exits unexpectedly fails every waiting call with `StoreUnavailable`
(an append it had received may or may not have committed), and every later call at once,
until a new writer is started (after RESTART_DELAY, doubling per failure): while it is
down `healthy` is False. More than MAX_RESTARTS deaths within RESTART_WINDOW seconds and
the store gives up (`gave_up` is set): the server then exits non-zero for a supervisor.
The database files are private to the server's user (the writer runs under umask 077).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self

import trio

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
from server.storage import sqlite_writer
from server.storage.rows import stored_events
from server.storage.sqlite_writer import frame, split_frames

_encode = compact_encoder(ensure_ascii=True)
log = logging.getLogger("petridish.store")
RESTART_DELAY = 0.1  # seconds before the first restart of a dead writer; doubles per death
MAX_RESTARTS = 5  # more deaths than this within RESTART_WINDOW seconds: the store gives up
RESTART_WINDOW = 60.0
DISK_FULL = "database or disk is full"  # SQLite's SQLITE_FULL: the transaction rolled back
RECEIVE = 1 << 16  # bytes of the writer's answers read at once


class _Job:
    """One call waiting for its answer: the parked task and, once answered, the outcome."""

    __slots__ = ("abandoned", "error", "result", "task")

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task = task
        self.result: Any = None
        self.error: BaseException | None = None
        self.abandoned = False  # the caller was cancelled (reads only) and is gone


async def _receive(fd: int) -> bytes:
    """The next bytes the writer wrote to the pipe `fd` (non-blocking), b"" at its end:
    one task step a read (a trio `FdStream` takes two: a checkpoint, then the wait)."""
    while True:
        await trio.lowlevel.wait_readable(fd)
        try:
            return os.read(fd, RECEIVE)
        except BlockingIOError:
            continue


class SqliteEventStore(EventStore):
    """An EventStore in `<data_dir>/events.sqlite3`; use `async with` or `open`/`aclose`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.settings: dict[str, Any] = {}  # the writer's journal_mode and synchronous
        self._proc: subprocess.Popen[bytes] | None = None
        self._to_writer = -1  # our end of its stdin (non-blocking)
        self._from_writer = -1  # our end of its stdout (non-blocking)
        self._outgoing: list[tuple[int, str, tuple[Any, ...]]] = []  # jobs not yet written
        self._jobs_queued = trio.lowlevel.ParkingLot()  # the sender task waits here
        self._sender = trio.CancelScope()
        self._restarter = trio.CancelScope()
        self._waiting: dict[int, _Job] = {}
        self._next_id = 0
        self._broken: str | None = None  # why calls fail, while the writer is gone
        self._reader_done = trio.Event()
        self._closing = False
        self._deaths: deque[float] = deque()  # when the writer died, within RESTART_WINDOW
        self.restarts = 0  # writers started again after one died
        self.gave_up = trio.Event()  # set once the writer died too often to start again
        # Told ("died" | "restarted" | "gave_up", why) as it happens (the server traces it).
        self.on_writer: Callable[[str, str], None] = lambda _what, _why: None
        self._fences: dict[str, int] = {}  # stream -> fence this client claimed
        self._appends = self._commits = self._events = self._fenced = 0

    @classmethod
    def in_directory(cls, data_dir: str | Path) -> SqliteEventStore:
        """The store of a data directory (created if missing, private to this user)."""
        Path(data_dir).mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(data_dir, 0o700)
        return cls(Path(data_dir) / "events.sqlite3")

    @property
    def healthy(self) -> bool:
        """True while writes can be made durable (the writer runs)."""
        return self._proc is not None and self._broken is None

    @property
    def trouble(self) -> str | None:
        """Why writes cannot be made durable now, or None."""
        if self._proc is None:
            return "the store is not open"
        return None if self._broken is None else f"its writer {self._broken}"

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Start the writer process and wait for its settings (idempotent)."""
        if self._proc is None:
            await self._start_writer()

    async def _start_writer(self) -> None:
        """Start a writer, wait for its hello, then serve calls through it."""
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        try:
            # Started from this (the trio) thread: the parent-death signal follows the
            # thread that forked, and trio's worker threads come and go.
            proc = subprocess.Popen(  # noqa: ASYNC220 - see above; it takes ms
                [sys.executable, "-s", sqlite_writer.__file__, str(self.path), str(os.getpid())],
                stdin=stdin_r, stdout=stdout_w, close_fds=True)
        finally:
            os.close(stdin_r)
            os.close(stdout_w)
        os.set_blocking(stdin_w, False)
        os.set_blocking(stdout_r, False)
        buffer = bytearray()
        try:
            while not (frames := split_frames(buffer)):
                chunk = await _receive(stdout_r)
                if not chunk:
                    raise RuntimeError(f"the event store's writer for {self.path} did not "
                                       f"start (exit code {proc.wait()})")
                buffer += chunk
        except BaseException:  # failed or cancelled before the writer said hello
            proc.kill()
            proc.wait()
            os.close(stdin_w)
            os.close(stdout_r)
            raise
        self._proc, self._to_writer, self._from_writer = proc, stdin_w, stdout_r
        self.settings = frames[0]
        self._reader_done = trio.Event()
        self._sender = trio.CancelScope()
        self._broken = None
        trio.lowlevel.spawn_system_task(self._read_answers, buffer,
                                        name=f"sqlite-answers:{self.path.name}")
        trio.lowlevel.spawn_system_task(self._send_jobs, name=f"sqlite-jobs:{self.path.name}")

    async def aclose(self) -> None:
        """Let the writer finish the queued jobs, then stop it."""
        if self._proc is None:
            return
        self._closing = True
        self._restarter.cancel()
        if self._broken is None:
            self._queue((0, "stop", ()))
        await self._reader_done.wait()
        self._sender.cancel()
        if self._to_writer >= 0:
            os.close(self._to_writer)
            self._to_writer = -1
        await trio.to_thread.run_sync(self._proc.wait)
        self._proc = None

    # ---- talking to the writer ----------------------------------------------------------

    async def _read_answers(self, buffer: bytearray) -> None:
        """Wake each caller as its answer arrives; when the writer ends, fail them all and
        (unless the store is closing) start another."""
        assert self._from_writer >= 0 and self._proc is not None
        ended = False  # the writer's output ended (not the run being cancelled)
        try:
            while chunk := await _receive(self._from_writer):
                buffer += chunk
                for commits, answers in split_frames(buffer):
                    self._commits += commits
                    for job_id, ok, value in answers:
                        self._answer(job_id, ok, value)
            ended = True
        except Exception as exc:  # noqa: BLE001 - a system task must not raise
            self._broken = f"could not be read ({exc!r})"
            ended = True
        finally:
            self._broken = self._broken or "stopped"
            # Jobs not yet written are dropped with the rest: a new writer must never
            # commit an append whose caller was told it failed.
            self._outgoing = []
            for job_id in list(self._waiting):
                self._answer(job_id, False, self._gone(sent=True))
            trio.lowlevel.notify_closing(self._from_writer)
            os.close(self._from_writer)
            self._from_writer = -1
            self._reader_done.set()
            if ended and not self._closing:
                self._sender.cancel()
                log.warning("the event store's writer %s; writes answer unavailable until "
                            "it is started again", self._broken)
                self.on_writer("died", self._broken)
                self._restarter = trio.CancelScope()
                trio.lowlevel.spawn_system_task(self._restart,
                                                name=f"sqlite-restart:{self.path.name}")

    async def _restart(self) -> None:
        """Start a new writer after the last one died, with a growing delay; give up
        (`gave_up`) after MAX_RESTARTS deaths within RESTART_WINDOW seconds."""
        try:
            await self._restart_until_up()
        except Exception:  # a system task must not raise: give up, the server exits
            log.exception("the event store's writer could not be started again")
            self.on_writer("gave_up", "restarting it failed")
            self.gave_up.set()

    async def _restart_until_up(self) -> None:
        with self._restarter:
            while True:
                now = trio.current_time()
                self._deaths.append(now)
                while self._deaths[0] < now - RESTART_WINDOW:
                    self._deaths.popleft()
                if len(self._deaths) > MAX_RESTARTS:
                    why = f"died {len(self._deaths)} times in {RESTART_WINDOW:g} s"
                    log.error("the event store's writer %s; giving up", why)
                    self.on_writer("gave_up", why)
                    self.gave_up.set()
                    return
                await trio.sleep(RESTART_DELAY * 2 ** (len(self._deaths) - 1))
                assert self._proc is not None
                self._proc.kill()  # it may have closed its output without exiting
                code = await trio.to_thread.run_sync(self._proc.wait)
                log.warning("the event store's writer exited with code %s", code)
                if self._to_writer >= 0:
                    os.close(self._to_writer)
                    self._to_writer = -1
                try:
                    await self._start_writer()
                except Exception as exc:  # noqa: BLE001 - counted as a death; try again
                    self._broken = f"could not be started again ({exc})"
                    log.warning("the event store's writer %s", self._broken)
                    continue
                self.restarts += 1
                log.warning("the event store's writer was started again (restart %d)",
                            self.restarts)
                self.on_writer("restarted", "")
                return

    def _answer(self, job_id: int, ok: bool, value: Any) -> None:
        job = self._waiting.pop(job_id)
        if ok:
            job.result = value
        elif isinstance(value, tuple) and value[0] == "fenced":  # (_, stream, held, current)
            self._fenced += 1
            job.error = FencedError(*value[1:])
        elif isinstance(value, tuple):  # ("conflict", stream, expected, actual)
            job.error = ConflictError(*value[1:])
        elif isinstance(value, sqlite3.OperationalError) and DISK_FULL in str(value):
            job.error = StoreUnavailable("the disk is full", sent=False)  # rolled back
        else:
            job.error = value
        if not job.abandoned:
            trio.lowlevel.reschedule(job.task)

    def _gone(self, *, sent: bool) -> StoreUnavailable:
        return StoreUnavailable(f"its writer {self._broken}", sent=sent)

    def _queue(self, job: tuple[int, str, tuple[Any, ...]]) -> None:
        self._outgoing.append(job)
        if self._jobs_queued:
            self._jobs_queued.unpark()

    async def _send_jobs(self) -> None:
        """Write the queued jobs to the writer, all that queued meanwhile in one frame.

        One write per pass of the scheduler rather than one per job: a write that wakes
        the writer process costs the trio thread far more than the frame itself.
        """
        pending = bytearray()
        fd = self._to_writer
        with self._sender:
            while True:
                if not pending:
                    while not self._outgoing:
                        await self._jobs_queued.park()
                    pending += frame(self._outgoing)
                    self._outgoing = []
                try:
                    del pending[:os.write(fd, pending)]
                except BlockingIOError:
                    pass
                except OSError as exc:  # the writer is gone; the reader fails the callers
                    self._broken = self._broken or f"could not be written to ({exc!r})"
                    return
                if pending:
                    await trio.lowlevel.wait_writable(fd)

    async def _call(self, op: str, *args: Any, cancellable: bool = True) -> Any:
        """Run `op` in the writer and return its answer.

        A cancelled caller of a `cancellable` job stops waiting (the job still runs); an
        append is not cancellable: once queued it may commit, and its caller must learn
        the outcome. While the writer is down every call raises StoreUnavailable at once.
        """
        if self._proc is None:
            raise RuntimeError("the event store is not open")
        if self._broken is not None:
            raise self._gone(sent=False)
        self._next_id += 1
        job = self._waiting[self._next_id] = _Job(trio.lowlevel.current_task())
        self._queue((self._next_id, op, args))

        def abort(_: Any) -> trio.lowlevel.Abort:
            if not cancellable:
                return trio.lowlevel.Abort.FAILED
            job.abandoned = True
            return trio.lowlevel.Abort.SUCCEEDED

        # Parked until the answer arrives (no Event, no cancel scope: this is per append).
        await trio.lowlevel.wait_task_rescheduled(abort)
        if job.error is not None:
            error, job = job.error, None
            try:
                raise error
            finally:  # raised from a name, it would hold its traceback's frame
                error = None  # (a cycle: tests/storage/test_event_store.py)
        return job.result

    # ---- the EventStore interface -------------------------------------------------------

    async def append(self, stream: str, expected_rev: int, events: Sequence[Event],
                     receipts: Sequence[Receipt] = (), sizes: list[int] | None = None) -> int:
        """See EventStore.append; groups with the appends queued beside it."""
        check_stream_name(stream)
        check_receipts(expected_rev, len(events), receipts)
        rows = [_encode(e) for e in events]
        if sizes is not None:  # (ASCII: a character is a byte)
            sizes.extend(map(len, rows))
        kept = [(r.rev, r.caller, r.request_id, _encode(r.result)) for r in receipts]
        self._appends += 1
        rev = await self._call("append", stream, expected_rev, self._fences.get(stream, 0),
                               rows, kept, cancellable=False)
        self._events += len(rows)
        return rev

    async def claim(self, stream: str) -> tuple[int, int]:
        """See EventStore.claim (its own small transaction)."""
        fence, rev = await self._call("claim", stream, cancellable=False)
        self._fences[stream] = max(fence, self._fences.get(stream, 0))
        return fence, rev

    async def unclaim(self, stream: str) -> None:
        """See EventStore.unclaim (the stream's row stays: one process owns the file)."""
        self._fences.pop(stream, None)

    async def read(self, stream: str, after: int = 0, upto: int | None = None
                   ) -> list[StoredEvent]:
        """See EventStore.read."""
        return await stored_events(await self.read_rows(stream, after, upto))

    async def read_rows(self, stream: str, after: int = 0, upto: int | None = None
                        ) -> list[tuple[int, str]]:
        """See EventStore.read_rows."""
        check_read_bounds(after, upto)
        return await self._call("read", stream, after, MAX_REV if upto is None else upto)

    async def receipts(self, stream: str, after: int = 0) -> list[Receipt]:
        """See EventStore.receipts."""
        rows = await self._call("receipts", stream, after)
        return [Receipt(rev, caller, request_id, json.loads(text))
                for rev, caller, request_id, text in rows]

    async def forget_receipts(self, stream: str, upto: int) -> None:
        """See EventStore.forget_receipts (its own small transaction)."""
        await self._call("forget_receipts", stream, upto)

    async def revision(self, stream: str) -> int:
        """See EventStore.revision."""
        return await self._call("revision", stream)

    async def save_snapshot(self, stream: str, rev: int, data: Any) -> None:
        """See EventStore.save_snapshot (its own small transaction, unless newer is kept)."""
        await self._call("save_snapshot", stream, rev, _encode(data))

    async def load_snapshot(self, stream: str) -> Snapshot | None:
        """See EventStore.load_snapshot."""
        row = await self._call("load_snapshot", stream)
        return Snapshot(row[0], json.loads(row[1])) if row else None

    async def streams(self, prefix: str = "") -> dict[str, int]:
        """See EventStore.streams."""
        return await self._call("streams", prefix)

    def statistics(self) -> StoreStatistics:
        """Appends requested, transactions committed (one per group), events written,
        appends fenced."""
        return StoreStatistics(self._appends, self._commits, self._events, self._fenced)
