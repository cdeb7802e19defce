"""The EventStore contract, run against every backend: SQLite and the in-memory one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from actors.store import ConflictError, EventStore, MemoryEventStore, Snapshot
from server.storage import SqliteEventStore


@pytest.fixture(params=["sqlite", "memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EventStore]:
    if request.param == "memory":
        yield MemoryEventStore()
        return
    async with SqliteEventStore.in_directory(tmp_path) as sqlite_store:
        yield sqlite_store


async def test_append_then_read_in_order(store: EventStore) -> None:
    assert await store.append("a:1", 0, [{"n": 1}, {"n": 2}]) == 2
    assert await store.append("a:1", 2, [{"n": 3}]) == 3
    events = await store.read("a:1")
    assert [(e.rev, e.data) for e in events] == [(1, {"n": 1}), (2, {"n": 2}), (3, {"n": 3})]
    assert [e.rev for e in await store.read("a:1", after=2)] == [3]
    assert await store.revision("a:1") == 3
    assert await store.revision("a:nothing") == 0
    assert await store.read("a:nothing") == []


async def test_event_values_come_back_exactly(store: EventStore) -> None:
    event = {"big": 2**70, "neg": -(2**63), "f": 0.1, "s": "é\u0000\"\\", "nested": [{"a": None}]}
    await store.append("a:1", 0, [event, {}])
    assert [e.data for e in await store.read("a:1")] == [event, {}]


async def test_wrong_expected_revision_is_a_conflict_and_writes_nothing(store: EventStore) -> None:
    await store.append("a:1", 0, [{"n": 1}])
    with pytest.raises(ConflictError, match=r"^stream 'a:1' is at revision 1, not 0$"):
        await store.append("a:1", 0, [{"n": "again"}])
    with pytest.raises(ConflictError):
        await store.append("a:1", 5, [{"n": "ahead"}])
    assert [e.data for e in await store.read("a:1")] == [{"n": 1}]


async def test_snapshots_replace_older_ones(store: EventStore) -> None:
    assert await store.load_snapshot("a:1") is None
    await store.save_snapshot("a:1", 3, {"total": 3})
    await store.save_snapshot("a:1", 7, {"total": 9, "list": [1, 2]})
    assert await store.load_snapshot("a:1") == Snapshot(7, {"total": 9, "list": [1, 2]})


async def test_streams_lists_non_empty_streams_by_prefix(store: EventStore) -> None:
    await store.append("scratch:a", 0, [{}])
    await store.append("scratch:b", 0, [{}, {}])
    await store.append("lobby:main", 0, [{}])
    assert await store.streams("scratch:") == {"scratch:a": 1, "scratch:b": 2}
    assert set(await store.streams()) == {"scratch:a", "scratch:b", "lobby:main"}


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


async def test_group_commit_costs_fewer_commits_than_appends(tmp_path: Path) -> None:
    n = 200
    async with SqliteEventStore.in_directory(tmp_path) as store:
        async with trio.open_nursery() as nursery:
            for i in range(n):
                nursery.start_soon(store.append, f"s:{i}", 0, [{"i": i}])
        stats = store.statistics()
        assert (stats.appends, stats.events) == (n, n)
        assert stats.commits < n
        assert await store.streams("s:") == {f"s:{i}": 1 for i in range(n)}


async def test_group_commit_isolates_a_conflicting_append(tmp_path: Path) -> None:
    """Concurrent appends, some with a wrong expected_rev: only those fail."""
    async with SqliteEventStore.in_directory(tmp_path) as store:
        outcomes: dict[int, object] = {}

        async def one(i: int) -> None:
            try:
                outcomes[i] = await store.append(f"s:{i}", 0 if i % 3 else 9, [{"i": i}])
            except ConflictError as exc:
                outcomes[i] = exc

        async with trio.open_nursery() as nursery:
            for i in range(60):
                nursery.start_soon(one, i)
        for i, outcome in outcomes.items():
            if i % 3:
                assert outcome == 1
                assert [e.data for e in await store.read(f"s:{i}")] == [{"i": i}]
            else:
                assert isinstance(outcome, ConflictError)
                assert await store.read(f"s:{i}") == []
        assert store.statistics().commits < 60


async def test_sqlite_group_fails_whole_when_another_writer_got_in(tmp_path: Path) -> None:
    """The worker trusts its revision cache; a foreign write makes the insert fail, the group
    reports the error, and the next append sees the true revision."""
    import sqlite3

    async with SqliteEventStore.in_directory(tmp_path) as store:
        await store.append("a:1", 0, [{"n": 1}])
        foreign = sqlite3.connect(store.path)
        with foreign:
            foreign.execute("INSERT INTO events VALUES ('a:1', 2, '{\"n\":2}')")
            foreign.execute("UPDATE streams SET rev = 2 WHERE name = 'a:1'")
        foreign.close()
        with pytest.raises(sqlite3.IntegrityError):
            await store.append("a:1", 1, [{"n": "lost"}])
        with pytest.raises(ConflictError, match=r"is at revision 2, not 1$"):
            await store.append("a:1", 1, [{"n": "stale"}])
        assert await store.append("a:1", 2, [{"n": 3}]) == 3
        assert [e.data["n"] for e in await store.read("a:1")] == [1, 2, 3]


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


async def test_sqlite_writer_exit_fails_waiting_and_later_calls(tmp_path: Path) -> None:
    async with SqliteEventStore.in_directory(tmp_path) as store:
        await store.append("s:a", 0, [{"n": 0}])
        assert store._proc is not None
        store._proc.kill()
        with pytest.raises(RuntimeError, match="writer for .* is gone"):
            await store.append("s:a", 1, [{"n": 1}])
        with pytest.raises(RuntimeError, match="writer for .* is gone"):
            await store.read("s:a")
    async with SqliteEventStore.in_directory(tmp_path) as again:  # nothing was lost
        assert [e.data for e in await again.read("s:a")] == [{"n": 0}]


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
