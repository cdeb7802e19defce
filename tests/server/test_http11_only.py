"""The server speaks plain HTTP/1.1 (docs/operations.md): HTTP/2 over plain TCP, whose 100
streams per connection would multiply the per-address connection budget, is not served
(server/front.py: the preface refused, `Upgrade: h2c` not taken)."""

from __future__ import annotations

from pathlib import Path

import h2.config
import h2.connection
import trio

from tests.server.ws_harness import raw_client, result, running_server


async def _exchange(port: int, data: bytes) -> bytes | None:
    """Send `data`, and read what the server answers until it closes (None: it was still
    open, quiet, after 10 s)."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    await stream.send_all(data)
    answer: bytes | None = b""
    with trio.move_on_after(10) as quiet:
        while chunk := await stream.receive_some(65536):
            answer += chunk
    if quiet.cancelled_caught:
        answer = None
    await stream.aclose()
    return answer


def _h2_client() -> h2.connection.H2Connection:
    return h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))


async def test_the_http2_preface_is_refused(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        client = _h2_client()
        client.initiate_connection()
        client.send_headers(1, [(":method", "GET"), (":path", "/healthz"),
                                (":authority", "x"), (":scheme", "http")], end_stream=True)
        assert await _exchange(srv.port, client.data_to_send()) == b""  # closed unanswered
        async with raw_client(srv) as c:  # the server answers others
            assert result(await c.call("lobby.list"))["total"] == 0


async def test_an_upgrade_to_h2c_is_answered_as_http11(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        settings = _h2_client().initiate_upgrade_connection()
        answer = await _exchange(srv.port, (
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\n"
            b"Connection: Upgrade, HTTP2-Settings, close\r\nHTTP2-Settings: " + settings
            + b"\r\n\r\n"))
        assert answer is not None and answer.startswith(b"HTTP/1.1 200 "), answer
        assert b"h2c" not in answer and b" 101 " not in answer
        assert b'{"ok":true' in answer


async def test_an_upgrade_to_h2c_later_in_a_connection_is_answered_as_http11(
        tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        settings = _h2_client().initiate_upgrade_connection()
        answer = await _exchange(srv.port, (
            b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\n"
            b"Connection: Upgrade, HTTP2-Settings, close\r\nHTTP2-Settings: " + settings
            + b"\r\n\r\n"))
        assert answer is not None and answer.count(b"HTTP/1.1 200 ") == 2, answer
        assert b" 101 " not in answer
