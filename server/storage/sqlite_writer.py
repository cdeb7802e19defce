"""The event store's writer process: it alone holds the SQLite connection.

Run as a script (`python sqlite_writer.py DB PARENT_PID`, standard library only, so it
starts fast). Jobs arrive on stdin and answers leave on stdout, in frames: a 4-byte
little-endian length, then a pickle; a job frame holds a list of `(job_id, op, args)`. The parent (server/storage/sqlite.py) is the only
peer, so pickle is safe here.

First the process writes a hello frame with the connection's settings. Then it reads
whatever jobs have arrived, answers them, and reads again: a run of consecutive appends
among them is ONE transaction (one fsync), so appends that arrive while a commit is being
written share the next one (group commit). Each batch of answers is one frame,
`(commits, [(job_id, ok, value), ...])`.

Each append carries the fence its client claimed (`claim` bumps a stream's fence). The
revisions and fences are checked against the database inside the write transaction
(BEGIN IMMEDIATE holds SQLite's write lock), so a second client of the same file, with
its own writer process, is fenced and conflicts exactly as it would on PostgreSQL.

Why a process and not a thread of the server: the sqlite3 module releases the GIL around
every statement, and a thread that wants it back from a busy trio thread waits up to the
interpreter's switch interval (5 ms) each time, then forces a switch that stalls the trio
thread. With a worker thread the server lost about a third of its request rate to those
handoffs (`python -m bench ws`, the closing note of session 3 has the figures).
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import sqlite3
import struct
import sys
from typing import Any

HEADER = struct.Struct("<I")
READ_SIZE = 1 << 20
MAX_GROUP = 512  # appends per transaction: bounds the latency of the first one in a group

SCHEMA = """
CREATE TABLE IF NOT EXISTS streams (
    name TEXT PRIMARY KEY, rev INTEGER NOT NULL, fence INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
    stream TEXT NOT NULL, rev INTEGER NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (stream, rev)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots (
    stream TEXT PRIMARY KEY, rev INTEGER NOT NULL, data TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS receipts (
    stream TEXT NOT NULL, rev INTEGER NOT NULL, request_id TEXT NOT NULL, result TEXT NOT NULL,
    caller TEXT NOT NULL DEFAULT '', PRIMARY KEY (stream, rev)) WITHOUT ROWID;
"""
# Bound parameters, one statement per row (executemany): the data stays the exact text the
# server wrote (SQLite re-rendering JSON could turn a big integer into a float). A group's
# rows through `json_each` cost the writer about 70% more per append.
INSERT_EVENTS = "INSERT INTO events (stream, rev, data) VALUES (?, ?, ?)"
INSERT_RECEIPTS = ("INSERT INTO receipts (stream, rev, caller, request_id, result) "
                   "VALUES (?, ?, ?, ?, ?)")
# Databases made before fences existed gain the column (every stream at fence 0).
ADD_FENCE = "ALTER TABLE streams ADD COLUMN fence INTEGER NOT NULL DEFAULT 0"
# Receipts made before they were the caller's own gain the column as '', which no caller
# is: they are never matched again (a retry of such a write is applied afresh).
ADD_RECEIPT_CALLER = "ALTER TABLE receipts ADD COLUMN caller TEXT NOT NULL DEFAULT ''"
STREAM_STATES = ("SELECT name, rev, fence FROM streams "
                 "WHERE name IN (SELECT value FROM json_each(?))")
UPSERT_STREAMS = ("INSERT INTO streams (name, rev) VALUES (?, ?) "
                  "ON CONFLICT (name) DO UPDATE SET rev = excluded.rev")


def frame(value: Any) -> bytes:
    """One length-prefixed pickle."""
    body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body)) + body


def split_frames(buffer: bytearray) -> list[Any]:
    """Remove and return every complete frame at the front of `buffer`."""
    out, at = [], 0
    while len(buffer) - at >= HEADER.size:
        (size,) = HEADER.unpack_from(buffer, at)
        if len(buffer) - at - HEADER.size < size:
            break
        out.append(pickle.loads(buffer[at + HEADER.size:at + HEADER.size + size]))
        at += HEADER.size + size
    del buffer[:at]
    return out


def _error(exc: BaseException) -> BaseException:
    """`exc` as it can travel back: sqlite3 errors as they are, anything else as text."""
    if isinstance(exc, sqlite3.Error):
        return type(exc)(*exc.args)
    return RuntimeError(f"{type(exc).__name__}: {exc}")


def migrate(conn: sqlite3.Connection) -> None:
    """Create the tables, or bring an older database's up to date."""
    conn.executescript(SCHEMA)
    for table, column, add in (("streams", "fence", ADD_FENCE),
                               ("receipts", "caller", ADD_RECEIPT_CALLER)):
        if column not in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
            conn.execute(add)


class Writer:
    """The connection and the job handlers."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def settings(self) -> dict[str, Any]:
        """The durability settings in force on this connection."""
        return {"journal_mode": self.conn.execute("PRAGMA journal_mode").fetchone()[0],
                "synchronous": self.conn.execute("PRAGMA synchronous").fetchone()[0]}

    def run_batch(self, jobs: list[tuple[int, str, tuple[Any, ...]]]) -> tuple[int, list[Any]]:
        """Answer `jobs` in order; consecutive appends share one transaction."""
        answers: list[Any] = []
        commits = i = 0
        while i < len(jobs):
            j = i
            while j < len(jobs) and jobs[j][1] == "append" and j - i < MAX_GROUP:
                j += 1
            if j > i:
                commits += self.commit_group(jobs[i:j], answers)
                i = j
                continue
            job_id, op, args = jobs[i]
            try:
                answers.append((job_id, True, getattr(self, "op_" + op)(*args)))
            except Exception as exc:  # noqa: BLE001 - handed to the caller, which raises it
                answers.append((job_id, False, _error(exc)))
            i += 1
        return commits, answers

    def commit_group(self, group: list[tuple[int, str, tuple[Any, ...]]],
                     answers: list[Any]) -> int:
        """In one transaction: check each append's fence and expected revision against
        the database, write the sound ones; the number of commits made (0 or 1)."""
        staged: dict[str, int] = {}  # revisions after this group
        rows: list[tuple[str, int, str]] = []
        receipts: list[tuple[str, int, str, str, str]] = []
        accepted: list[tuple[int, int]] = []  # (job id, new revision)
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            names = json.dumps(sorted({args[0] for _, _, args in group}))
            truth = {name: (rev, fence)
                     for name, rev, fence in self.conn.execute(STREAM_STATES, (names,))}
            for job_id, _, (stream, expected, fence, texts, kept) in group:
                current, current_fence = truth.get(stream, (0, 0))
                current = staged.get(stream, current)
                if fence != current_fence:
                    answers.append((job_id, False, ("fenced", stream, fence, current_fence)))
                elif current != expected:
                    answers.append((job_id, False, ("conflict", stream, expected, current)))
                else:
                    rows.extend((stream, expected + k, text) for k, text in enumerate(texts, 1))
                    receipts.extend((stream, *receipt) for receipt in kept)
                    staged[stream] = expected + len(texts)
                    accepted.append((job_id, staged[stream]))
            if rows:
                self.conn.executemany(INSERT_EVENTS, rows)
            if receipts:
                self.conn.executemany(INSERT_RECEIPTS, receipts)
            if staged:
                self.conn.executemany(UPSERT_STREAMS, staged.items())
            self.conn.execute("COMMIT")
        except Exception as exc:  # noqa: BLE001 - the whole group failed; each caller raises it
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            refused = {a[0] for a in answers}
            answers.extend((job_id, False, _error(exc)) for job_id, _, _ in group
                           if job_id not in refused)
            return 0
        answers.extend((job_id, True, rev) for job_id, rev in accepted)
        return 1 if accepted else 0

    # ---- the other jobs (`op_<name>`): values go back as they are -----------------------

    def op_read(self, stream: str, after: int, upto: int) -> list[tuple[int, str]]:
        """(rev, data text) of the events after `after`, up to `upto`."""
        cur = self.conn.execute("SELECT rev, data FROM events WHERE stream = ? AND rev > ? "
                                "AND rev <= ? ORDER BY rev", (stream, after, upto))
        return cur.fetchall()

    def op_receipts(self, stream: str, after: int) -> list[tuple[int, str, str, str]]:
        """(rev, caller, request id, result text) of the receipts after `after`."""
        cur = self.conn.execute("SELECT rev, caller, request_id, result FROM receipts "
                                "WHERE stream = ? AND rev > ? ORDER BY rev", (stream, after))
        return cur.fetchall()

    def op_forget_receipts(self, stream: str, upto: int) -> None:
        """Delete the stream's receipts at revisions up to `upto`."""
        self.conn.execute("DELETE FROM receipts WHERE stream = ? AND rev <= ?", (stream, upto))

    def op_revision(self, stream: str) -> int:
        """The stream's revision (0 when it has no events)."""
        row = self.conn.execute("SELECT rev FROM streams WHERE name = ?", (stream,)).fetchone()
        return row[0] if row else 0

    def op_claim(self, stream: str) -> tuple[int, int]:
        """Bump the stream's fence (creating it at revision 0); (fence, revision)."""
        return self.conn.execute("INSERT INTO streams (name, rev, fence) VALUES (?, 0, 1) "
                                 "ON CONFLICT (name) DO UPDATE SET fence = fence + 1 "
                                 "RETURNING fence, rev", (stream,)).fetchone()

    def op_save_snapshot(self, stream: str, rev: int, text: str) -> None:
        """Keep the snapshot unless a newer one is stored (its own small transaction)."""
        self.conn.execute("INSERT INTO snapshots (stream, rev, data) VALUES (?, ?, ?) "
                          "ON CONFLICT (stream) DO UPDATE SET rev = excluded.rev, "
                          "data = excluded.data WHERE snapshots.rev <= excluded.rev",
                          (stream, rev, text))

    def op_load_snapshot(self, stream: str) -> tuple[int, str] | None:
        """(rev, data text) of the stream's snapshot, or None."""
        return self.conn.execute("SELECT rev, data FROM snapshots WHERE stream = ?",
                                 (stream,)).fetchone()

    def op_streams(self, prefix: str) -> dict[str, int]:
        """Non-empty streams whose name starts with `prefix`, with their revisions."""
        cur = self.conn.execute("SELECT name, rev FROM streams WHERE substr(name, 1, ?) = ? "
                                "AND rev > 0 ORDER BY name", (len(prefix), prefix))
        return dict(cur.fetchall())


def _die_with_parent(parent: int) -> None:
    """Ask Linux to kill this process when the server dies (a SIGKILLed server must not
    leave a writer behind that commits after a new server opened the database)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        pass  # not Linux: the writer still stops at end of input
    if os.getppid() != parent:
        sys.exit(0)  # the parent died before the request took effect


def _write_all(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


def main(argv: list[str]) -> int:
    """Serve jobs from stdin until it ends or a `stop` job arrives."""
    path, parent = argv[0], int(argv[1])
    # Ctrl-C reaches the server's whole process group, and `systemctl stop` its whole
    # control group: the writer must outlive the server's graceful shutdown, which ends it
    # with `stop` or end of input once the last write is answered.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _die_with_parent(parent)
    os.umask(0o077)  # the database, its WAL and shared-memory files: this user's only
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        migrate(conn)
        for suffix in ("", "-wal", "-shm"):  # files made before, under another umask
            if os.path.exists(path + suffix):
                os.chmod(path + suffix, 0o600)
        writer = Writer(conn)
        _write_all(frame(writer.settings()))
        buffer = bytearray()
        # Read into one reused buffer: `os.read` of READ_SIZE maps and unmaps a fresh 1 MiB
        # for every read (three system calls per batch).
        scratch = bytearray(READ_SIZE)
        while size := os.readv(0, [scratch]):
            buffer += memoryview(scratch)[:size]
            jobs = [job for batch in split_frames(buffer) for job in batch]
            stop = any(op == "stop" for _, op, _ in jobs)
            jobs = [job for job in jobs if job[1] != "stop"]
            if jobs:
                _write_all(frame(writer.run_batch(jobs)))
            if stop:
                break
    finally:
        conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
