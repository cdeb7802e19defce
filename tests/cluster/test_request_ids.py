"""Request ids on one process (SQLite, no PostgreSQL needed): the envelope's `request_id`,
a retried write answered with its first result even after a restart, a request id that
is its caller's own (another caller's write with the same one is done and answered as
its own), and the Python client sending a write again with the same id after a dropped
connection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from protocol.client import Client, ConnectionLost
from protocol.envelope import Request, parse_frame
from protocol.errors import ProtocolError
from server.app import Running
from server.auth import TokenStore
from tests.server.tcp_proxy import Proxy
from tests.server.ws_harness import raw_client, result, running_server

WORLD = "counter:r"


def test_the_envelope_carries_a_request_id() -> None:
    frame = parse_frame('{"id": 3, "op": "counter.add", "to": "counter:r", "args": {}, '
                        '"request_id": "Ab9_.:-x"}')
    assert frame == Request(3, "counter.add", "counter:r", {}, "Ab9_.:-x")
    assert parse_frame('{"id": 3, "op": "counter.get"}') == Request(3, "counter.get", None, {})


@pytest.mark.parametrize("bad", ['""', '"a b"', '"' + "x" * 65 + '"', "7", "null", '"é"'])
def test_a_bad_request_id_is_refused_naming_it(bad: str) -> None:
    if bad == "null":  # null is the same as leaving it out
        assert parse_frame('{"id": 1, "op": "x.y", "request_id": null}').request_id is None
        return
    with pytest.raises(ProtocolError) as refused:
        parse_frame(f'{{"id": 1, "op": "x.y", "request_id": {bad}}}')
    assert refused.value.detail == {"path": "request_id"}
    assert refused.value.message.startswith("request_id: expected 1-64 of")


def _add(frame_id: int, amount: int, request_id: str) -> dict[str, Any]:
    return {"id": frame_id, "op": "counter.add", "to": WORLD, "args": {"amount": amount},
            "request_id": request_id}


async def test_a_retried_write_is_answered_with_its_first_result_after_a_restart(
        tmp_path: Path) -> None:
    ann = TokenStore(tmp_path).create("agent", "ann")
    async with running_server(tmp_path, open_mode=True) as srv, raw_client(srv, ann) as c:
        result(await c.call("counter.create", WORLD))
        await c.send(_add(50, 4, "k-1"))
        first = await c.recv()
        assert first == {"id": 50, "ok": True, "result": {"total": 4, "adds": 1, "revision": 2}}
        result(await c.call("counter.add", WORLD, amount=1))
    async with running_server(tmp_path, open_mode=True) as srv:
        async with raw_client(srv, ann) as c:  # the same caller: the same token's name
            await c.send(_add(51, 4, "k-1"))
            assert (await c.recv())["result"] == first["result"]
            assert result(await c.call("counter.get", WORLD)) == \
                {"total": 5, "adds": 2, "revision": 3}
        async with raw_client(srv) as other:  # an anonymous caller: not ann's retry
            await other.send(_add(52, 4, "k-1"))
            assert result(await other.recv()) == {"total": 9, "adds": 3, "revision": 4}
        assert await _amounts(srv) == [None, 4, 1, 4]


async def test_two_callers_with_one_request_id_each_get_their_own_write_and_reply(
        tmp_path: Path) -> None:
    tokens = TokenStore(tmp_path)
    ann, bob = tokens.create("agent", "ann"), tokens.create("agent", "bob")
    async with running_server(tmp_path) as srv, raw_client(srv, ann) as a, \
            raw_client(srv, bob) as b:
        result(await a.call("counter.create", WORLD))
        await a.send(_add(1, 4, "1"))  # both count their requests from "1"
        ann_first = result(await a.recv())
        assert ann_first == {"total": 4, "adds": 1, "revision": 2}
        await b.send(_add(1, 3, "1"))
        bob_first = result(await b.recv())
        assert bob_first == {"total": 7, "adds": 2, "revision": 3}  # done, not ann's reply
        for caller, amount, first in ((a, 4, ann_first), (b, 3, bob_first)):  # retries
            await caller.send(_add(2, amount, "1"))
            assert result(await caller.recv()) == first
        assert result(await b.call("counter.get", WORLD)) == {"total": 7, "adds": 2,
                                                               "revision": 3}
        assert await _amounts(srv) == [None, 4, 3]


async def test_the_client_sends_a_write_again_after_a_drop_and_it_applies_once(
        tmp_path: Path, nursery: trio.Nursery) -> None:
    async with running_server(tmp_path, open_mode=True) as srv:
        proxy = Proxy(srv.port)
        await nursery.start(proxy.run)
        async with Client.connect(f"ws://127.0.0.1:{proxy.port}/ws") as c:
            await c.request("counter.create", WORLD)
            proxy.hold()  # the server's replies stop reaching the client...

            async def cut_soon() -> None:
                await trio.sleep(0.3)
                proxy.cut()  # ...and the connection drops with the reply in it

            nursery.start_soon(cut_soon)
            reply = await c.request("counter.add", WORLD, {"amount": 9})  # retried by default
            assert reply == {"total": 9, "adds": 1, "revision": 2}
            assert c.connections == 2
            proxy.hold()
            nursery.start_soon(cut_soon)
            with pytest.raises(ConnectionLost) as lost:  # without retry: the caller decides
                await c.request("counter.add", WORLD, {"amount": 1}, retry=False)
            assert lost.value.request_id is not None
            again = await c.request("counter.add", WORLD, {"amount": 1},
                                    request_id=lost.value.request_id)
            assert again == {"total": 10, "adds": 2, "revision": 3}
            assert await c.request("counter.get", WORLD) == again
        assert await _amounts(srv) == [None, 9, 1]


async def _amounts(srv: Running) -> list[int | None]:
    """The amount of each stored event of WORLD (None for its create)."""
    return [e.data.get("amount") for e in await srv.state.directory.store.read(WORLD)]
