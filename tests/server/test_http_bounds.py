"""What every HTTP request is held to (server/http_bounds.py), over raw sockets: a file's
answer ends its connection when asked to, a body arrives in time or is refused 408, a
client that leaves mid-body is no server failure, a route asked with another method
gets 405 and the JSON refusal, and an address past its HTTP budget gets 429 (each
refusal on /mcp a JSON-RPC error)."""

from __future__ import annotations

import json
import logging
import socket
import struct
from functools import partial
from pathlib import Path

import httpx
import pytest
import trio
import trio.testing
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server import http_bounds
from server.budgets import Budgets
from server.front import hypercorn_config, serve_front
from server.peers import Proxies
from server.tcp_guard import TcpGuard
from tests.server import burn_world
from tests.server.ws_harness import running_server

MCP_ACCEPT = "Accept: application/json, text/event-stream"


def _request(line: str, *headers: str, body: str = "") -> bytes:
    """A request as written: its line, `Host: x`, `headers` and `body`."""
    return "\r\n".join([line, "Host: x", *headers, "", body]).encode()


def _json_post(path: str, framing: str, body: str) -> bytes:
    """A JSON POST to `path` (accepted as an MCP call too) framed by `framing`."""
    return _request(f"POST {path} HTTP/1.1", "Content-Type: application/json",
                    MCP_ACCEPT, framing, body=body)


