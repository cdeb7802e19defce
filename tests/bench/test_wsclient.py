"""The lean websocket client of the load generator against a real server (`websockets`'
trio server, in process, on loopback): handshake, both frame kinds, every length
encoding, fragments, pings, and the close."""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial

import pytest
import trio
from websockets.trio.server import ServerConnection, serve

from bench._wsclient import BINARY, TEXT, Closed, WsClient, frame


async def _handler(ws: ServerConnection) -> None:
    async for message in ws:
        if message == "fragments":
            await ws.send(["frag", "ments", "!"])
        elif message == "ping":
            pong = await ws.ping()
            await ws.send("pinged")  # after the ping: the client meets the ping first
            with trio.fail_after(5):
                await pong.wait()
            await ws.send("ponged")
        elif message == "bye":
            await ws.aclose(4001)
        else:
            await ws.send(message)  # text as text, bytes as binary


@pytest.fixture
async def url() -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        server = await nursery.start(partial(serve, _handler, 0, host="127.0.0.1",
                                             compression=None))
        port = server.listeners[0].socket.getsockname()[1]
        yield f"ws://127.0.0.1:{port}/any/path?x=1"
        nursery.cancel_scope.cancel()


async def test_text_and_binary_frames_come_back_as_their_bytes(url: str) -> None:
    ws = await WsClient.connect(url)
    await ws.send(b"hello", TEXT)
    assert await ws.recv() == b"hello"
    await ws.send_frame(frame(b"\x00\xff", BINARY))
    assert await ws.recv() == b"\x00\xff"
    await ws.aclose()


@pytest.mark.parametrize("size", [125, 126, 65535, 65536, 200_000])
async def test_every_length_encoding(url: str, size: int) -> None:
    ws = await WsClient.connect(url)
    payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
    await ws.send(payload)
    assert await ws.recv() == payload
    await ws.aclose()


async def test_a_fragmented_message_is_reassembled(url: str) -> None:
    ws = await WsClient.connect(url)
    await ws.send(b"fragments", TEXT)
    assert await ws.recv() == b"fragments!"
    await ws.aclose()


async def test_a_ping_is_answered_on_the_way_to_the_next_message(url: str) -> None:
    ws = await WsClient.connect(url)
    await ws.send(b"ping", TEXT)
    assert await ws.recv() == b"pinged"
    assert await ws.recv() == b"ponged"  # the server got our pong
    await ws.aclose()


async def test_the_server_close_raises_closed_with_its_code(url: str) -> None:
    ws = await WsClient.connect(url)
    await ws.send(b"bye", TEXT)
    with pytest.raises(Closed) as closed:
        await ws.recv()
    assert closed.value.args == (4001,)
    await ws.aclose()


async def test_a_refused_handshake_raises_closed() -> None:
    async def not_websocket(stream: trio.SocketStream) -> None:
        await stream.send_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, not_websocket, 0,
                                                host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        with pytest.raises(Closed, match="404"):
            await WsClient.connect(f"ws://127.0.0.1:{port}/")
        nursery.cancel_scope.cancel()
