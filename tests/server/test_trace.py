"""Failures leave a trace: `petridish serve` keeps an error log in the data directory, each
failure is one warning line there (throttled per client) and a count in /metrics; the
data directory and every file in it are private to the server's user."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import httpx
import trio
from websockets.trio.client import connect

from server.metrics import Metrics
from server.trace import Throttle, Trace
from tests.server.server_process import ServerProcess


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def _bad_hello(url: str) -> dict:
    async with connect(url, compression=None) as ws:
        await ws.send(json.dumps({"op": "hello", "protocol": 1, "token": "pdg_wrong"}))
        return json.loads(await ws.recv())


async def test_the_error_log_and_the_data_files_are_kept_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = ServerProcess(data)
    await trio.to_thread.run_sync(server.start)
    try:
        for _ in range(3):
            assert (await _bad_hello(server.ws_url))["error"]["code"] == "unauthorized"
        async with httpx.AsyncClient() as http:
            metrics = (await http.get(f"{server.http_url}/metrics")).text
        assert 'petridish_warnings_total{event="hello_refused"} 3' in metrics
        log = data / "logs" / "error.log"
        lines = [line for line in log.read_text().splitlines() if "hello_refused" in line]
        # One line: the next two from the same address within 10 s are folded into the next.
        assert len(lines) == 1 and "refused a hello from 127.0.0.1" in lines[0], lines
        assert any(f"error log: {log}" in line for line in server.output)
        assert _mode(data) == 0o700
        files = [p for p in data.rglob("*") if p.is_file()]
        assert {p.name for p in files} >= {"events.sqlite3", "events.sqlite3-wal",
                                           "owner.token", "error.log"}
        assert {p.name: _mode(p) for p in files} == {p.name: 0o600 for p in files}
        assert _mode(data / "logs") == 0o700
    finally:
        await trio.to_thread.run_sync(server.kill)
    # websockets' own "connection open/closed" lines, one each per websocket, are not shown
    assert "websockets" not in await trio.to_thread.run_sync(server.all_output)


def test_a_warning_is_counted_every_time_and_logged_once_per_interval(caplog) -> None:
    now = [0.0]
    metrics = Metrics()
    trace = Trace(metrics, interval=10.0, clock=lambda: now[0])
    for t in (0.0, 1.0, 2.0, 11.0):
        now[0] = t
        trace.warn("budget", "1.2.3.4", "%s hit it", "1.2.3.4")
    trace.warn("budget", "5.6.7.8", "%s hit it", "5.6.7.8")  # another key: its own line
    assert metrics.warnings.labels("budget").value == 5
    assert [r.getMessage() for r in caplog.records] == [
        "budget: 1.2.3.4 hit it", "budget: 1.2.3.4 hit it (and 2 more like it since)",
        "budget: 5.6.7.8 hit it"]
    assert all(r.levelname == "WARNING" for r in caplog.records)


def test_a_throttle_lets_one_line_per_interval_and_key_through_and_counts_the_rest() -> None:
    now = [0.0]
    throttle = Throttle(10.0, lambda: now[0], keys=2)
    seen = []
    for t, key in ((0, "a"), (1, "a"), (2, "b"), (5, "a"), (10, "a"), (10.5, "a")):
        now[0] = t
        seen.append(throttle.due(key))
    assert seen == [0, None, 0, None, 2, None]
    now[0] = 11.0
    assert throttle.due("c") == 0  # a third key: the one written longest ago is forgotten
    assert throttle.due("a") is None  # written at 10: remembered
    assert throttle.due("b") == 0  # written at 2, within its interval, but forgotten
