"""The peer port before a connection is known: a hello is read with a small bound, the
connections that have not said hello are capped (their refusals logged at most every
10 s), one that says nothing is closed with a plain log line; and a line is bounded (that
its split is linear in its length is a speed: not asserted here)."""

from __future__ import annotations

import logging

import pytest
import trio

from server.cluster import peers
from server.cluster.wire import MAX_HELLO, Lines
from tests.cluster.conftest import Node, Nodes


class _Chunks(trio.abc.ReceiveStream):
    """`data` handed out `size` bytes at a time."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size, self.at = data, size, 0

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        chunk = self.data[self.at:self.at + self.size]
        self.at += len(chunk)
        return chunk

    async def aclose(self) -> None:
        pass


async def test_lines_refuse_a_line_over_their_bound() -> None:
    with pytest.raises(ValueError, match="longer than the limit"):
        await Lines(_Chunks(b"x" * (MAX_HELLO + 1), 1024), MAX_HELLO).next()
    with pytest.raises(ValueError, match="longer than the limit"):
        await Lines(_Chunks(b'"' + b"x" * MAX_HELLO + b'"\n', 1 << 16), MAX_HELLO).next()
    assert await Lines(_Chunks(b'{"op": "hello"}\n', 3), MAX_HELLO).next() == {"op": "hello"}


async def _connect(node: Node) -> trio.SocketStream:
    host, _, port = node.cluster.addr.rpartition(":")
    return await trio.open_tcp_stream(host, int(port))


async def _closed_within(stream: trio.SocketStream, seconds: float) -> bytes:
    """What the server sent before closing `stream`, which must happen within `seconds`."""
    received = b""
    with trio.fail_after(seconds):
        while chunk := await stream.receive_some(1 << 16):
            received += chunk
    return received


@pytest.mark.postgres
async def test_a_long_hello_is_refused_at_once(nodes: Nodes) -> None:
    a = await nodes.start("a")
    stream = await _connect(a)
    async with stream:
        try:
            await stream.send_all(b"x" * (64 << 10))  # no newline: one long line
        except trio.BrokenResourceError:
            pass  # closed while sending: refused
        received = await _closed_within(stream, 1.0)  # not after the 2 s hello window
    assert b"longer" not in received  # a refusal names nothing of the server's state


@pytest.mark.postgres
async def test_connections_that_have_not_said_hello_are_capped(
        nodes: Nodes, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peers, "MAX_GREETING", 3)
    a = await nodes.start("a")
    waiting = [await _connect(a) for _ in range(3)]
    await trio.sleep(0.2)
    extra = await _connect(a)
    async with extra:
        assert await _closed_within(extra, 1.0) == b""
    assert a.cluster.peers.crowded == 1
    for stream in waiting:
        await stream.aclose()
    # A real peer still gets in once they are gone.
    b = await nodes.start("b")
    async with await _connect(b):
        pass
    assert await b.cluster.router._link("a") is not None


async def test_refused_crowds_are_logged_at_most_every_ten_seconds_with_the_count(
        autojump_clock: trio.abc.Clock, caplog: pytest.LogCaptureFixture) -> None:
    server = peers.PeerServer("a", "secret", None)  # type: ignore[arg-type]
    for _ in range(5):
        server._refuse_crowd()
        await trio.sleep(1)
    await trio.sleep(peers.CROWD_LOG_EVERY)
    server._refuse_crowd()
    assert server.crowded == 6
    assert [r.getMessage() for r in caplog.records if r.name == "petridish.cluster"] == [
        f"the peer port refused {n} connection(s): {peers.MAX_GREETING} others have not "
        "said hello yet" for n in (1, 5)]


@pytest.mark.postgres
async def test_a_connection_that_says_nothing_is_closed_with_a_plain_log_line(
        nodes: Nodes, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    a = await nodes.start("a")
    monkeypatch.setattr(peers, "HELLO_TIMEOUT", 0.3)
    caplog.set_level(logging.DEBUG, logger="petridish.cluster")
    async with await _connect(a) as stream:
        await _closed_within(stream, 2.0)
    await trio.sleep(0.1)
    lines = [r for r in caplog.records if r.name == "petridish.cluster"]
    assert any("sent no hello within 0.3 s" in r.getMessage() for r in lines), \
        [r.getMessage() for r in lines]
    assert not [r for r in lines if r.exc_info or "UnboundLocalError" in r.getMessage()]
