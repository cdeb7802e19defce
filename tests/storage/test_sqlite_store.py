"""The SQLite store's own behaviour: its file, its writer process, reopening, migration."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import trio

from actors.store import ConflictError, FencedError, Receipt, Snapshot, StoreUnavailable
from server.storage import SqliteEventStore


async def test_sqlite_survives_reopening(tmp_path: Path) -> None:
    async with SqliteEventStore.in_directory(tmp_path) as first:
        await first.append("a:1", 0, [{"x": "é"}, {"y": [1, 2.5, None]}])
        await first.save_snapshot("a:1", 1, {"s": True})
    async with SqliteEventStore.in_directory(tmp_path) as again:
        assert [e.data for e in await again.read("a:1")] == [{"x": "é"}, {"y": [1, 2.5, None]}]
        assert await again.load_snapshot("a:1") == Snapshot(1, {"s": True})


async def test_sqlite_uses_wal_and_full_sync(tmp_path: Path) -> None:
    import sqlite3

    async with SqliteEventStore.in_directory(tmp_path) as store:
        await store.append("a:1", 0, [{}])
        conn = sqlite3.connect(store.path)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.close()
    # synchronous is per connection: the writer process reports its own connection's.
    async with SqliteEventStore.in_directory(tmp_path) as store:
        assert store.settings == {"journal_mode": "wal", "synchronous": 2}  # 2 is FULL


async def test_sqlite_checks_a_foreign_writers_commits_in_the_transaction(tmp_path: Path) -> None:
    """Revisions and fences are read inside the write transaction, not from a cache: a
    row another connection committed makes the stale append a conflict, not a failure."""
    async with SqliteEventStore.in_directory(tmp_path) as store:
        await store.append("a:1", 0, [{"n": 1}])
        foreign = sqlite3.connect(store.path)
        with foreign:
            foreign.execute("INSERT INTO events VALUES ('a:1', 2, '{\"n\":2}')")
            foreign.execute("UPDATE streams SET rev = 2, fence = 5 WHERE name = 'a:1'")
        foreign.close()
        with pytest.raises(FencedError, match=r"claimed under fence 5; this writer holds fence 0$"):
            await store.append("a:1", 1, [{"n": "stale"}])
        assert await store.claim("a:1") == (6, 2)
        with pytest.raises(ConflictError, match=r"is at revision 2, not 1$"):
            await store.append("a:1", 1, [{"n": "stale"}])
        assert await store.append("a:1", 2, [{"n": 3}]) == 3
        assert [e.data["n"] for e in await store.read("a:1")] == [1, 2, 3]


async def test_sqlite_database_from_before_fences_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "events.sqlite3"
    old = sqlite3.connect(path)
    with old:
        old.executescript("""
            CREATE TABLE streams (name TEXT PRIMARY KEY, rev INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE events (stream TEXT NOT NULL, rev INTEGER NOT NULL,
                data TEXT NOT NULL, PRIMARY KEY (stream, rev)) WITHOUT ROWID;
            CREATE TABLE snapshots (stream TEXT PRIMARY KEY, rev INTEGER NOT NULL,
                data TEXT NOT NULL) WITHOUT ROWID;
            INSERT INTO streams VALUES ('a:1', 1);
            INSERT INTO events VALUES ('a:1', 1, '{"old":true}');
        """)
    old.close()
    async with SqliteEventStore(path) as store:
        assert await store.append("a:1", 1, [{"new": True}]) == 2  # unclaimed: fence 0
        assert await store.claim("a:1") == (1, 2)
        assert await store.append("a:1", 2, [{}]) == 3
        assert [e.data for e in await store.read("a:1")] == [{"old": True}, {"new": True}, {}]


async def test_sqlite_receipts_from_before_callers_are_migrated(tmp_path: Path) -> None:
    """A receipt stored before receipts had callers comes back as no caller's ('')."""
    path = tmp_path / "events.sqlite3"
    async with SqliteEventStore(path) as store:
        await store.append("a:1", 0, [{}])
    old = sqlite3.connect(path)
    with old:
        old.executescript("""
            DROP TABLE receipts;
            CREATE TABLE receipts (stream TEXT NOT NULL, rev INTEGER NOT NULL,
                request_id TEXT NOT NULL, result TEXT NOT NULL,
                PRIMARY KEY (stream, rev)) WITHOUT ROWID;
            INSERT INTO receipts VALUES ('a:1', 1, 'r1', '{"old":true}');
        """)
    old.close()
    async with SqliteEventStore(path) as store:
        assert await store.append("a:1", 1, [{}], [Receipt(2, "ann", "r1", 2)]) == 2
        assert await store.receipts("a:1") == [Receipt(1, "", "r1", {"old": True}),
                                               Receipt(2, "ann", "r1", 2)]


async def test_sqlite_cancelled_callers_read_gives_up_but_append_lands(tmp_path: Path) -> None:
    async with SqliteEventStore.in_directory(tmp_path) as store:
        await store.append("s:a", 0, [{"n": 0}])
        outcome: dict[str, object] = {}

        async def append() -> None:
            outcome["rev"] = await store.append("s:a", 1, [{"n": 1}])

        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(append)
                await trio.lowlevel.checkpoint()  # the append is queued
                scope.cancel()  # cancels the append's caller and this read alike
                await store.read("s:a")
        assert outcome == {"rev": 2}  # an append in flight finishes and is reported
        assert [e.data for e in await store.read("s:a")] == [{"n": 0}, {"n": 1}]


async def test_sqlite_writer_exit_fails_calls_until_a_new_writer_serves(
        tmp_path: Path) -> None:
    async with SqliteEventStore.in_directory(tmp_path) as store:
        await store.append("s:a", 0, [{"n": 0}])
        assert store._proc is not None
        first = store._proc.pid
        store._proc.kill()
        with pytest.raises(StoreUnavailable, match="cannot make writes durable right now"):
            await store.append("s:a", 1, [{"n": 1}])
        with pytest.raises(StoreUnavailable) as down:
            await store.read("s:a")
        assert down.value.code == "unavailable" and not store.healthy
        with trio.fail_after(10):
            while not store.healthy:
                await trio.sleep(0.01)
        assert store._proc.pid != first and store.restarts == 1
        assert [e.data for e in await store.read("s:a")] == [{"n": 0}]  # nothing was lost
        assert await store.append("s:a", 1, [{"n": 1}]) == 2


def test_sqlite_writer_dies_with_its_server(tmp_path: Path) -> None:
    """A SIGKILLed server must not leave a writer behind that could commit later."""
    import os
    import signal
    import subprocess
    import sys
    import time

    code = ("import sys, trio\n"
            "from server.storage import SqliteEventStore\n"
            "async def main():\n"
            "    async with SqliteEventStore.in_directory(sys.argv[1]) as store:\n"
            "        print(store._proc.pid, flush=True)\n"
            "        await trio.sleep_forever()\n"
            "trio.run(main)\n")
    server = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)],
                              stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[2])
    assert server.stdout is not None
    writer = int(server.stdout.readline())
    os.kill(writer, 0)  # alive
    server.send_signal(signal.SIGKILL)
    server.wait(10)
    server.stdout.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(writer, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail(f"the writer {writer} outlived its server by 5 s")


async def test_sqlite_moves_frames_larger_than_a_pipe_buffer(tmp_path: Path) -> None:
    """A megabyte of events goes to the writer and back in pieces (partial pipe writes)."""
    events = [{"i": i, "pad": "x" * 200} for i in range(5000)]
    async with SqliteEventStore.in_directory(tmp_path) as store:
        async with trio.open_nursery() as nursery:  # small appends queue behind the big one
            nursery.start_soon(store.append, "big:a", 0, events)
            for i in range(20):
                nursery.start_soon(store.append, f"small:{i}", 0, [{"i": i}])
        assert [e.data for e in await store.read("big:a")] == events
        assert await store.streams("small:") == {f"small:{i}": 1 for i in range(20)}


async def test_sqlite_open_that_fails_leaves_no_writer(tmp_path: Path) -> None:
    (tmp_path / "events.sqlite3").write_text("this is not a database")
    store = SqliteEventStore.in_directory(tmp_path)
    with pytest.raises(RuntimeError, match="did not start"):
        await store.open()
    assert store._proc is None
    with pytest.raises(RuntimeError, match="not open"):
        await store.read("s:a")


async def test_sqlite_stored_text_is_byte_for_byte_what_the_server_wrote(tmp_path: Path) -> None:
    from protocol.jsontext import compact_encoder

    encode = compact_encoder(ensure_ascii=True)
    events = [{"z": 1, "a": [1.0, 1e300, 2**70]}, {"s": "é\u0000\n😀\"\\"}, {}]
    async with SqliteEventStore.in_directory(tmp_path) as store:
        await store.append("a:1", 0, events)
        conn = sqlite3.connect(store.path)
        stored = conn.execute("SELECT CAST(data AS BLOB) FROM events ORDER BY rev").fetchall()
        conn.close()
    assert [row[0] for row in stored] == [encode(e).encode() for e in events]


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 4 MiB tmpfs of its own (root only), unmounted after the test."""
    import os
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)],
                             check=False, capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


def _fill(path: Path) -> None:
    """Write zeros to `path` until its file system has no room left."""
    with path.open("wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass


async def test_sqlite_a_full_disk_is_unavailable_and_stores_nothing(small_disk: Path) -> None:
    """An append the disk has no room for is refused `unavailable` ("the disk is full",
    nothing stored), not handed up as a crash; once there is room the same append lands."""
    async with SqliteEventStore.in_directory(small_disk / "data") as store:
        assert await store.append("a:1", 0, [{"n": 0}]) == 1
        filler = small_disk / "filler"
        _fill(filler)
        big = [{"n": i, "pad": "x" * 60_000} for i in range(8)]
        with pytest.raises(StoreUnavailable) as full:
            await store.append("a:1", 1, big)
        assert "the disk is full" in full.value.message
        assert full.value.detail == {"store": "down", "stored": "no"}
        assert store.healthy
        filler.unlink()
        assert await store.append("a:1", 1, big) == 9
        assert [e.data["n"] for e in await store.read("a:1")] == [0, *range(8)]
