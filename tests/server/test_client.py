"""protocol/client.py against the real server on 127.0.0.1: hello, requests, subscribe,
reconnect with resume (through a TCP proxy the test can cut), and /metrics after traffic."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import httpx
import pytest
import trio

from protocol.client import (
    Client,
    ClientClosed,
    ClientError,
    ConnectionLost,
    Push,
    RequestError,
    Subscription,
)
from server.app import Running, serve
from server.config import ServerConfig
from tests.server.tcp_proxy import Proxy


@pytest.fixture
async def server(tmp_path: Path, nursery: trio.Nursery) -> AsyncIterator[Running]:
    """A server on a free port with its own data directory."""
    running: Running = await nursery.start(serve, ServerConfig(port=0, data_dir=tmp_path))
    yield running
    running.stop()


@pytest.fixture
async def proxy(server: Running, nursery: trio.Nursery) -> Proxy:
    """A cuttable relay to the server."""
    relay = Proxy(server.port)
    await nursery.start(relay.run)
    return relay


@asynccontextmanager
async def _writer_and_reader(server: Running, proxy: Proxy, world: str
                             ) -> AsyncIterator[tuple[Client, Client]]:
    """The owner's client, which has created the counter `world`, and an anonymous client
    through the proxy."""
    async with Client.connect(server.ws_url, token=server.owner_token) as writer, \
            Client.connect(f"ws://127.0.0.1:{proxy.port}/ws") as reader:
        await writer.request("lobby.create", args={"kind": "counter", "name": world})
        yield writer, reader


async def _next(sub: Subscription) -> Push:
    with trio.fail_after(10):
        return await sub.__anext__()


async def test_hello_gives_the_role_of_the_token(server: Running) -> None:
    async with Client.connect(server.ws_url, token=server.owner_token, client="t/1") as c:
        assert c.role == "owner"
        assert c.hello["client"] == "t/1"
    async with Client.connect(server.ws_url) as c:
        assert c.role == "spectator"
        with pytest.raises(RequestError) as info:
            await c.request("lobby.create", args={"kind": "counter", "name": "x"})
        assert info.value.code == "forbidden"
        assert info.value.detail == {"role": "spectator", "required": "agent"}
    with pytest.raises(RequestError, match=r"^unauthorized: ") as info:
        async with Client.connect(server.ws_url, token="pdg_not-a-token"):
            pass
    assert info.value.code == "unauthorized"


async def test_concurrent_requests_are_matched_by_id(server: Running) -> None:
    async with Client.connect(server.ws_url, token=server.owner_token) as c:
        await c.request("lobby.create", args={"kind": "counter", "name": "many"})
        results: dict[int, dict] = {}

        async def add(amount: int) -> None:
            results[amount] = await c.request("counter.add", to="counter:many",
                                              args={"amount": amount})

        async with trio.open_nursery() as nursery:
            for amount in range(1, 41):
                nursery.start_soon(add, amount)
        # Each reply went to its own request: 40 distinct revisions after the creation (1).
        assert sorted(r["revision"] for r in results.values()) == list(range(2, 42))
        final = await c.request("counter.get", to="counter:many")
        assert final == {"total": sum(range(1, 41)), "adds": 40, "revision": 41}
        # A refusal raises and leaves the connection usable.
        with pytest.raises(RequestError, match=r"^unknown_op: there is no op 'counter.nope'$"):
            await c.request("counter.nope", to="counter:many")
        assert (await c.request("counter.get", to="counter:many"))["revision"] == 41


async def test_requests_beyond_the_bucket_wait_instead_of_being_refused(
        tmp_path: Path, nursery: trio.Nursery) -> None:
    """The client paces itself under the bucket the hello names: 60 requests sent at once
    on a connection allowed 40 frames a second in bursts of 10 are all answered."""
    running: Running = await nursery.start(serve, ServerConfig(
        port=0, data_dir=tmp_path, rate=40.0, burst=10))
    async with Client.connect(running.ws_url, token=running.owner_token) as c:
        assert (c.hello["rate"], c.hello["burst"]) == (40.0, 10)
        await c.request("lobby.create", args={"kind": "counter", "name": "paced"})
        revisions: list[int] = []

        async def add() -> None:
            revisions.append((await c.request("counter.add", to="counter:paced",
                                              args={"amount": 1}))["revision"])

        async with trio.open_nursery() as adding:
            for _ in range(60):
                adding.start_soon(add)
        assert sorted(revisions) == list(range(2, 62))
    running.stop()


async def test_reconnect_resumes_with_exactly_the_missed_events(
        server: Running, proxy: Proxy) -> None:
    async with _writer_and_reader(server, proxy, "r") as (writer, reader), \
            reader.subscribe("counter:r") as sub:
        assert sub.result == {"topic": "counter:r", "rev": 1}
        assert (await _next(sub)).kind == "snapshot"
        for amount in (1, 2):
            await writer.request("counter.add", to="counter:r", args={"amount": amount})
        seen = [await _next(sub), await _next(sub)]
        assert [(p.kind, p.rev) for p in seen] == [("events", 2), ("events", 3)]

        proxy.cut()
        # Events happen while the reader is away.
        for amount in (3, 4, 5, 6):
            await writer.request("counter.add", to="counter:r", args={"amount": amount})
        missed = []
        while sum(len(p.data) for p in missed) < 4:
            missed.append(await _next(sub))
        assert all(p.kind == "events" for p in missed)
        assert [e["amount"] for p in missed for e in p.data] == [3, 4, 5, 6]
        assert missed[-1].rev == 7
        assert reader.connections == 2 and proxy.accepted == 2
        # Live pushes continue on the new socket, once each.
        await writer.request("counter.add", to="counter:r", args={"amount": 7})
        after = await _next(sub)
        assert (after.rev, [e["amount"] for e in after.data]) == (8, [7])
        with trio.move_on_after(0.3):
            extra = await sub.__anext__()
            pytest.fail(f"an event arrived twice: {extra}")


async def test_a_reply_lost_with_the_socket_raises_connection_lost(
        server: Running, proxy: Proxy, nursery: trio.Nursery) -> None:
    url = f"ws://127.0.0.1:{proxy.port}/ws"
    async with Client.connect(url, token=server.owner_token) as c:
        await c.request("lobby.create", args={"kind": "counter", "name": "lost"})
        proxy.hold()
        proxy.cut_in(nursery, 0.3)
        with pytest.raises(ConnectionLost, match=r"^the connection closed before counter.add #\d+ "
                                                 r"was answered$"):
            await c.request("counter.add", to="counter:lost", args={"amount": 9},
                            retry=False)
        # The request reached the server before the cut: it ran though its reply was lost.
        assert await c.request("counter.get", to="counter:lost") == \
            {"total": 9, "adds": 1, "revision": 2}
        assert c.connections == 2
    with pytest.raises(ClientClosed, match=r"^the client is closed \(by its owner\)$"):
        await c.request("counter.get", to="counter:lost")


async def test_a_subscribe_whose_answer_is_lost_is_made_again_on_the_reconnect(
        server: Running, proxy: Proxy, nursery: trio.Nursery) -> None:
    """As a request is retried: the subscription stays and the reconnect subscribes it."""
    async with _writer_and_reader(server, proxy, "s") as (writer, reader):
        await writer.request("counter.add", to="counter:s", args={"amount": 4})
        proxy.hold()
        proxy.cut_in(nursery, 0.3)
        async with reader.subscribe("counter:s") as sub:
            first = await _next(sub)
            assert (first.kind, first.rev, first.data["total"]) == ("snapshot", 2, 4)
            assert sub.result == {"topic": "counter:s", "rev": 2}
            assert reader.connections == 2
            await writer.request("counter.add", to="counter:s", args={"amount": 1})
            after = await _next(sub)
            assert (after.kind, after.rev) == ("events", 3)


async def test_without_reconnect_a_drop_closes_the_client(proxy: Proxy) -> None:
    async with Client.connect(f"ws://127.0.0.1:{proxy.port}/ws", reconnect=False) as c:
        assert (await c.request("lobby.list"))["worlds"] == []
        proxy.cut()
        with pytest.raises(ClientClosed, match=r"^the client is closed \(the connection "
                                               r"dropped and reconnect is off\)$"):
            while True:  # the drop is noticed asynchronously; a request caught in it is lost
                with suppress(ConnectionLost):
                    await c.request("lobby.list")
        assert proxy.accepted == 1


async def test_a_caller_that_falls_behind_is_resubscribed_without_gaps(server: Running) -> None:
    async with Client.connect(server.ws_url, token=server.owner_token) as writer, \
            Client.connect(server.ws_url, push_buffer=3) as reader:
        await writer.request("lobby.create", args={"kind": "counter", "name": "slow"})
        async with reader.subscribe("counter:slow", since=1) as sub:
            for amount in range(1, 21):  # far more pushes than the buffer holds, unread
                await writer.request("counter.add", to="counter:slow", args={"amount": amount})
            amounts: list[int] = []
            revs: list[int] = []
            while len(amounts) < 20:
                push = await _next(sub)
                assert push.kind == "events"
                amounts += [e["amount"] for e in push.data]
                revs.append(push.rev)
            assert amounts == list(range(1, 21))
            assert revs == sorted(set(revs)) and revs[-1] == 21


async def test_a_refused_resubscribe_is_tried_again_while_the_connection_lives(
        server: Running) -> None:
    """The world a subscription follows stops (its spectators get a resync) and refuses
    the resubscribe for a while (held by the owner, as after a PostgreSQL restart in a
    cluster): the client tries again with backoff, says so on the subscription, and
    follows the world again once it is accepted, from the last revision it delivered."""
    async with Client.connect(server.ws_url, token=server.owner_token) as owner, \
            Client.connect(server.ws_url) as watcher:
        world, admin = "counter:held", "admin:main"
        await owner.request("lobby.create", args={"kind": "counter", "name": "held"})
        async with watcher.subscribe(world) as sub:
            assert (await _next(sub)).kind == "snapshot"
            assert sub.refused is None
            await owner.request("admin.stop", admin, {"id": world})
            with trio.fail_after(10):
                while sub.refused is None:
                    await trio.sleep(0.02)
            assert sub.refused.code == "unavailable"
            await trio.sleep(1.0)  # refused again meanwhile, still trying
            assert sub.refused is not None
            await owner.request("admin.release", admin, {"id": world})
            await owner.request("counter.add", to=world, args={"amount": 5})
            push = await _next(sub)
            assert (push.kind, push.rev, push.data[0]["amount"]) == ("events", 2, 5)
            assert sub.refused is None
            await owner.request("counter.add", to=world, args={"amount": 6})
            push = await _next(sub)
            assert (push.kind, push.rev, push.data[0]["amount"]) == ("events", 3, 6)


async def test_a_drop_while_a_resubscribe_is_refused_is_left_to_the_reconnect(
        server: Running, proxy: Proxy) -> None:
    """The retries of a refused resubscribe end with their socket: the client reconnects
    (it waited for them before), and the reconnect's resubscribe is tried again too."""
    world, admin = "counter:cut", "admin:main"
    async with _writer_and_reader(server, proxy, "cut") as (owner, reader), \
            reader.subscribe(world) as sub:
        assert (await _next(sub)).kind == "snapshot"
        await owner.request("admin.stop", admin, {"id": world})
        with trio.fail_after(10):
            while sub.refused is None:
                await trio.sleep(0.02)
        proxy.cut()
        with trio.fail_after(10):
            while reader.connections < 2:
                await trio.sleep(0.02)
        await owner.request("admin.release", admin, {"id": world})
        await owner.request("counter.add", to=world, args={"amount": 7})
        push = await _next(sub)
        assert (push.kind, push.rev, push.data[0]["amount"]) == ("events", 2, 7)
        assert sub.refused is None