async def _exchange(port: int, request: bytes, *, wait: float = 10.0) -> bytes:
    """Send `request` as written and read until the server closes the connection (the
    test fails after `wait` seconds without that)."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(request)
        data = b""
        with trio.fail_after(wait):
            while chunk := await stream.receive_some(65536):
                data += chunk
    return data


def _status_and_json(data: bytes) -> tuple[int, dict]:
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


def _refusal(path: str, body: dict) -> dict:
    """The refusal `{code, message, detail}` in `body`, which has its path's shape: on /mcp
    a JSON-RPC error without an id (the MCP SDK's client raises it with the refusal as
    data; the lab routes' shape was a bare -32603 to it), elsewhere the lab routes'."""
    if path != "/mcp":
        assert body.keys() == {"ok", "error"} and body["ok"] is False
        return body["error"]
    refusal = body["error"]["data"]
    assert body == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": f"{refusal['code']}: {refusal['message']}",
        "data": refusal}}
    return refusal


async def test_a_file_answered_to_a_closing_request_ends_its_connection(
        tmp_path: Path) -> None:
    # Starlette's file responses cancel their sender once the body is out, and Hypercorn
    # closed the connection inside that send: cut there, the connection was held open,
    # idle, past every timeout (the keep-alive timer does not run mid-request), until
    # its client left.
    requests = [_request("GET /js/page.js HTTP/1.1", "Connection: close"),
                _request("GET / HTTP/1.0"),
                _request("GET /js/client.js HTTP/1.1", "Connection: close",
                         "Range: bytes=0-1,4-5")]
    async with running_server(tmp_path, budgets=Budgets(handshake_timeout=60)) as srv:
        for request in requests:
            data = await _exchange(srv.port, request)
            assert data.split(b" ", 2)[1] in (b"200", b"206"), request


async def test_a_body_that_does_not_arrive_in_time_is_refused_408(tmp_path: Path) -> None:
    # A body begun and never finished held its connection and its request in flight for
    # good (Hypercorn has no read timeout): its head was bounded, its body was not.
    heads = [_json_post("/api/pub/seen", "Content-Length: 1000", "{"),
             _json_post("/api/pub/seen", "Transfer-Encoding: chunked", "1\r\n{\r\n"),
             _json_post("/mcp", "Content-Length: 1000", "{")]
    async with running_server(tmp_path, budgets=Budgets(handshake_timeout=0.5)) as srv:
        for head in heads:
            status, body = _status_and_json(await _exchange(srv.port, head))
            assert status == 408, head
            path = head.split(b" ")[1].decode()
            assert _refusal(path, body) == {
                "code": "bad_request", "message": "the request's body did not arrive "
                "within 0.5 s", "detail": {"timeout": 0.5}}
        assert srv.state.http_inflight == 0


async def test_a_client_leaving_mid_body_is_no_server_failure(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # The lab's routes let Starlette's ClientDisconnect out ("Error in ASGI Framework" and
    # a traceback), and the MCP SDK logged "Error handling POST request" with its own.
    caplog.set_level(logging.WARNING)
    async with running_server(tmp_path) as srv:
        for path in ("/api/pub/seen", "/mcp"):
            stream = await trio.open_tcp_stream("127.0.0.1", srv.port)
            await stream.send_all(_json_post(path, "Content-Length: 1000", "{"))
            with trio.fail_after(10):
                while srv.state.http_inflight == 0:
                    await trio.sleep(0.01)
            await stream.aclose()
            with trio.fail_after(10):
                while srv.state.http_inflight:
                    await trio.sleep(0.01)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_a_route_asked_with_another_method_gets_405_and_the_json_refusal(
        tmp_path: Path) -> None:
    # The static files' catch-all took every route's path asked with another method:
    # GET /api/ok and GET /mcp were 404, OPTIONS /api/ok a 405 that allowed GET, in text.
    asked = {("GET", "/api/ok"): "POST", ("OPTIONS", "/api/pub/seen"): "POST",
             ("GET", "/mcp"): "POST", ("PUT", "/mcp"): "POST",
             ("POST", "/healthz"): "GET, HEAD", ("DELETE", "/"): "GET, HEAD",
             ("POST", "/js/client.js"): "GET, HEAD"}
    async with running_server(tmp_path) as srv, httpx.AsyncClient(base_url=srv.url) as http:
        for (method, path), allow in asked.items():
            r = await http.request(method, path)
            assert (r.status_code, r.headers["allow"]) == (405, allow), (method, path)
            assert r.headers["x-content-type-options"] == "nosniff"
            assert _refusal(path, r.json()) == {
                "code": "bad_request", "message": f"{method} is not answered here; "
                f"allowed: {allow}", "detail": {"allow": allow.split(", ")}}
        assert (await http.get("/nope")).status_code == 404  # an unknown path: not found


async def test_every_http_request_spends_its_address_budget_and_is_refused_429_past_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Pages, scripts, /metrics, /healthz, 404s and /mcp alike: one address past
    `http_burst` is answered 429 with `Retry-After`, unread by any route and after a pause
    (its connection is not read meanwhile), while another address (a local supervisor's
    health checks) and the owner's token are still served."""
    budgets = Budgets(http_rate=0.1, http_burst=6)  # (none refilled while the test runs)
    paths = ["/", "/js/client.js", "/metrics", "/healthz", "/no/such/file", "/lobby/"]
    async with running_server(tmp_path, budgets=budgets) as srv, \
            httpx.AsyncClient(base_url=srv.url) as flood:
        for path in paths:
            assert (await flood.get(path)).status_code in (200, 404), path

        async def refused(path: str) -> None:
            response = await (flood.post(path, json={}) if path == "/mcp" else
                              flood.get(path))
            assert response.status_code == 429, path
            assert 1 <= int(response.headers["retry-after"]) <= 10  # whole seconds
            assert response.headers["x-content-type-options"] == "nosniff"
            refusal = _refusal(path, response.json())
            assert refusal["code"] == "over_budget"
            assert refusal["message"] == ("more than 0.1 HTTP requests per second from "
                                          "this address; slow down")
            assert refusal["detail"]["budget"] == "http_rate"
            assert 0 < refusal["detail"]["retry_after"] <= 10.01

        async with trio.open_nursery() as nursery:
            for path in [*paths, "/mcp"]:
                nursery.start_soon(refused, path)
        stream = await trio.open_tcp_stream("127.0.0.1", srv.port)
        async with stream:  # a pipelined flood: nothing is answered before the pause
            await stream.send_all(_request("GET /healthz HTTP/1.1") * 3)
            with trio.move_on_after(0.5):
                early = await stream.receive_some(65536)
                raise AssertionError(f"refused without a pause: {early!r}")
            answer = b""
            with trio.fail_after(10):
                while b"HTTP/1.1 429" not in answer:
                    answer += await stream.receive_some(65536)
        owner = {"Authorization": f"Bearer {srv.owner_token}"}  # the owner spends none
        assert (await flood.get("/metrics", headers=owner)).status_code == 200
        supervisor = httpx.AsyncHTTPTransport(local_address="127.0.0.2")
        async with httpx.AsyncClient(base_url=srv.url, transport=supervisor) as local:
            for _ in range(3):
                assert (await local.get("/healthz")).json()["ok"] is True
        assert srv.state.metrics.budget_hits.labels("http_rate").value >= 8
        assert "127.0.0.1 hit the http_rate budget" in caplog.text


def _unread(path: str, *headers: str) -> bytes:
    """A POST to `path` whose body, 200,000 bytes, is sent only in part."""
    return _request(f"POST {path} HTTP/1.1", "Content-Type: application/json", MCP_ACCEPT,
                    "Content-Length: 200000", *headers, body=" " * 70_000)


async def _answer_head(port: int, request: bytes, *, ends: bool) -> tuple[int, bool]:
    """The status of the answer to `request`, and whether it says `Connection: close`;
    read until the server closes the connection when it `ends`, else until the head is in."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(request)
        data = b""
        with trio.fail_after(10):
            while chunk := await stream.receive_some(65536):
                data += chunk
                if not ends and b"\r\n\r\n" in data:
                    break
    status, *headers = data.partition(b"\r\n\r\n")[0].decode().lower().split("\r\n")
    return int(status.split()[1]), "connection: close" in headers


async def test_a_refusal_before_its_body_arrived_ends_its_connection(
        tmp_path: Path) -> None:
    """Hypercorn ends a connection answered before its request's body arrived whole; every
    such answer says `Connection: close` (only /mcp's 413 did: a client sent its next
    request on the connection of an http_rate 429, a cpu 429, a 403, ..., never answered).
    A request without a body keeps its connection."""
    async with running_server(tmp_path, **burn_world.settings()) as srv:
        refusals = {_unread("/mcp", "Origin: http://elsewhere.example"): 403,
                    _unread("/js/client.js"): 405, _unread("/api/ok"): 401}
        for request, status in refusals.items():
            assert await _answer_head(srv.port, request, ends=True) == (status, True), \
                request[:60]
        assert await _answer_head(srv.port, _request(
            "POST /healthz HTTP/1.1", "Content-Length: 0"), ends=False) == (405, False)
        async with burn_world.others_busy(srv):  # the MCP door's 429: a spent account
            ledger, now = srv.state.ledger, trio.current_time()
            ledger.charge(ledger.client_account(None, "127.0.0.1", "spectator", now), 60.0,
                          now)
            assert await _answer_head(srv.port, _unread("/mcp"), ends=True) == (429, True)
    async with running_server(tmp_path, budgets=Budgets(http_rate=0.01, http_burst=1)) as srv:
        assert await _answer_head(srv.port, _request("GET /healthz HTTP/1.1"),
                                  ends=False) == (200, False)
        assert await _answer_head(srv.port, _unread("/api/pub/seen"), ends=True) == (
            429, True)  # HttpBudget's


async def test_refusals_past_max_paused_are_sent_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each pausing refusal holds its connection: behind a trusted proxy (no per-address
    bound on connections) a client could fill `max_connections` with them. Past
    MAX_PAUSED pausing at once, a refusal is sent without its pause."""
    monkeypatch.setattr(http_bounds, "MAX_PAUSED", 1)
    monkeypatch.setattr(http_bounds, "REFUSAL_PAUSE", 60.0)
    async with running_server(tmp_path, budgets=Budgets(http_rate=0.01, http_burst=1)) as srv, \
            httpx.AsyncClient(base_url=srv.url, timeout=90) as http:
        assert (await http.get("/healthz")).status_code == 200
        async with trio.open_nursery() as nursery:
            nursery.start_soon(http.get, "/healthz")  # pauses for its minute
            with trio.fail_after(10):
                while not srv.state.metrics.budget_hits.labels("http_rate").value:
                    await trio.sleep(0.01)
                assert (await http.get("/metrics")).status_code == 429
            nursery.cancel_scope.cancel()


async def test_an_answer_its_client_does_not_read_ends_its_connection(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Hypercorn writes shielded and has no write timeout: a client that asked for a file and
    # read none of it held its connection (its task, the file open) for good, and the
    # server's shutdown waited on it past graceful_timeout, its cancellation shielded off.
    caplog.set_level(logging.WARNING)
    size = 8_000_000  # more than the sockets' buffers hold
    web = tmp_path / "web"
    web.mkdir()
    (web / "big.bin").write_bytes(b"x" * size)
    async with running_server(tmp_path / "data", web_dir=web,
                              budgets=Budgets(send_timeout=0.5)) as srv:
        sock = trio.socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        await sock.connect(("127.0.0.1", srv.port))
        async with trio.SocketStream(sock) as stream:
            await stream.send_all(_request("GET /big.bin HTTP/1.1"))
            dropped = srv.state.metrics.budget_hits.labels("send_timeout")
            with trio.fail_after(30):
                while not dropped.value:
                    await trio.sleep(0.05)
                received = 0
                while chunk := await stream.receive_some(65536):
                    received += len(chunk)
            assert received < size  # cut short, then closed
    assert "from 127.0.0.1: it took under 64 KiB of an HTTP answer" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def _stalled_reader(port: int) -> trio.SocketStream:
    """A client that asks for /big.bin with a small window and reads none of it."""
    sock = trio.socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    await sock.connect(("127.0.0.1", port))
    stream = trio.SocketStream(sock)
    await stream.send_all(_request("GET /big.bin HTTP/1.1"))
    return stream


async def test_a_shutdown_cuts_an_answer_its_client_does_not_read(tmp_path: Path) -> None:
    # Hypercorn's sends are shielded: past graceful_timeout the server's cancel did not
    # reach one waiting on a client that reads nothing, and shutdown waited send_timeout.
    web = tmp_path / "web"
    web.mkdir()
    (web / "big.bin").write_bytes(b"x" * 8_000_000)
    with trio.fail_after(60):
        async with running_server(tmp_path / "data", web_dir=web, graceful_timeout=0.2,
                                  budgets=Budgets(send_timeout=20.0)) as srv:
            stream = await _stalled_reader(srv.port)
            await trio.sleep(0.5)  # its answer is being sent, and stalls
    dropped = srv.state.metrics.budget_hits.labels("send_timeout")
    assert dropped.value == 0  # cut by the shutdown, not by its send_timeout
    await stream.aclose()


async def test_a_client_reading_steadily_gets_a_long_single_body_answer_whole() -> None:
    # The bound is on progress, not on one write: an answer sent as one body (a lab
    # route's, /metrics) larger than a steady reader takes in send_timeout was cut.
    body = b"y" * 12_000_000

    async def big(_: Request) -> Response:
        return Response(body, media_type="application/octet-stream")

    async def no_ws(_: object) -> None:
        raise AssertionError("no websocket here")

    drops: list[tuple[str, float, str]] = []
    shutdown = trio.Event()
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(partial(
            serve_front, Starlette(routes=[Route("/big", big)]), hypercorn_config(1.0), "/ws",
            no_ws, host="127.0.0.1", port=0, max_size=1 << 20, max_frame=1 << 16,
            ping_interval=None, head_timeout=5.0, shutdown=shutdown, send_timeout=1.0,
            send_dropped=lambda *drop: drops.append(drop)))
        sock = trio.socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        await sock.connect(("127.0.0.1", int(binds[0].rpartition(":")[2])))
        received = b""
        async with trio.SocketStream(sock) as stream:
            await stream.send_all(_request("GET /big HTTP/1.1", "Connection: close"))
            with trio.fail_after(120):
                while chunk := await stream.receive_some(65536):
                    received += chunk
                    await trio.sleep(0.02)  # a few MB a second, never a pause
        shutdown.set()
    assert drops == []
    assert received.endswith(b"\r\n\r\n" + body)


async def test_a_connection_reset_mid_request_ends_with_its_answer() -> None:
    # Hypercorn recycled such a connection once its answer was written (to nobody) and
    # waited out the keep-alive timeout on it, counted against its address all along.
    entered, release = trio.Event(), trio.Event()

    async def slow(_: Request) -> Response:
        entered.set()
        await release.wait()
        return Response(b"late")

    async def no_ws(_: object) -> None:
        raise AssertionError("no websocket here")

    guard = TcpGuard(Budgets(), Proxies(), lambda *_: None)
    shutdown = trio.Event()
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(partial(
            serve_front, Starlette(routes=[Route("/slow", slow)]),
            hypercorn_config(1.0, keep_alive_timeout=3600), "/ws", no_ws, host="127.0.0.1",
            port=0, max_size=1 << 20, max_frame=1 << 16, ping_interval=None,
            head_timeout=5.0, shutdown=shutdown, guard=guard))
        sock = trio.socket.socket()
        await sock.connect(("127.0.0.1", int(binds[0].rpartition(":")[2])))
        await sock.send(_request("GET /slow HTTP/1.1"))
        with trio.fail_after(10):
            await entered.wait()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # a reset
        await trio.testing.wait_all_tasks_blocked()  # the server has read it
        release.set()
        with trio.fail_after(30):
            while guard.open:
                await trio.sleep(0.01)
        shutdown.set()
