"""Subscriptions over real sockets: slow consumers, resume with `since`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from server.budgets import Budgets
from server.outbox import WRITER_TASK
from tests.server import burn_world
from tests.server.ws_harness import Raw, raw_client, result, running_server

WORLD = "counter:w"


def event_revs(push: dict[str, Any]) -> list[int]:
    """The revision of each event in an `events` push."""
    return list(range(push["rev"] - len(push["data"]) + 1, push["rev"] + 1))


async def subscribe(c: Raw, topic: str, since: int | None) -> dict[str, Any]:
    """Subscribe and return the reply (the first push follows it)."""
    frame: dict[str, Any] = {"id": 900, "op": "subscribe", "to": topic}
    if since is not None:
        frame["since"] = since
    await c.send(frame)
    return result(await c.recv())


async def test_slow_subscriber_gets_resync_while_fast_one_gets_every_event(
        tmp_path: Path) -> None:
    note = "n" * 16000  # big pushes fill the socket buffers quickly
    settings = {"open_mode": True, "outbox_size": 8, "rate": 1e6, "burst": 10**6}
    async with running_server(tmp_path, **settings) as running, \
            raw_client(running) as writer, raw_client(running) as fast, \
            raw_client(running, max_queue=1) as slow:
        result(await writer.call("lobby.create", kind="counter", name="w"))
        assert (await subscribe(fast, WORLD, 1))["rev"] == 1
        assert (await subscribe(slow, WORLD, 1))["rev"] == 1
        world = await running.state.directory.get(WORLD)
        fast_revs: list[int] = []
        written = 1

        async def read_fast() -> None:
            while True:
                push = await fast.recv()
                assert push["kind"] == "events", push
                fast_revs.extend(event_revs(push))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_fast)
            # The slow client never reads: write until the server drops it.
            while world.statistics().dropped == 0:
                assert written < 3000, "the slow subscriber was never dropped"
                written = result(await writer.call("counter.add", WORLD, amount=1,
                                                   note=note))["revision"]
            for _ in range(5):  # and a few more after the drop
                written = result(await writer.call("counter.add", WORLD, amount=1,
                                                   note=note))["revision"]
            with trio.fail_after(10):
                while not fast_revs or fast_revs[-1] < written:
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
        assert fast_revs == list(range(2, written + 1))
        # The slow client now reads what was queued for it: events in order, then resync,
        # then nothing more.
        slow_revs: list[int] = []
        while True:
            push = await slow.recv()
            if push["kind"] == "resync":
                break
            slow_revs.extend(event_revs(push))
        assert push["data"] == {"reason": "slow_consumer"} and push["topic"] == WORLD
        assert slow_revs == list(range(2, len(slow_revs) + 2))
        assert len(slow_revs) < written - 1
        assert world.statistics().subscribers == 1
        with trio.move_on_after(0.3):
            extra = await slow.recv()
            raise AssertionError(f"a dropped subscriber got {extra}")
        metrics = running.state.metrics.render()
        assert 'petridish_subscribers_dropped_total{kind="counter"} 1' in metrics


async def test_resume_delivers_exactly_the_missed_events_once_in_order(tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as running, \
            raw_client(running) as writer:
        result(await writer.call("lobby.create", kind="counter", name="w"))
        seen: list[int] = []
        async with raw_client(running) as reader:
            await subscribe(reader, WORLD, None)
            first = await reader.recv()
            assert first["kind"] == "snapshot" and first["rev"] == 1
            seen.append(first["rev"])
            for i in range(3):
                await writer.call("counter.add", WORLD, amount=i)
                push = await reader.recv()
                seen.extend(event_revs(push))
        for i in range(10):  # missed while disconnected
            await writer.call("counter.add", WORLD, amount=100 + i)
        async with raw_client(running) as reader:
            assert (await subscribe(reader, WORLD, seen[-1]))["rev"] == 14
            missed = await reader.recv()
            assert missed["kind"] == "events"
            assert [e["amount"] for e in missed["data"]] == list(range(100, 110))
            seen.extend(event_revs(missed))
            await writer.call("counter.add", WORLD, amount=7)
            push = await reader.recv()
            seen.extend(event_revs(push))
            assert [e["amount"] for e in push["data"]] == [7]
            with trio.move_on_after(0.2):
                extra = await reader.recv()
                raise AssertionError(f"unexpected extra frame {json.dumps(extra)}")
        assert seen == list(range(1, 16))


async def test_unsubscribe_stops_pushes(tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as running, \
            raw_client(running) as c:
        result(await c.call("lobby.create", kind="counter", name="w"))
        await subscribe(c, WORLD, 1)
        await c.send({"id": 5, "op": "unsubscribe", "to": WORLD})
        assert await c.recv() == {"id": 5, "ok": True, "result": {"topic": WORLD}}
        reply = await c.call("counter.add", WORLD, amount=1)  # `call` skips pushes: none came
        assert result(reply)["revision"] == 2
        world = await running.state.directory.get(WORLD)
        assert world.statistics().subscribers == 0


async def test_subscribe_refusals(tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as running, raw_client(running) as c:
        result(await c.call("lobby.create", kind="counter", name="w"))
        await c.send({"id": 1, "op": "subscribe", "to": "counter:nope"})
        assert (await c.recv())["error"] == {
            "code": "unknown_actor", "message": "there is no world 'counter:nope'; counter.create creates it",
            "detail": {"actor": "counter:nope"}}
        await c.send({"id": 2, "op": "subscribe", "to": WORLD, "since": 9})
        assert (await c.recv())["error"] == {
            "code": "bad_request", "message": "since: 9 is ahead of counter:w (revision 1)",
            "detail": {"path": "since", "rev": 1}}
        world = await running.state.directory.get(WORLD)
        assert world.statistics().subscribers == 0


class WriterSteps(trio.abc.Instrument):
    """Counts the steps of every connection's writer task."""

    def __init__(self) -> None:
        self.count = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        """One more when the task is a writer."""
        if task.name == WRITER_TASK:
            self.count += 1