async def test_one_subscription_per_topic(server: Running) -> None:
    async with Client.connect(server.ws_url) as c, c.subscribe("lobby:main"):
        with pytest.raises(ClientError, match=r"^already subscribed to lobby:main$"):
            c.subscribe("lobby:main")


async def test_metrics_count_the_traffic(server: Running) -> None:
    async with Client.connect(server.ws_url, token=server.owner_token) as c:
        await c.request("lobby.create", args={"kind": "counter", "name": "m"})
        await c.request("counter.add", to="counter:m", args={"amount": 1})
        async with httpx.AsyncClient(base_url=server.url) as http:
            response = await http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = dict(line.rsplit(" ", 1) for line in response.text.splitlines()
                   if not line.startswith("#"))
    assert float(samples["petridish_connections_open"]) >= 1
    # This client's hello, create and add, and their three replies.
    assert float(samples["petridish_frames_in_total"]) == 3
    assert float(samples["petridish_frames_out_total"]) == 3
    assert float(samples['petridish_events_appended_total{kind="counter"}']) == 2  # created, added
    assert float(samples['petridish_handler_seconds_count{kind="counter"}']) >= 1
    assert 'petridish_mailbox_depth{kind="lobby"}' in samples


async def test_a_refused_first_connection_raises_at_once() -> None:
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    await listener.aclose()  # nothing listens there now
    with trio.fail_after(10), pytest.raises(OSError):
        async with Client.connect(f"ws://127.0.0.1:{port}/ws"):
            pass


async def test_a_frame_the_server_refuses_without_an_id_is_refused_at_once(
        server: Running) -> None:
    """The server answers a frame over `max_frame`, or one that is not JSON, with `id: null`:
    the client refuses it as the server would instead of waiting for a reply that never
    names it, and the connection stays usable."""
    async with Client.connect(server.ws_url, token=server.owner_token) as c:
        await c.request("lobby.create", args={"kind": "counter", "name": "unsent"})
        with trio.fail_after(5):
            with pytest.raises(RequestError, match=r"^too_large: the frame is longer than "
                                                   r"65536 bytes$") as info:
                await c.request("counter.add", to="counter:unsent",
                                args={"amount": 1, "note": "x" * 70_000})
            assert info.value.detail == {"max_frame": 65536}
            with pytest.raises(RequestError, match=r"^bad_request: not JSON: "):
                await c.request("counter.add", to="counter:unsent",
                                args={"amount": float("nan")})
        assert await c.request("counter.get", to="counter:unsent") == \
            {"total": 0, "adds": 0, "revision": 1}
