"""The server-wide connection bounds (`max_ungreeted`, `max_connections`) cannot be used up
by a few addresses: at the bound, the oldest connection of the address holding the most is
let go for a newcomer from an address holding fewer (its place is given at once), and one
from the address holding the most is refused as before; refused connections hold their
descriptors only so many at once."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from server import tcp_guard
from server.budgets import Budgets
from server.shedding import Holders
from tests.server.raw_ws import HandshakeRefused, RawSocket
from tests.server.ws_harness import running_server


def _hits(srv, budget: str) -> float:
    return srv.state.metrics.budget_hits.labels(budget).value


def test_holders_name_the_oldest_of_the_key_holding_the_most() -> None:
    holders = Holders()
    for key, item in [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("a", 5), ("b", 6)]:
        holders.add(key, item)
    assert holders.heaviest(0) == ("a", 1)
    assert holders.heaviest(2) == ("a", 1)
    assert holders.heaviest(3) is None  # nobody holds more than 3
    assert holders.remove("a", 1) and not holders.remove("a", 1)
    assert holders.heaviest(0) == ("b", 2)  # a and b hold 2: b came to it first
    assert holders.remove("b", 2)
    assert holders.heaviest(1) == ("a", 3)
    for key, item in [("a", 3), ("a", 5), ("b", 6), ("c", 4)]:
        assert holders.remove(key, item)
    assert holders.heaviest(0) is None and not holders.held and not holders.levels


async def test_at_max_ungreeted_the_address_holding_the_most_gives_way(
        tmp_path: Path) -> None:
    budgets = Budgets(max_ungreeted=4, ungreeted_per_address=3)
    async with running_server(tmp_path, budgets=budgets, hello_timeout=30) as srv:
        many = [await RawSocket.open(srv.port, local="127.0.0.2") for _ in range(3)]
        few = await RawSocket.open(srv.port, local="127.0.0.3")
        assert srv.state.ledger.ungreeted == 4
        newcomer = await RawSocket.open(srv.port, local="127.0.0.4")  # many's oldest goes
        assert await many[0].close_code() == 1013
        assert (await newcomer.hello())["ok"]
        assert _hits(srv, "max_ungreeted") == 1
        other = await RawSocket.open(srv.port, local="127.0.0.5")  # a free place: nobody goes
        assert srv.state.ledger.ungreeted == 4
        # The heaviest holds 2 now: not more than the newcomer's address would (a swap
        # would gain nobody anything), so it is refused.
        for address in ("127.0.0.2", "127.0.0.3"):
            refused = await RawSocket.open(srv.port, local=address)
            assert (await refused.recv_json())["error"] == {
                "code": "over_budget", "message": "more than 4 connections have not said "
                "hello yet; retry in a moment", "detail": {"budget": "max_ungreeted",
                                                           "limit": 4}}
            assert await refused.close_code() == 1013
            await refused.aclose()
        third = await RawSocket.open(srv.port, local="127.0.0.6")  # many's next goes
        assert await many[1].close_code() == 1013
        for sock in (many[2], few, third, other):
            assert (await sock.hello())["ok"]
        with trio.fail_after(5):
            while srv.state.ledger.ungreeted or srv.state.ledger.waiting.held:
                await trio.sleep(0.01)
        for sock in [*many, few, newcomer, other, third]:
            await sock.aclose()


async def test_at_max_connections_the_address_holding_the_most_gives_way(
        tmp_path: Path) -> None:
    budgets = Budgets(max_connections=4, connections_per_address=3)
    async with running_server(tmp_path, budgets=budgets) as srv:
        spectator = await RawSocket.open(srv.port, local="127.0.0.2")
        assert (await spectator.hello())["ok"]
        idle = [await trio.open_tcp_stream("127.0.0.1", srv.port, local_address="127.0.0.2")
                for _ in range(2)]
        few = await RawSocket.open(srv.port, local="127.0.0.3")
        assert (await few.hello())["ok"]
        with trio.fail_after(5):
            while srv.state.guard.open < 4:
                await trio.sleep(0.01)
        # The oldest connection of the address holding the most, a greeted websocket, is
        # cut: it ends as a client that left would.
        newcomer = await RawSocket.open(srv.port, local="127.0.0.4")
        assert (await newcomer.hello())["ok"]
        assert await spectator.close_code() is None  # (no close frame: the socket ended)
        with trio.fail_after(5):
            while srv.state.ledger.addresses["127.0.0.2"].connections:
                await trio.sleep(0.01)
        assert srv.state.guard.per_address == {"127.0.0.2": 2, "127.0.0.3": 1, "127.0.0.4": 1}
        # 127.0.0.2 holds 2, as many as 127.0.0.3 would with one more: refused.
        try:
            await RawSocket.open(srv.port, local="127.0.0.3")
            raise AssertionError("admitted past max_connections")
        except HandshakeRefused as refused:
            assert refused.status == 503
            assert refused.body == b"the server holds 4 connections; retry in a moment"
        other = await RawSocket.open(srv.port, local="127.0.0.5")  # 127.0.0.2 gives way
        with trio.fail_after(5):
            assert await idle[0].receive_some(100) == b""
        assert (await other.hello())["ok"]
        assert srv.state.guard.per_address == {"127.0.0.2": 1, "127.0.0.3": 1, "127.0.0.4": 1,
                                               "127.0.0.5": 1}
        assert _hits(srv, "max_connections") == 3  # two cut, one refused
        for stream in idle:
            await stream.aclose()
        for sock in (spectator, few, newcomer, other):
            await sock.aclose()
        with trio.fail_after(5):
            while srv.state.guard.open or srv.state.guard.streams:
                await trio.sleep(0.01)


async def test_refused_connections_linger_only_so_many_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A refused connection is read and dropped for a while before it closes (so its 503 is
    read), which holds a descriptor: past MAX_LINGERING at once, one closes as soon as its
    answer is written, so a flood of refused connections cannot use up the descriptors
    kept aside for the store and the logs."""
    monkeypatch.setattr(tcp_guard, "REFUSAL_LINGER", 60.0)
    monkeypatch.setattr(tcp_guard, "MAX_LINGERING", 2)
    async with running_server(tmp_path, budgets=Budgets(connections_per_address=1)) as srv:
        held = await trio.open_tcp_stream("127.0.0.1", srv.port)
        refused = []
        for _ in range(6):
            stream = await trio.open_tcp_stream("127.0.0.1", srv.port)
            await stream.send_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            refused.append(stream)
        for stream in refused:  # each is answered
            answer = b""
            with trio.fail_after(10):
                while chunk := await stream.receive_some(65536):
                    answer += chunk
            assert answer.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
        with trio.fail_after(10):
            while tcp_guard._lingering > 2:
                await trio.sleep(0.01)
        assert tcp_guard._lingering == 2  # the first two linger; the rest were closed
        for stream in [held, *refused]:
            await stream.aclose()
