"""Connections, refusals and unloaded worlds are freed by reference counting, not left to
the cyclic garbage collector.

Garbage in a reference cycle waits for a pass of the collector over the generation it aged
into: for a long-lived connection a full pass, which the server keeps rare. Every closed
connection waited so (its session and its outbox held each other, its websockets protocols
their parser generators: ~40 objects; 500 closed cost a pass 24 ms, against 5 now); an
error raised from a name, or kept by what its frames hold (a refusal, a world's answer to
an ask, cattrs' gathered errors, a failed upgrade), held its frames and what they named
(the request's answer slot, the session) the same way; and an unloaded world, its state,
through a closure over its actor. Each test ends connections, refuses frames or unloads
worlds one way, with the collector off, then counts what one pass of it frees
(tests/server/garbage.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import httpx
import trio
from websockets.exceptions import ConnectionClosed

from server.app import Running
from server.budgets import Budgets
from tests.server.garbage import collector_off, cyclic_garbage
from tests.server.mcp_harness import tool
from tests.server.ws_harness import Raw, raw_client, result, running_server

CONNECTIONS = 12


async def ended(running: Running, life: Callable[[Raw], Awaitable[None]],
                hello: bool = True) -> None:
    """`CONNECTIONS` connections live `life` and end; return once the server let them go."""
    async def one() -> None:
        async with raw_client(running, hello=hello) as c:
            await life(c)

    async with trio.open_nursery() as nursery:
        for _ in range(CONNECTIONS):
            nursery.start_soon(one)
    with trio.fail_after(10):
        while running.state.sessions:
            await trio.sleep(0.01)
    await trio.sleep(0.1)  # the sessions' last steps


async def test_connections_closed_by_their_clients_leave_no_cycle(tmp_path: Path) -> None:
    async def life(c: Raw) -> None:
        assert result(await c.call("counter.add", "counter:g", amount=1, note=""))["adds"] >= 1
        await c.send({"id": 9, "op": "subscribe", "to": "counter:g"})
        assert (await c.recv())["ok"]
        assert (await c.recv())["kind"] == "snapshot"

    async with running_server(tmp_path, open_mode=True) as running:
        async with raw_client(running) as c:
            assert result(await c.call("lobby.create", kind="counter", name="g"))
        await ended(running, life)  # the first of everything done (imports, caches)
        async with collector_off():
            await ended(running, life)
            assert cyclic_garbage() == Counter()


async def test_connections_the_server_ends_leave_no_cycle(tmp_path: Path) -> None:
    """A hello refused (1008), a frame the server closes the connection for (1009), a
    request in flight when the client leaves, an upgrade refused (400)."""
    async def bad_hello(c: Raw) -> None:
        await c.send({"op": "hello", "protocol": 1, "token": "pdg_bad"})
        assert not (await c.recv())["ok"]
        try:
            await c.recv()
        except ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code == 1008

    async def too_big(c: Raw) -> None:
        try:
            await c.send("x" * 2_000_000)  # not even read: closed 1009
            await c.recv()
        except ConnectionClosed as closed:
            assert closed.rcvd is None or closed.rcvd.code == 1009
        else:
            raise AssertionError("the connection stayed open")

    async def gone(c: Raw) -> None:
        await c.send({"id": 1, "op": "counter.add", "to": "counter:g",
                      "args": {"amount": 1, "note": ""}})

    async def refused_upgrade(running: Running) -> None:
        async with await trio.open_tcp_stream(running.host, running.port) as tcp:
            await tcp.send_all(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                               b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n")
            with trio.fail_after(10):
                assert (await tcp.receive_some()).startswith(b"HTTP/1.1 400")

    async with running_server(tmp_path, open_mode=True) as running:
        async with raw_client(running) as c:
            assert result(await c.call("lobby.create", kind="counter", name="g"))
        left: dict[str, Counter[str]] = {}
        for life in (bad_hello, too_big, gone):
            hello = life is not bad_hello
            await ended(running, life, hello)
            async with collector_off():
                await ended(running, life, hello)
                left[life.__name__] = cyclic_garbage()
        await refused_upgrade(running)
        async with collector_off():
            for _ in range(CONNECTIONS):
                await refused_upgrade(running)
            await trio.sleep(0.1)
            left["refused_upgrade"] = cyclic_garbage()
        assert left == {key: Counter() for key in left}


async def test_refused_frames_leave_no_cycle(tmp_path: Path) -> None:
    """What a hostile client is refused for: malformed frames, unknown ops, bad args (a
    nested value not even an object among them), worlds of another kind or none, a
    subscribe its world refuses, a second hello, past a budget (live_worlds)."""
    frames: list[Any] = [
        "junk", "[]", {"id": 1, "op": "nope"},
        {"id": 2, "op": "counter.add", "to": "counter:g", "args": {"amount": "x", "note": ""}},
        {"id": 7, "op": "ecosystem.patch", "to": "ecosystem:g", "args": {"patch": "x"}},
        {"id": 8, "op": "subscribe", "to": "counter:w0", "since": 999},
        {"id": 3, "op": "counter.add", "to": "field:g", "args": {"amount": 1, "note": ""}},
        {"id": 4, "op": "counter.add", "to": "counter:none", "args": {"amount": 1, "note": ""}},
        {"id": 5, "op": "subscribe", "to": "counter:none"},
        {"id": 6, "op": "hello", "protocol": 1},
        *({"id": 10 + i, "op": "lobby.create", "args": {"kind": "counter", "name": f"w{i}"}}
          for i in range(12)),
    ]

    async def refused(c: Raw) -> list[str]:
        for frame in frames:
            await c.send(frame)
        replies = [await c.recv() for _ in frames]
        return sorted(r["error"]["code"] for r in replies if not r["ok"])

    async with running_server(tmp_path, open_mode=True) as running, raw_client(running) as c:
        result(await c.call("lobby.create", kind="counter", name="w0"))
        base = ["bad_request"] * 7 + ["unknown_op"] + ["unknown_actor"] * 2
        codes = await refused(c)
        assert codes == sorted(base + ["already_exists"] + ["over_budget"] * 2), codes
        async with collector_off():
            again = await refused(c)  # the creates now refused too (live_worlds)
            assert again == sorted(base + ["over_budget"] * 12), again
            assert cyclic_garbage() == Counter()


async def test_worlds_unloaded_to_make_room_leave_no_cycle(tmp_path: Path) -> None:
    """A world unloaded (here to make room under `max_live_worlds`) is freed at once: its
    state, which for a field or a run is most of the memory it held, does not wait. So is
    the refusal when no world can make room (each followed)."""
    budgets = attrs.evolve(Budgets(), max_live_worlds=2)
    async with running_server(tmp_path, budgets=budgets) as running, \
            raw_client(running, running.owner_token) as c:
        for i in range(3):
            result(await c.call("counter.create", f"counter:w{i}"))
        async with collector_off():
            for i in range(3, 7):
                result(await c.call("counter.create", f"counter:w{i}"))
            live = [s.actor_id for s in running.state.directory.live() if s.kind == "counter"]
            assert len(live) == 2, live  # four unloaded here
            assert cyclic_garbage() == Counter()
        for i, world in enumerate(live):  # followed: neither can make room
            await c.send({"id": 100 + i, "op": "subscribe", "to": world})
            assert (await c.recv())["ok"]
            assert (await c.recv())["kind"] == "snapshot"
        async with collector_off():
            for i in range(3):
                refused = await c.call("counter.create", f"counter:x{i}")
                assert refused["error"]["detail"]["budget"] == "max_live_worlds", refused
            assert cyclic_garbage() == Counter()


async def test_refused_mcp_calls_leave_no_cycle(tmp_path: Path) -> None:
    """An MCP call with a token the server does not know (the door's refusal, raised by
    each tool call)."""
    async with running_server(tmp_path) as running, httpx.AsyncClient() as http:
        async def forged() -> None:
            reply = await tool(http, running.url, "list_games", {}, token="pdg_forged")
            assert reply["error"]["code"] == "unauthorized", reply

        await forged()
        async with collector_off():
            for _ in range(3):
                await forged()
            assert cyclic_garbage() == Counter()


async def test_http_connections_leave_no_cycle(tmp_path: Path) -> None:
    """Pages and routes served over HTTP, a connection each (Hypercorn's server of one
    connection and its protocol call each other)."""
    async with running_server(tmp_path) as running:
        async def pages() -> None:
            for path in ("/", "/metrics", "/nothing-here"):
                async with httpx.AsyncClient() as http:
                    assert (await http.get(running.url + path)).status_code in (200, 404)

        await pages()
        async with collector_off():
            await pages()
            await trio.sleep(0.1)  # the connections' last steps
            assert cyclic_garbage() == Counter()
