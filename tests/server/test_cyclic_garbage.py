"""Connections, refusals and unloaded worlds are freed by reference counting, not left to
the cyclic garbage collector.

Garbage in a reference cycle waits for a pass of the collector over the generation it aged
into: for a long-lived connection a full pass, which the server keeps rare. With the
session and its outbox in a cycle, every connection closed (its socket, tasks, protocol:
~40 objects) waited so (500 closed cost a pass 25 ms, against 8 without them); a refusal
raised from a local name held its frames (and what they named: the request's answer slot,
the session) the same way, and an unloaded world (its state) through a closure over its
actor. Each test ends connections, refuses frames or unloads worlds one way, then asks the
collector what it finds.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio
from websockets.exceptions import ConnectionClosed

from server.app import Running
from server.budgets import Budgets
from tests.server.ws_harness import Raw, raw_client, result, running_server

# A connection left in a cycle leaves objects of these in it (its Session, WebSocket, the
# websockets ServerProtocol). The test's clients are in this process too: their cycles
# (websockets' client, trio, exceptions) are theirs.
OURS = ("server.", "actors.", "protocol.", "websockets.server.")
CONNECTIONS = 12


def cyclic_garbage() -> Counter[str]:
    """What a full pass of the collector finds unreachable, of the server's, by type (kept
    in `gc.garbage` for the count, then let go)."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        names = (f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.garbage)
        return Counter(name for name in names if name.startswith(OURS))
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@asynccontextmanager
async def collector_off() -> AsyncIterator[None]:
    """The collector quiet in between: what is left is counted at the end, not taken."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


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
    """A hello refused (1008), a frame the server closes the connection for (1009), and a
    request in flight when the client leaves."""
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

    async with running_server(tmp_path, open_mode=True) as running:
        async with raw_client(running) as c:
            assert result(await c.call("lobby.create", kind="counter", name="g"))
        for life in (bad_hello, too_big, gone):
            hello = life is not bad_hello
            await ended(running, life, hello)
            async with collector_off():
                await ended(running, life, hello)
                assert cyclic_garbage() == Counter(), life.__name__


async def test_refused_frames_leave_no_cycle(tmp_path: Path) -> None:
    """What a hostile client is refused for: malformed frames, unknown ops, bad args,
    worlds of another kind or none, a second hello, past a budget (live_worlds)."""
    frames: list[Any] = [
        "junk", "[]", {"id": 1, "op": "nope"},
        {"id": 2, "op": "counter.add", "to": "counter:g", "args": {"amount": "x", "note": ""}},
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
        base = ["bad_request"] * 5 + ["unknown_op"] + ["unknown_actor"] * 2
        codes = await refused(c)
        assert codes == sorted(base + ["over_budget"] * 2), codes
        async with collector_off():
            again = await refused(c)  # the creates now refused too (live_worlds)
            assert again == sorted(base + ["over_budget"] * 12), again
            assert cyclic_garbage() == Counter()


async def test_worlds_unloaded_to_make_room_leave_no_cycle(tmp_path: Path) -> None:
    """A world unloaded (here to make room under `max_live_worlds`) is freed at once: its
    state, which for a field or a run is most of the memory it held, does not wait."""
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