async def test_replies_and_pushes_to_idle_sockets_go_out_without_the_writer_task(
        tmp_path: Path) -> None:
    """A frame for a connection with nothing queued and its socket free is written by
    the task that queues it: twenty adds and their pushes, and no writer task runs."""
    async with running_server(tmp_path) as srv:
        token = srv.state.tokens.create("agent", "ann")
        async with raw_client(srv, token) as writer, raw_client(srv) as watcher:
            result(await writer.call("counter.create", WORLD))
            assert (await subscribe(watcher, WORLD, None))["topic"] == WORLD
            assert (await watcher.recv())["kind"] == "snapshot"
            steps = WriterSteps()
            trio.lowlevel.add_instrument(steps)
            try:
                revs = []
                for _ in range(20):
                    rev = result(await writer.call("counter.add", WORLD, amount=1))["revision"]
                    while not revs or revs[-1] < rev:
                        revs.extend(event_revs(await watcher.recv()))
            finally:
                trio.lowlevel.remove_instrument(steps)
    assert revs == list(range(2, 22))
    assert steps.count == 0


async def test_an_unsubscribe_sent_while_its_subscribe_loads_is_answered_after_it(
        tmp_path: Path) -> None:
    """The subscribes and unsubscribes of one topic take effect in the order sent: an
    unsubscribe sent while the subscribe before it waits for its world to load is answered
    after that subscribe, and undoes it (it was answered first, and the subscribe then
    left the connection following a world it had left)."""
    loading = burn_world.Loading()
    loading.gate = trio.Event()
    async with running_server(tmp_path, **burn_world.slow_settings(loading)) as srv, \
            raw_client(srv) as c:
        await c.send({"id": 1, "op": "subscribe", "to": "slow:a"})
        await c.send({"id": 2, "op": "unsubscribe", "to": "slow:a"})
        await c.send({"id": 3, "op": "subscribe", "to": "slow:b"})
        await c.send({"id": 4, "op": "unsubscribe", "to": "slow:b"})
        await c.send({"id": 5, "op": "subscribe", "to": "slow:b"})
        with trio.fail_after(5):
            while loading.started < 2:
                await trio.sleep(0.01)
        with trio.move_on_after(0.3):
            early = await c.recv()
            raise AssertionError(f"answered before its world loaded: {early}")
        loading.gate.set()
        frames = [await c.recv() for _ in range(8)]  # 5 replies, 3 snapshots
        account = srv.state.ledger.accounts["address:127.0.0.1"]
        assert dict(account.followed) == {"slow:b": 1}
    replies = [(f["id"], f["ok"]) for f in frames if "id" in f]
    a, b = [r for r in replies if r[0] < 3], [r for r in replies if r[0] >= 3]
    assert a == [(1, True), (2, True)] and b == [(3, True), (4, True), (5, True)]
    assert sorted(f["topic"] for f in frames if f.get("kind") == "snapshot") == \
        ["slow:a", "slow:b", "slow:b"]


async def test_the_subscriptions_cap_counts_in_the_order_sent(tmp_path: Path) -> None:
    """A connection that may follow one topic subscribes, unsubscribes and subscribes
    again while the world loads: the second subscribe is counted after the unsubscribe
    (it was refused at once, counted against the first while that waited)."""
    loading = burn_world.Loading()
    loading.gate = trio.Event()
    async with running_server(tmp_path, budgets=Budgets(subscriptions=1),
                              **burn_world.slow_settings(loading)) as srv, \
            raw_client(srv) as c:
        for rid, op in enumerate(("subscribe", "unsubscribe", "subscribe"), 1):
            await c.send({"id": rid, "op": op, "to": "slow:a"})
        with trio.fail_after(5):
            while loading.started < 1:
                await trio.sleep(0.01)
        loading.gate.set()
        frames = [await c.recv() for _ in range(5)]  # 3 replies, 2 snapshots
        account = srv.state.ledger.accounts["address:127.0.0.1"]
        assert dict(account.followed) == {"slow:a": 1}
    assert [(f["id"], f["ok"]) for f in frames if "id" in f] == [(1, True), (2, True), (3, True)]
