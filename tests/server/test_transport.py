"""server/transport.py's WebSocket on a real loopback socket, without the rest of the server."""

from __future__ import annotations

import socket
from typing import Any

import trio
import trio.testing
from websockets.frames import Frame, Opcode

from server.transport import Skipped, WebSocket
from server.wsframes import FRAMES_PER_PASS
from server.wsprotocol import text_frame
from tests.server.raw_ws import BINARY, CLOSE, PING, PONG, TEXT, RawSocket, frame, request
from tests.steps import Steps


async def test_messages_from_one_read_are_handed_out_one_per_turn_of_the_run_queue() -> None:
    """A client that packs many requests into one TCP segment does not hold the loop for
    all of them: `receive` yields before each message after the first of a read."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    client = await trio.open_tcp_stream("127.0.0.1", port)
    server_side = await listeners[0].accept()
    head = request(port)
    await client.send_all(head)
    ws = WebSocket(server_side, await server_side.receive_some(65536), 1 << 20)
    await ws.accept()
    assert b" 101 " in await client.receive_some(65536)
    await client.send_all(b"".join(frame(TEXT, f'"{k}"'.encode()) for k in range(4)))

    me = trio.lowlevel.current_task()
    steps = Steps(me)
    trio.lowlevel.add_instrument(steps)
    try:
        await trio.sleep(0.05)  # the four frames are in the socket's buffer
        seen = []
        for _ in range(4):
            before = steps.count
            message = await ws.receive()
            seen.append((message["text"], steps.count - before))
    finally:
        trio.lowlevel.remove_instrument(steps)
    assert [text for text, _ in seen] == ['"0"', '"1"', '"2"', '"3"']
    assert all(yielded >= 1 for _, yielded in seen), seen  # every receive let others run
    await client.aclose()
    await ws.abort()
    for listener in listeners:
        await listener.aclose()


def test_a_text_frame_is_what_websockets_frames_and_is_made_once_per_text() -> None:
    """`text_frame` writes the frame websockets' own serializer writes for a server (no
    mask, no extension) at each length encoding; the same text object is framed once."""
    for size in (0, 1, 125, 126, 65535, 65536, 70000):
        text = "é" * (size // 2) + "x" * (size % 2)
        assert text_frame(text) == Frame(Opcode.TEXT, text.encode()).serialize(mask=False)
    text = '{"push": "the same for everyone"}'
    assert text_frame(text) is text_frame(text)


async def _pair(sndbuf: int | None = None, max_frame: int | None = None
                ) -> tuple[trio.SocketStream, WebSocket, Any]:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    client = await trio.open_tcp_stream("127.0.0.1", port)
    if sndbuf is not None:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, sndbuf)
    server_side = await listeners[0].accept()
    if sndbuf is not None:
        server_side.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
    await client.send_all(request(port))
    ws = WebSocket(server_side, await server_side.receive_some(65536), 1 << 20,
                   max_frame=max_frame)
    await ws.accept()
    assert b" 101 " in await client.receive_some(65536)
    for listener in listeners:
        await listener.aclose()
    return client, ws, RawSocket(client, b"")


async def test_send_at_once_writes_without_waiting_and_owes_the_rest_of_a_message() -> None:
    """A free socket takes a message at once; a full one takes part of it, the rest is
    owed (no other message may start) until a flush writes it, and the client reads
    every message whole and in order."""
    client, ws, raw = await _pair(sndbuf=65536)
    assert ws.send_at_once('"small"')
    assert not ws.owes
    assert await raw.recv_frame() == (TEXT, b'"small"')

    big = '"' + "b" * 1_000_000 + '"'  # far more than the socket's buffers hold
    assert ws.send_at_once(big)
    assert ws.owes  # only a part went
    assert not ws.send_at_once('"after"')  # nothing may come between the parts
    received: list[tuple[int, bytes]] = []

    async def read_two() -> None:
        for _ in range(2):
            received.append(await raw.recv_frame())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read_two)
        await ws.flush()  # waits for the client to take the rest
        assert not ws.owes
        await ws.send_text('"after"')
    assert received == [(TEXT, big.encode()), (TEXT, b'"after"')]
    await client.aclose()
    await ws.abort()


async def test_send_at_once_refuses_while_a_send_waits_and_once_closing() -> None:
    """While a send waits for the socket, `send_at_once` writes nothing (the message
    would cut into it); once the closing handshake began, nothing at all."""
    client, ws, raw = await _pair(sndbuf=65536)
    big = '"' + "c" * 1_000_000 + '"'
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ws.send_text, big)
        await trio.sleep(0.05)  # the send waits for room
        assert not ws.send_at_once('"cut in"')
        assert await raw.recv_frame() == (TEXT, big.encode())
    await ws.close()
    assert not ws.send_at_once('"too late"')
    await client.aclose()
    await ws.abort()


async def test_frames_split_fragmented_and_mixed_with_pings_arrive_whole_and_in_order() -> None:
    """Whole data frames are parsed by the transport itself, everything else by
    websockets' parser: a frame split over reads waits until whole, a fragmented
    message is put together, a ping between messages is answered, and the messages come
    out in the order sent."""
    client, ws, raw = await _pair()
    first = frame(TEXT, b'"one"')
    await client.send_all(first[:3])
    await trio.sleep(0.02)
    await client.send_all(first[3:]
                          + frame(TEXT, b'"tw', fin=False) + frame(0x0, b'o"')
                          + frame(PING, b"p") + frame(BINARY, b"three")
                          + frame(TEXT, b'"four"'))
    got = [await ws.receive() for _ in range(4)]
    assert [m.get("text", m.get("bytes")) for m in got] == ['"one"', '"two"', b"three",
                                                           '"four"']
    assert await raw.recv_frame() == (PONG, b"p")
    trickled = frame(TEXT, b'"' + b"t" * 300 + b'"')  # a 16-bit length, a byte per read
    got.clear()

    async def receive_one() -> None:
        got.append(await ws.receive())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(receive_one)
        for k in range(len(trickled)):
            await trio.testing.wait_all_tasks_blocked()  # the byte before was read
            await client.send_all(trickled[k:k + 1])
    assert got[0]["text"] == '"' + "t" * 300 + '"'
    await client.aclose()
    await ws.abort()


async def test_a_flood_of_pings_gets_one_pong_per_read() -> None:
    """Of the pings one read brings, only the last is answered (RFC 6455 5.5.3), and a
    client's pongs are skipped: a flood of them costs the server a header each, not
    websockets' parse (and a pong) each."""
    client, ws, raw = await _pair()
    flood = b"".join(frame(PING, b"%d" % k) + frame(PONG, b"x") for k in range(1000))
    await client.send_all(flood + frame(TEXT, b'"after"'))  # one read takes it all
    assert (await ws.receive())["text"] == '"after"'
    await ws.close()
    got = []
    while (got_frame := await raw.recv_frame())[0] != CLOSE:
        got.append(got_frame)
    assert got == [(PONG, b"999")]
    await client.aclose()
    await ws.abort()


