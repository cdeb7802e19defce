"""`bench floor` for a moment: every server is measured, and the bare loops that stand
for a durable add really store one event per acknowledged add. No speed is asserted."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import trio

from bench import _peers_servers as servers
from bench import floor
from bench._peers_sides import Ours


def test_every_server_is_measured_side_by_side() -> None:
    result = floor.main(["--no-peer", "--connections", "4", "--seconds", "0.4",
                         "--turns", "2"])
    assert result["peer_left_out"] == "--no-peer"
    level = result["round_trips"]["4"]
    for name in (*floor.FLOORS, "ours"):
        assert level[name]["round_trips"] > 0, name
        assert level[name]["server_cpu_us_per_round_trip"] > 0, name
        assert len(level[name]["per_turn_round_trips_per_s"]) == 2


@pytest.mark.parametrize("mode", ["sqlite", "writer"])
def test_a_durable_floor_stores_each_acknowledged_add(mode: str, tmp_path: Path) -> None:
    proc = servers.python_server(
        mode, "import sys, bench._floor_server as f; f.serve(*sys.argv[1:])", tmp_path,
        mode, str(tmp_path / "data"))
    try:
        proc.ready()
        side = Ours(f"ws://{proc.host}:{proc.port}/ws", floor.KIND)

        async def adds() -> list[int]:
            conns = [await side.open_own(i) for i in range(3)]  # (one add each)
            revisions = [await side.add(conns[i % 3]) for i in range(30)]
            for conn in conns:
                await conn.ws.aclose()
            return revisions

        revisions = trio.run(adds)
    finally:
        proc.close()
    assert revisions == [2 + i // 3 for i in range(30)]
    with sqlite3.connect(tmp_path / "data" / "floor.sqlite3") as db:
        rows = db.execute("SELECT stream, count(*), max(rev) FROM events GROUP BY stream "
                          "ORDER BY stream").fetchall()
    assert rows == [(f"{floor.KIND}:c{i}", 11, 11) for i in range(3)]
