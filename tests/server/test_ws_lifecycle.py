"""Limits, HTTP routes and graceful shutdown, over real sockets."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import trio
import trio.testing
from websockets.exceptions import ConnectionClosed
from websockets.trio.client import connect

from server.app import serve
from server.config import ServerConfig
from tests.runtime.probe import Block
from tests.server.probe_world import KINDS, probe_registry
from tests.server.ws_harness import error, raw_client, result, running_server


async def test_rate_limit_refuses_then_recovers(tmp_path: Path) -> None:
    async with running_server(tmp_path, rate=2, burst=5) as running, raw_client(running) as c:
        for i in range(12):
            await c.send({"id": i, "op": "lobby.list"})
        replies = [await c.recv() for _ in range(12)]
        limited = [r for r in replies if not r["ok"]]
        assert len(limited) >= 5
        assert all(r["error"] == {"code": "rate_limited",
                                  "message": "more than 2 frames per second; slow down",
                                  "detail": {"rate": 2.0}} for r in limited)
        assert {r["id"] for r in replies} == set(range(12))
        await trio.sleep(1.1)
        assert result(await c.call("lobby.list")) == {"worlds": [], "total": 0, "offset": 0}


async def test_malformed_frames_spend_the_rate_too(tmp_path: Path) -> None:
    """Junk is no way around the bucket: beyond it every frame is `rate_limited`."""
    async with running_server(tmp_path, rate=0.01, burst=5) as running, \
            raw_client(running) as c:  # the hello spent one token
        for frame in ("junk", b"\x00", "[]"):
            await c.send(frame) if isinstance(frame, str) else await c.ws.send(frame)
            assert error(await c.recv())["code"] == "bad_request"
        assert result(await c.call("lobby.list")) == {"worlds": [], "total": 0, "offset": 0}
        for frame in ("junk", b"\x00", {"id": 8, "op": "lobby.list"}, {"id": 9, "op": 5}):
            await c.send(frame) if not isinstance(frame, bytes) else await c.ws.send(frame)
            refused = await c.recv()
            assert error(refused)["code"] == "rate_limited", (frame, refused)
            assert refused["id"] == (frame.get("id") if isinstance(frame, dict) else None)


async def test_frame_limits(tmp_path: Path) -> None:
    async with running_server(tmp_path, max_frame=1000, hard_frame_factor=4) as running, \
            raw_client(running) as c:
        await c.send("x" * 1001)
        assert error(await c.recv())["code"] == "too_large"
        await c.send('{"id": 1, "op": "lobby.list", "args": {}}' + " " * 900)
        assert result(await c.recv()) == {"worlds": [], "total": 0, "offset": 0}
        # Past the hard limit the frame is not even read: the socket closes with 1009.
        await c.send("x" * 4001)
        with pytest.raises(ConnectionClosed) as closed:
            await c.recv()
        assert closed.value.rcvd.code == 1009


async def test_healthz_metrics_and_static_files(tmp_path: Path) -> None:
    web = tmp_path / "web"
    (web / "lobby").mkdir(parents=True)
    (web / "lobby" / "index.html").write_text("<h1>lobby</h1>")
    async with running_server(tmp_path / "data", web_dir=web, open_mode=True) as running, \
            raw_client(running) as c, httpx.AsyncClient(base_url=running.url) as http:
        result(await c.call("lobby.create", kind="counter", name="m"))
        result(await c.call("counter.add", "counter:m", amount=1))
        await c.send("not json")
        await c.recv()
        health = await http.get("/healthz")
        assert health.status_code == 200
        # The lobby, the counter and the owner's console (loaded as the server starts).
        assert health.json() == {"ok": True, "worlds": 3, "connections": 1}
        text = (await http.get("/metrics")).text
        for line in ('petridish_connections_open 1',
                     'petridish_events_appended_total{kind="counter"} 2',
                     'petridish_events_appended_total{kind="lobby"} 1',
                     'petridish_errors_total{code="bad_request"} 1',
                     'petridish_mailbox_depth{kind="counter"} 0'):
            assert line in text.splitlines(), line
        # the create (lobby.create hands the counter its create op) and the add
        assert 'petridish_handler_seconds_count{kind="counter"} 2' in text
        page = await http.get("/")
        assert page.status_code == 200 and page.text == "<h1>lobby</h1>"


async def test_graceful_shutdown_finishes_in_flight_requests_then_closes_1001(
        tmp_path: Path) -> None:
    async with running_server(tmp_path, kinds=KINDS, registry=probe_registry(),
                              open_mode=True) as running, raw_client(running) as c:
        result(await c.call("lobby.create", kind="probe", name="a"))
        actor = await running.state.directory.get("probe:a")
        release = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(actor.ask, Block(release))
            await trio.testing.wait_all_tasks_blocked()
            await c.send({"id": 7, "op": "probe.add", "to": "probe:a",
                          "args": {"amount": 3}})
            await trio.testing.wait_all_tasks_blocked()
            running.stop()
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(OSError):  # no longer accepting
                async with connect(running.ws_url, open_timeout=2):
                    pass
            release.set()
        assert await c.recv() == {"id": 7, "ok": True, "result": {"total": 3, "rev": 2}}
        with pytest.raises(ConnectionClosed) as closed:
            await c.recv()
        assert closed.value.rcvd.code == 1001


async def test_shutdown_does_not_wait_out_the_graceful_timeout_when_idle(tmp_path: Path) -> None:
    """Hypercorn keeps a closed websocket's ping task until its next tick; with nothing in
    flight, `serve` must not sit out `graceful_timeout` for it."""
    with trio.fail_after(60):  # far below the 600 s either bound would hold it
        async with trio.open_nursery() as nursery:
            config = ServerConfig(port=0, data_dir=tmp_path, ping_interval=600.0,
                                  graceful_timeout=600.0)
            running = await nursery.start(serve, config)
            async with raw_client(running) as c:
                assert result(await c.call("lobby.list")) == {"worlds": [], "total": 0, "offset": 0}
            async with httpx.AsyncClient(base_url=running.url) as http:
                assert (await http.get("/healthz")).status_code == 200  # kept alive
                running.stop()
