"""The hello handshake and roles, over real sockets."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

import pytest
import trio
from websockets.exceptions import ConnectionClosed
from websockets.frames import Frame, Opcode
from websockets.trio.client import ClientConnection

from tests.server import raw_ws
from tests.server.raw_ws import HandshakeRefused, RawSocket
from tests.server.ws_harness import error, raw_client, result, running_server


async def test_hello_without_token_is_a_spectator_who_cannot_write(tmp_path: Path) -> None:
    async with running_server(tmp_path) as running, raw_client(running, hello=False) as c:
        await c.send({"op": "hello", "protocol": 1, "client": "t/1", "id": 4})
        welcome = await c.recv()
        assert welcome["id"] == 4
        assert result(welcome)["role"] == "spectator"
        assert result(await c.call("lobby.list")) == {"worlds": [], "total": 0, "offset": 0}
        refused = error(await c.call("lobby.create", kind="counter", name="a"))
        assert refused == {"code": "forbidden",
                           "message": "lobby.create needs the agent role; this connection is "
                                      "spectator",
                           "detail": {"role": "spectator", "required": "agent"}}
        assert result(await c.call("lobby.list")) == {"worlds": [], "total": 0, "offset": 0}


async def test_owner_token_and_agent_tokens_give_their_roles(tmp_path: Path) -> None:
    async with running_server(tmp_path) as running:
        agent_token = running.state.tokens.create("agent", "ann")
        async with raw_client(running, hello=False) as c:
            await c.send({"op": "hello", "protocol": 1, "token": running.owner_token})
            assert result(await c.recv())["role"] == "owner"
        async with raw_client(running, hello=False) as c:
            await c.send({"op": "hello", "protocol": 1, "token": agent_token})
            assert result(await c.recv())["name"] == "ann"
            made = result(await c.call("lobby.create", kind="counter", name="a"))
            assert made == {"id": "counter:a", "revision": 1}
            assert result(await c.call("counter.add", "counter:a", amount=3))["total"] == 3


async def test_bad_token_is_unauthorized_and_closed(tmp_path: Path) -> None:
    async with running_server(tmp_path) as running, raw_client(running, hello=False) as c:
        await c.send({"op": "hello", "protocol": 1, "token": "pdg_not-a-token", "id": 1})
        assert await c.recv() == {"id": 1, "ok": False, "error": {
            "code": "unauthorized", "message": "the token is unknown or was revoked",
            "detail": {}}}
        with pytest.raises(ConnectionClosed) as closed:
            await c.recv()
        assert closed.value.rcvd.code == 1008


async def test_revoked_token_is_unauthorized(tmp_path: Path) -> None:
    async with running_server(tmp_path) as running:
        token = running.state.tokens.create("agent", "bob")
        running.state.tokens.revoke("bob")
        async with raw_client(running, hello=False) as c:
            await c.send({"op": "hello", "protocol": 1, "token": token})
            assert error(await c.recv())["code"] == "unauthorized"


async def test_open_mode_makes_anonymous_connections_agents(tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as running, raw_client(running) as c:
        assert result(await c.call("lobby.create", kind="counter", name="x"))["id"] == "counter:x"


async def test_frames_before_hello_are_refused_and_hello_still_works(tmp_path: Path) -> None:
    async with running_server(tmp_path) as running, raw_client(running, hello=False) as c:
        await c.send({"id": 3, "op": "lobby.list"})
        assert await c.recv() == {"id": 3, "ok": False, "error": {
            "code": "bad_request", "message": "the first frame must be a hello",
            "detail": {"expected": "hello"}}}
        await c.send({"op": "hello", "protocol": 2})
        assert error(await c.recv())["message"] == "protocol: this server speaks protocol 1"
        await c.send({"op": "hello", "protocol": 1})
        assert result(await c.recv())["protocol"] == 1
        await c.send({"op": "hello", "protocol": 1, "id": 9})
        assert await c.recv() == {"id": 9, "ok": False, "error": {
            "code": "bad_request", "message": "hello was already said", "detail": {}}}


async def test_a_connection_that_says_no_hello_is_closed(tmp_path: Path) -> None:
    async with running_server(tmp_path, hello_timeout=0.2) as running, \
            raw_client(running, hello=False) as c:
        with pytest.raises(ConnectionClosed) as closed:
            await c.recv(timeout=5)
        assert closed.value.rcvd.code == 1008


async def test_a_connection_that_says_no_hello_and_reads_nothing_is_let_go(
        tmp_path: Path) -> None:
    """A client that sends junk and reads none of the refusals never takes our close
    either: its connection (and its place among those without a hello) is let go within
    the close wait all the same, not when the pings find it dead."""
    async with running_server(tmp_path, hello_timeout=0.3, ping_interval=60.0) as running:
        sock = await RawSocket.open(running.port)
        sock.stream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        with trio.move_on_after(2):  # until the server stops reading: its replies wait
            await sock.stream.send_all(raw_ws.frame(raw_ws.TEXT, b"x") * 20_000)
        with trio.fail_after(5):
            while running.state.ledger.ungreeted or running.state.sessions:
                await trio.sleep(0.05)
        await sock.aclose()


class PingCounting(ClientConnection):
    """A client connection that counts the ping frames the server sends."""

    pings = 0

    def process_event(self, event: Frame) -> None:
        if isinstance(event, Frame) and event.opcode is Opcode.PING:
            type(self).pings += 1
        super().process_event(event)


async def test_the_server_sends_keepalive_pings(tmp_path: Path) -> None:
    async with running_server(tmp_path, ping_interval=0.1) as running, \
            raw_client(running, create_connection=PingCounting, ping_interval=None) as c:
        await trio.sleep(0.6)
        assert result(await c.call("lobby.list")) == {"worlds": [], "total": 0, "offset": 0}  # pongs kept it open
    assert PingCounting.pings >= 3


async def test_frames_before_hello_are_rate_limited_too(tmp_path: Path) -> None:
    async with running_server(tmp_path, rate=1, burst=3) as running, \
            raw_client(running, hello=False) as c:
        for _ in range(6):
            await c.send("junk")
        codes = [(await c.recv())["error"]["code"] for _ in range(6)]
        assert codes[:3] == ["bad_request"] * 3
        assert codes.count("rate_limited") >= 2


async def test_frames_before_hello_cost_little_and_come_slowly(tmp_path: Path) -> None:
    """Nothing is charged before the hello: a frame longer than any hello is refused
    unread (one longer than `max_frame` is not even kept: `too_large`, as after the
    hello), and after each refusal the connection rests before the next is read."""
    async with running_server(tmp_path) as running, raw_client(running, hello=False) as c:
        await c.send("[" + "0," * 4000)  # not JSON, but refused for its length, unread
        assert error(await c.recv()) == {"code": "bad_request", "detail": {"expected": "hello"},
                                         "message": "the first frame must be a hello"}
        await c.send("[" + "0," * 40_000)
        assert error(await c.recv()) == {"code": "too_large", "detail": {"max_frame": 65536},
                                         "message": "the frame is longer than 65536 bytes"}
        for _ in range(20):
            await c.send("junk")
        seen = 0
        with trio.move_on_after(1.0):
            while True:
                assert error(await c.recv())["code"] == "bad_request"
                seen += 1
        assert 3 <= seen <= 15, seen  # 0.1 s between reads: ~10 in a second, not all 20
        await c.send({"op": "hello", "protocol": 1})
        while "result" not in (reply := await c.recv()):
            pass  # the junk's last refusals
        assert reply["result"]["protocol"] == 1


async def test_a_refused_upgrade_is_the_clients_doing_not_a_server_failure(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An upgrade request websockets refuses (here a version it does not speak) is
    answered 400 and closed, with no error logged: any client may send many."""
    async with running_server(tmp_path) as running:
        for _ in range(3):
            with pytest.raises(HandshakeRefused) as refused:
                await RawSocket.open(running.port, headers={"Sec-WebSocket-Version": "8"})
            assert refused.value.status == 400
        async with raw_client(running) as c:  # (the refusals are all handled by now)
            assert result(await c.call("lobby.list"))["total"] == 0
        assert running.state.metrics.warnings.labels("close_1011").value == 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING
                and not r.getMessage().startswith("descriptors: ")]  # (this host's limit)


