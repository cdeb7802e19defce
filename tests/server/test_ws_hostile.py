"""What a hostile client can make a websocket cost: frames that complete no message
(control frames, fragments) spend a bucket of their own and the client's CPU time
(server/wsframes.py `_frames`, server/session.py `_charge_io`); a message longer than
`max_frame` is skipped as it comes, not held, and refused `too_large`; and a frame or
message must arrive whole within MESSAGE_INTERVALS pings (server/keepalive.py), so one
trickled a byte at a time, or fragments that never end, are dropped; a slow link that
keeps sending within that time is served."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
import trio
import trio.testing

from server.budgets import Budgets
from server.transport import RECEIVE
from server.wsframes import FRAMES_PER_PASS
from server.wsprotocol import OpenProtocol
from tests.server.raw_ws import PING, PONG, TEXT, RawSocket, frame
from tests.server.ws_harness import raw_client, result, running_server


async def _served(srv) -> None:
    """Another client is served as before."""
    async with raw_client(srv) as c:
        assert result(await c.call("lobby.list"))["total"] == 0


FLOODS = {"pings": (b"", frame(PING, b"")), "pongs": (b"", frame(PONG, b"")),
          "fragments": (frame(TEXT, b"[", fin=False), frame(0x0, b"", fin=False))}


@pytest.mark.parametrize("what", sorted(FLOODS))
async def test_a_flood_of_frames_that_complete_no_message_is_closed_as_a_policy_violation(
        tmp_path: Path, what: str) -> None:
    """Empty pings (or pongs) cost no token of the frame bucket and got one pong per read,
    and empty fragments cost nothing until their message ended: one connection could keep
    the server busy. Past a bucket of their own (`rate` and `burst` again) the connection
    is closed with 1008, which /metrics counts."""
    start, step = FLOODS[what]
    async with running_server(tmp_path) as srv:
        sock = await RawSocket.open(srv.port)
        assert (await sock.hello())["ok"]
        await sock.send(start + step * (srv.state.config.burst * 2 + 100))
        assert await sock.close_code() == 1008
        await sock.aclose()
        await _served(srv)
        assert srv.state.metrics.violation_closes.labels("1008").value == 1


async def test_a_flood_of_pings_before_the_hello_is_closed_too(tmp_path: Path) -> None:
    async with running_server(tmp_path, hello_timeout=60.0) as srv:
        sock = await RawSocket.open(srv.port)
        await sock.send(frame(PING, b"") * (srv.state.config.burst * 2 + 100))
        assert await sock.close_code() == 1008
        await sock.aclose()
        await _served(srv)


async def test_pings_within_the_bound_are_answered_and_the_connection_served(
        tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        sock = await RawSocket.open(srv.port)
        assert (await sock.hello())["ok"]
        for k in range(5):
            await sock.send(frame(PING, b"%d" % k) * 20)  # one pong answers a read's pings
            with trio.fail_after(10):
                while await sock.recv_frame() != (PONG, b"%d" % k):
                    pass
        await sock.send_json({"id": 1, "op": "lobby.list", "args": {}})
        assert (await sock.recv_json())["ok"]
        await sock.aclose()


async def test_a_stream_of_control_frames_is_charged_to_its_client(tmp_path: Path) -> None:
    """Reads that complete no message (here pings) are charged when they are read, not
    with a next message that never comes."""
    budgets = Budgets(cpu_rate=1e-9, cpu_burst_anonymous=10.0)  # no refill: level = spend
    async with running_server(tmp_path, budgets=budgets) as srv:
        sock = await RawSocket.open(srv.port)
        assert (await sock.hello())["ok"]
        account = srv.state.ledger.accounts["address:127.0.0.1"]
        before = account.cpu.level
        for k in range(20):  # a read each: the pong of one comes before the next ping
            await sock.send(frame(PING, b"%d" % k))
            with trio.fail_after(10):
                while await sock.recv_frame() != (PONG, b"%d" % k):
                    pass
        assert account.cpu.level < before
        await sock.aclose()


async def test_a_client_whose_control_frames_spend_its_cpu_budget_rests(
        tmp_path: Path) -> None:
    budgets = Budgets(cpu_rate=1e-6, cpu_burst_anonymous=1e-6, cpu_contended=0.0)
    async with running_server(tmp_path, budgets=budgets) as srv:
        sock = await RawSocket.open(srv.port)
        assert (await sock.hello())["ok"]
        with trio.fail_after(10):
            while ("cpu", "127.0.0.1") not in srv.state.ledger.hits:
                await sock.send(frame(PING, b""))
                await trio.sleep(0.01)
        await sock.aclose()


TOO_LARGE = {"id": None, "ok": False, "error": {
    "code": "too_large", "message": "the frame is longer than 65536 bytes",
    "detail": {"max_frame": 65536}}}
# (It names a message that came in fragments as such: it said "frame" of it too.)
TOO_LARGE_FRAGMENTED = {**TOO_LARGE, "error": {
    **TOO_LARGE["error"], "message": "the fragmented message is longer than 65536 bytes"}}
# Allowance for what the transport keeps besides the message's bytes (its read buffer's
# rest, objects of a frame being parsed).
SLACK = 16384
_TRANSPORT = [tracemalloc.Filter(True, f"*/server/{name}", all_frames=True)
              for name in ("transport.py", "wsframes.py")]
_FRAMES = 25  # of each allocation's stack: what websockets' parser makes under ours counts


async def _most_held(sock: RawSocket, data: bytes, piece: int = 8192) -> int:
    """Send `data` in pieces, each read by the server before the next: the most bytes
    allocated under the websocket transport (server/transport.py, server/wsframes.py: its
    own and websockets' parser's, which makes the frames it holds) still held after a
    read."""
    tracemalloc.start(_FRAMES)
    try:
        most = 0
        for at in range(0, len(data), piece):
            await sock.send(data[at:at + piece])
            await trio.testing.wait_all_tasks_blocked()  # read (loopback: at once)
            held = tracemalloc.take_snapshot().filter_traces(_TRANSPORT)
            most = max(most, sum(stat.size for stat in held.statistics("filename")))
    finally:
        tracemalloc.stop()
    return most


async def _answered(sock: RawSocket) -> None:
    await sock.send_json({"id": 1, "op": "lobby.list", "args": {}})
    assert (await sock.recv_json())["result"]["total"] == 0


async def test_a_frame_longer_than_max_frame_is_skipped_as_it_comes_then_refused(
        tmp_path: Path) -> None:
    """Up to 16 times `max_frame`, a frame was held whole (and decoded) only to be refused
    by its length: now its bytes are counted, not kept, and not decoded either (the
    invalid UTF-8 here is never seen: `too_large`, not 1007). The connection goes on."""
    async with running_server(tmp_path) as srv:
        sock = await RawSocket.open(srv.port)
        assert (await sock.hello())["ok"]
        data = frame(TEXT, b"\xff" * 200_000)
        assert await _most_held(sock, data) <= srv.state.config.max_frame + SLACK
        assert await sock.recv_json() == TOO_LARGE
        await _answered(sock)
        await sock.aclose()


async def test_a_fragmented_message_past_max_frame_is_dropped_and_skipped_then_refused(
        tmp_path: Path) -> None:
    """Its fragments are held until they pass `max_frame`; then they are dropped and the
    rest is skipped (a ping among them is still answered), and the message is refused as a
    frame that long would be, but named for what it is."""
    async with running_server(tmp_path) as srv:
        sock = await RawSocket.open(srv.port)
        assert (await sock.hello())["ok"]
        part = b"x" * 30_000
        data = (frame(TEXT, part, fin=False) + frame(0x0, part, fin=False) * 3
                + frame(PING, b"p") + frame(0x0, part, fin=False) * 2 + frame(0x0, part))
        assert await _most_held(sock, data) <= srv.state.config.max_frame + SLACK
        assert await sock.recv_frame() == (PONG, b"p")
        assert await sock.recv_json() == TOO_LARGE_FRAGMENTED
        await _answered(sock)
        await sock.aclose()


async def _dropped_while(sock: RawSocket, step: bytes, pause: float) -> int | None:
    """Send `step` every `pause` seconds until the server ends the connection: its close
    code (None: dropped without one); TooSlowError when it keeps it 10 s."""

    async def trickle() -> None:
        try:
            while True:
                await sock.send(step)
                await trio.sleep(pause)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trickle)
        code = await sock.close_code(timeout=10)
        nursery.cancel_scope.cancel()
    return code


async def test_a_frame_trickled_a_byte_at_a_time_is_dropped_once_it_takes_too_long(
        tmp_path: Path) -> None:
    """A partial frame whose bytes come one at a time kept its connection alive for ever
    (one longer than `max_frame`, as here, is skipped, not held, but read all the same):
    it has MESSAGE_INTERVALS now."""
    async with running_server(tmp_path, ping_interval=0.3) as srv:
        sock = await RawSocket.open(srv.port)
        assert (await sock.hello())["ok"]
        head = frame(TEXT, b"x" * 100_000)
        await sock.send(head[:1000])
        assert await _dropped_while(sock, b"x", 0.05) is None
        assert srv.state.metrics.budget_hits.labels("ping").value == 1
        await sock.aclose()
        await _served(srv)


async def test_a_message_whose_fragments_never_end_is_dropped_despite_pongs(
        tmp_path: Path) -> None:
    async with running_server(tmp_path, ping_interval=0.3) as srv:
        sock = await RawSocket.open(srv.port)
        assert (await sock.hello())["ok"]
        await sock.send(frame(TEXT, b"[" * 1000, fin=False))
        step = frame(0x0, b"", fin=False) + frame(PONG, b"")
        assert await _dropped_while(sock, step, 0.05) is None
        assert srv.state.metrics.budget_hits.labels("ping").value == 1
        await sock.aclose()
        await _served(srv)


async def test_a_slow_link_taking_several_ping_intervals_over_a_request_is_served(
        tmp_path: Path) -> None:
    """A 60 KB request whose bytes take three ping intervals to arrive (a 64 KiB frame at
    1.5 KB a second, at the default interval), and a message sent as fragments over as
    long with a pong between them: both within MESSAGE_INTERVALS, both answered."""
    async with running_server(tmp_path, ping_interval=0.5) as srv:
        sock = await RawSocket.open(srv.port)
        assert (await sock.hello())["ok"]
        body = b'{"id": 1, "op": "lobby.list", "args": {}}'
        data = frame(TEXT, body + b" " * (60_000 - len(body)))
        for at in range(0, len(data), 1500):
            await sock.send(data[at:at + 1500])
            await trio.sleep(0.0375)
        assert (await sock.recv_json(timeout=5))["id"] == 1
        body = b'{"id": 2, "op": "lobby.list", "args": {}}' + b" " * 2000
        parts = [body[i:i + 100] for i in range(0, len(body), 100)]
        await sock.send(frame(TEXT, parts[0], fin=False))
        for k, part in enumerate(parts[1:], 1):
            await trio.sleep(0.075)
            await sock.send(frame(0x0, part, fin=k == len(parts) - 1) + frame(PONG, b""))
        assert (await sock.recv_json(timeout=5))["id"] == 2
        assert srv.state.metrics.budget_hits.labels("ping").value == 0


@pytest.mark.parametrize("greeted", [False, True])
async def test_a_read_of_thousands_of_empty_frames_holds_a_pass_of_them(
        tmp_path: Path, greeted: bool) -> None:
    """60 KB of empty text frames (10,000 messages to refuse) were parsed whole when read:
    ~0.5 MB of frame objects per connection, held while they were refused one at a time
    (before the hello, with a pause after each). A read is parsed a pass at a time as its
    messages are taken: the transport holds about the read's bytes."""
    async with running_server(tmp_path, hello_timeout=60.0) as srv:
        sock = await RawSocket.open(srv.port)
        if greeted:
            assert (await sock.hello())["ok"]
        data = frame(TEXT, b"") * 10_000
        assert await _most_held(sock, data, piece=len(data)) <= RECEIVE + SLACK
        await sock.aclose()
        await _served(srv)


