"""What a hostile client can make a websocket cost: control frames spend a bucket of their
own and the client's CPU time (server/transport.py `_frames`, server/session.py
`_charge_io`), and only whole frames keep a connection alive, so a frame trickled a byte
at a time, or a message whose fragments never end, is dropped by the keepalive pings."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from server.budgets import Budgets
from tests.server.raw_ws import PING, PONG, TEXT, RawSocket, frame
from tests.server.ws_harness import raw_client, result, running_server


async def _served(srv) -> None:
    """Another client is served as before."""
    async with raw_client(srv) as c:
        assert result(await c.call("lobby.list"))["total"] == 0


@pytest.mark.parametrize("opcode", [PING, PONG])
async def test_a_flood_of_control_frames_is_closed_as_a_policy_violation(
        tmp_path: Path, opcode: int) -> None:
    """Empty pings (or pongs) cost no token of the frame bucket and got one pong per read:
    one connection could keep the server busy. Past a bucket of their own (`rate` and
    `burst` again) the connection is closed with 1008."""
    async with running_server(tmp_path) as srv:
        sock = await RawSocket.open(srv.port)
        assert (await sock.hello())["ok"]
        await sock.send(frame(opcode, b"") * (srv.state.config.burst * 2 + 100))
        assert await sock.close_code() == 1008
        await sock.aclose()
        await _served(srv)


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


async def test_a_frame_trickled_a_byte_at_a_time_is_dropped_within_the_ping_window(
        tmp_path: Path) -> None:
    """A partial frame (up to 16 times `max_frame`, held by the server) whose bytes come
    one at a time kept its connection alive for ever: only a whole frame does now."""
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