async def test_a_frame_announced_too_big_closes_1009_without_waiting_for_it() -> None:
    """A header saying more than the size limit is refused at once (1009), before its
    payload arrives."""
    client, ws, raw = await _pair()
    await client.send_all(bytes([0x81, 0xFF]) + (2 << 20).to_bytes(8, "big") + b"mask")
    assert (await ws.receive())["type"] == "websocket.disconnect"
    opcode, payload = await raw.recv_frame()
    assert (opcode, int.from_bytes(payload[:2], "big")) == (CLOSE, 1009)
    await client.aclose()


async def _read(ws: WebSocket, client: trio.SocketStream, data: bytes) -> list[Any]:
    """Send `data` and read it in one read: the messages it completes."""
    await client.send_all(data)
    await trio.lowlevel.wait_readable(ws.fileno())
    assert ws.read_some()
    messages = []
    while (message := ws.next_message()) is not None:
        messages.append(message)
    return messages


async def test_a_read_of_many_frames_is_parsed_a_pass_at_a_time_in_order() -> None:
    """A read's frames are parsed FRAMES_PER_PASS at a time as they are handed out (the
    whole read was parsed at once: thousands of objects for 64 KiB of empty frames; what
    a read holds now: tests/server/test_ws_hostile.py). They come out in order, a
    fragmented message across two passes whole, and the pings as from one pass: a ping
    ending a pass is carried into the next and answered with the fragment websockets
    parses there; of two pings before one frame, the last is."""
    client, ws, raw = await _pair()
    texts = [f'"{k}"' for k in range(5 * FRAMES_PER_PASS)]
    last = FRAMES_PER_PASS - 1  # the place of the last frame of the first pass
    second = 2 * FRAMES_PER_PASS - 1  # ... of the second
    data = b"".join(frame(TEXT, t.encode()) for t in texts[:last]) + frame(PING, b"z")
    data += frame(TEXT, b'"', fin=False) + frame(0x0, f'{last}"'.encode())
    data += b"".join(frame(TEXT, t.encode()) for t in texts[last + 1:second - 2])
    data += frame(TEXT, b'"', fin=False) + frame(0x0, f"{second - 2}".encode(), fin=False)
    data += frame(0x0, b'"') + frame(TEXT, texts[second - 1].encode())  # frames 127-130
    data += frame(PING, b"a") + frame(PING, b"b")
    data += frame(TEXT, b'"', fin=False) + frame(0x0, f'{second}"'.encode())
    data += b"".join(frame(TEXT, t.encode()) for t in texts[second + 1:])
    messages = await _read(ws, client, data)
    assert messages == texts
    assert not ws.has_message
    await ws.close()
    got = []
    while (got_frame := await raw.recv_frame())[0] != CLOSE:
        got.append(got_frame)
    assert got == [(PONG, b"z"), (PONG, b"b")]
    await client.aclose()
    await ws.abort()


