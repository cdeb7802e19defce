"""Request ids on one process (SQLite, no PostgreSQL needed): the envelope's `request_id`,
a retried write answered with its first result even after a restart, and the Python
client sending a write again with the same id after a dropped connection."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from protocol.client import Client, ConnectionLost
from protocol.envelope import Request, parse_frame
from protocol.errors import ProtocolError
from server.app import Running
from tests.server.test_client import Proxy
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


async def test_a_retried_write_is_answered_with_its_first_result_after_a_restart(
        tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as srv, raw_client(srv) as c:
        result(await c.call("counter.create", WORLD))
        await c.send({"id": 50, "op": "counter.add", "to": WORLD, "args": {"amount": 4},
                      "request_id": "k-1"})
        first = await c.recv()
        assert first == {"id": 50, "ok": True, "result": {"total": 4, "adds": 1, "revision": 2}}
        result(await c.call("counter.add", WORLD, amount=1))
    async with running_server(tmp_path, open_mode=True) as srv, raw_client(srv) as c:
        await c.send({"id": 51, "op": "counter.add", "to": WORLD, "args": {"amount": 4},
                      "request_id": "k-1"})
        assert (await c.recv())["result"] == first["result"]
        assert result(await c.call("counter.get", WORLD)) == \
            {"total": 5, "adds": 2, "revision": 3}


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
            reply = await c.request("counter.add", WORLD, {"amount": 9}, retry=True)
            assert reply == {"total": 9, "adds": 1, "revision": 2}
            assert c.connections == 2
            proxy.hold()
            nursery.start_soon(cut_soon)
            with pytest.raises(ConnectionLost) as lost:  # without retry: the caller decides
                await c.request("counter.add", WORLD, {"amount": 1})
            assert lost.value.request_id is not None
            again = await c.request("counter.add", WORLD, {"amount": 1},
                                    request_id=lost.value.request_id)
            assert again == {"total": 10, "adds": 2, "revision": 3}
            assert await c.request("counter.get", WORLD) == again
        await _check_events(srv)


async def _check_events(srv: Running) -> None:
    stored = await srv.state.directory.store.read(WORLD)
    assert [e.data.get("amount") for e in stored] == [None, 9, 1]