async def test_a_frame_sent_with_the_upgrade_request_is_read(tmp_path: Path) -> None:
    # A client may send its first frame in the same packet as its upgrade request, before
    # our 101: those bytes must reach the session, not stay with the handshake's parser.
    async with running_server(tmp_path) as running:
        host, port = running.ws_url.removeprefix("ws://").split("/")[0].split(":")
        hello = json.dumps({"op": "hello", "protocol": 1, "id": 9})
        head = (f"GET /ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n").encode()
        frame = Frame(Opcode.TEXT, hello.encode()).serialize(mask=True, extensions=[])
        stream = await trio.open_tcp_stream(host, int(port))
        async with stream:
            await stream.send_all(head + frame)
            data = b""
            with trio.fail_after(10):
                while b"\r\n\r\n" not in data:
                    data += await stream.receive_some(4096)
                response, _, rest = data.partition(b"\r\n\r\n")
                assert response.startswith(b"HTTP/1.1 101")
                while len(rest) < 4:
                    rest += await stream.receive_some(4096)
                assert rest[0] == 0x81 and rest[1] == 126  # a text frame, 16-bit length
                size = int.from_bytes(rest[2:4], "big")
                while len(rest) < 4 + size:
                    rest += await stream.receive_some(4096)
        welcome = json.loads(rest[4:4 + size])
        assert welcome["id"] == 9 and welcome["ok"] is True