async def test_a_flood_of_fragments_in_one_read_is_stopped_a_pass_past_the_bucket(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bucket of frames that complete no message was checked once per read: 60 KB of
    empty fragments (10,000) all went through websockets' parser before the 1008 (~60 ms
    of the server's one thread for one anonymous read). It is checked each pass now."""
    fed: list[int] = []
    receive_data = OpenProtocol.receive_data

    def counted(protocol: OpenProtocol, data: bytes) -> None:
        fed.append(len(data))
        receive_data(protocol, data)

    monkeypatch.setattr(OpenProtocol, "receive_data", counted)
    start, step = FLOODS["fragments"]
    async with running_server(tmp_path) as srv:
        sock = await RawSocket.open(srv.port)
        assert (await sock.hello())["ok"]
        fed.clear()
        await sock.send(start + step * 10_000)
        assert await sock.close_code() == 1008
        assert 0 < len(fed) <= srv.state.config.burst + 2 * FRAMES_PER_PASS
        await sock.aclose()
        await _served(srv)


async def test_a_keepalive_ping_after_a_batch_of_requests_is_answered(tmp_path: Path) -> None:
    """A client that sends more frames than a pass, then a ping, and waits for the pong
    gets it (it waited in the protocol until the client sent more)."""
    async with running_server(tmp_path) as srv:
        sock = await RawSocket.open(srv.port)
        assert (await sock.hello())["ok"]
        batch = b"".join(frame(TEXT, json.dumps({"id": k, "op": "lobby.list",
                                                 "args": {}}).encode())
                         for k in range(2, 2 + 2 * FRAMES_PER_PASS))
        await sock.send(batch + frame(PING, b"alive?"))
        seen = set()
        with trio.fail_after(10):
            while len(seen) < 2 * FRAMES_PER_PASS + 1:
                opcode, payload = await sock.recv_frame()
                seen.add(payload if opcode == PONG else json.loads(payload)["id"])
        assert b"alive?" in seen
        await sock.aclose()