async def _two_passes_then_a_ping(payload: bytes) -> tuple[trio.SocketStream, WebSocket, Any]:
    """A pair whose server side took two passes of texts from one read, a ping after them
    left for a third pass."""
    client, ws, raw = await _pair()
    texts = [f'"{k}"' for k in range(2 * FRAMES_PER_PASS)]
    await client.send_all(b"".join(frame(TEXT, t.encode()) for t in texts)
                          + frame(PING, payload))
    for text in texts:
        assert (await ws.receive())["text"] == text
    return client, ws, raw


async def _pong_while_receiving(ws: WebSocket, raw: Any, payload: bytes) -> None:
    """The pong of `payload` arrives while `ws` receives (what is left of the read is
    parsed and what is owed flushed, then it waits for the socket)."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ws.receive)
        with trio.fail_after(10):
            assert await raw.recv_frame() == (PONG, payload)
        nursery.cancel_scope.cancel()


async def test_a_ping_in_a_later_pass_is_answered_without_more_from_the_client() -> None:
    """A pong made by a later pass over a read goes out as the messages are taken (it
    waited in the protocol until the client sent more: a keepalive ping after a batch of
    requests went unanswered)."""
    client, ws, raw = await _two_passes_then_a_ping(b"late")
    await _pong_while_receiving(ws, raw, b"late")
    await client.aclose()
    await ws.abort()


async def test_a_pong_a_later_pass_could_not_write_goes_with_the_next_flush() -> None:
    """A send in progress when a later pass makes a pong: the pong is owed (`flush_owed`,
    which the session turns into a flush by its writer), and goes with the next flush."""
    client, ws, raw = await _two_passes_then_a_ping(b"owed")
    ws._send_lock.acquire_nowait()  # a reply being written
    assert ws.next_message() is None  # the last pass: its pong cannot go now
    assert ws.flush_owed
    ws._send_lock.release()
    await _pong_while_receiving(ws, raw, b"owed")
    assert not ws.flush_owed
    await client.aclose()
    await ws.abort()


async def test_nothing_is_handed_out_after_the_servers_close() -> None:
    """Once the server has sent its close, the rest of a read is not handed out, nor
    parsed (it was parsed and decoded, only for the close to drop each message). The end
    of the connection follows."""
    client, ws, _ = await _pair()
    await client.send_all(frame(TEXT, b'"x"') * 5000)
    await trio.lowlevel.wait_readable(ws.fileno())
    assert (await ws.receive())["text"] == '"x"'
    assert ws.has_message
    await ws.close(1001)
    assert not ws.has_message
    with trio.fail_after(10):
        assert (await ws.receive())["type"] == "websocket.disconnect"
    await client.aclose()
    await ws.abort()


async def test_a_message_longer_than_max_frame_is_skipped_and_handed_out_at_its_end() -> None:
    """A frame's payload is counted down over reads, not kept (what the server holds
    meanwhile: tests/server/test_ws_hostile.py) nor decoded (this one is not UTF-8), and the
    message comes out `Skipped` once its last byte is read, leaving nothing begun; so does
    a fragmented one once it passes `max_frame`. The frames after them come out as before."""
    client, ws, _ = await _pair(max_frame=100)
    big = frame(TEXT, b"\xff" * 300)
    assert await _read(ws, client, big[:50]) == []
    assert ws.message_began is not None
    assert await _read(ws, client, big[50:]) == [Skipped(text=True, fragmented=False)]
    assert ws.message_began is None
    assert await _read(ws, client, frame(BINARY, b"b" * 60, fin=False)) == []
    assert await _read(ws, client, frame(0x0, b"b" * 60) + frame(TEXT, b'"after"')) == [
        Skipped(text=False, fragmented=True), '"after"']
    assert ws.message_began is None
    await client.aclose()
    await ws.abort()


async def test_an_aborted_websocket_is_closed_to_every_task_that_still_holds_it() -> None:
    """A drop (the pinger's, the watchdog's) lets the protocol go: sends refuse and the
    reader hears the end at once, as when the end of stream was read (they used to go on,
    the closing reader spinning on a protocol that never closed)."""
    client, ws, _ = await _pair()
    await ws.abort()
    assert not ws.open
    try:
        await ws.send_text('"after"')
    except ConnectionError:
        pass
    else:
        raise AssertionError("a send after the drop was taken")
    with trio.fail_after(1):
        assert (await ws.receive())["type"] == "websocket.disconnect"
    await client.aclose()


async def test_a_drop_while_a_failed_send_winds_down_leaves_that_task_whole() -> None:
    """A send that fails leaves the parser's error holding, through its context, the
    sending task's frame; a drop in that task's last step (the pinger's ping, then the
    connection's end) must not close that suspended coroutine (`forget_frames` clears
    the frames of none)."""
    ours, theirs = trio.socket.socketpair()
    ws = WebSocket(trio.SocketStream(ours), request(80), 1 << 20)
    await ws.accept()
    theirs.close()  # the 101 went; the next write fails at once
    outcome: list[str] = []

    async def ping() -> None:
        await ws.ping(0.0)
        outcome.append("returned")

    async def drop() -> None:
        await trio.lowlevel.checkpoint()  # the ping's send failed: it is in its last step
        await ws.abort()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ping)
        nursery.start_soon(drop)
    assert outcome == ["returned"]
