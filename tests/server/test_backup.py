"""docs/operations.md's backup holds: `VACUUM INTO` from another connection while the server
writes gives a copy with every write acknowledged before it began, with no hole, and a
server started on that copy serves it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import trio

from tests.server.ws_harness import raw_client, running_server

WORLD = "counter:kept"


def _vacuum_into(db: Path, target: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        conn.execute("VACUUM INTO ?", (str(target),))
    finally:
        conn.close()


async def test_a_backup_taken_while_live_holds_every_acknowledged_write(
        tmp_path: Path) -> None:
    backup = tmp_path / "restored" / "events.sqlite3"
    backup.parent.mkdir()
    async with running_server(tmp_path / "live") as srv, \
            raw_client(srv, srv.owner_token) as owner:
        assert (await owner.call("counter.create", WORLD))["ok"]
        for i in range(30):
            assert (await owner.call("counter.add", WORLD, amount=i))["ok"]
        acknowledged = 31  # revisions answered before the backup began

        async def keep_writing() -> None:
            async with raw_client(srv, srv.owner_token) as writer:
                while True:
                    assert (await writer.call("counter.add", WORLD, amount=1))["ok"]

        async with trio.open_nursery() as nursery:
            nursery.start_soon(keep_writing)
            await trio.sleep(0.05)
            await trio.to_thread.run_sync(_vacuum_into, tmp_path / "live" / "events.sqlite3",
                                          backup)
            nursery.cancel_scope.cancel()
    async with running_server(tmp_path / "restored") as srv, raw_client(srv) as reader:
        got = (await reader.call("counter.get", WORLD))["result"]
        assert got["revision"] >= acknowledged and got["adds"] == got["revision"] - 1
        events = await srv.state.directory.store.read(WORLD)
        assert [e.rev for e in events] == list(range(1, got["revision"] + 1))
