"""server/reactor.py: one task serving many readers, one message each per round."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from server.reactor import Reactor
from server.session import Session
from tests.server.raw_ws import TEXT, RawSocket, frame
from tests.server.ws_harness import running_server
from tests.steps import Steps


class Queue:
    """A reader whose messages are a list; its socket is one end of a socket pair."""

    def __init__(self, name: str, messages: int, log: list[str]) -> None:
        self.name = name
        self.ours, self.theirs = socket.socketpair()
        self.ours.setblocking(False)
        self.left = messages
        self.log = log
        self.readable = False
        self.reads = 0
        self.refuse = False  # pause instead of taking a message
        self.broken = False  # raise instead of taking a message
        self.failures = 0
        self.reactor: Reactor | None = None

    def serve_one(self) -> bool:
        assert self.reactor is not None
        if self.refuse:
            self.reactor.pause(self)
            return False
        if self.broken:
            raise RuntimeError("a bug")
        if self.readable:  # what the socket holds stands for the messages
            self.readable = False
            self.reads += 1
            self.ours.recv(4096)
        if not self.left:
            return False
        self.left -= 1
        self.log.append(self.name)
        return self.left > 0

    def failed(self) -> None:
        self.failures += 1

    def close(self) -> None:
        self.ours.close()
        self.theirs.close()


def _watched(reactor: Reactor, queue: Queue) -> Queue:
    queue.reactor = reactor
    reactor.watch(queue.ours.fileno(), queue)
    return queue


async def _until(ready: Callable[[], bool]) -> None:
    """Wait (polling) until `ready()`: a loaded machine may take its time to serve."""
    with trio.fail_after(10):
        while not ready():
            await trio.sleep(0.005)


async def _settle() -> None:
    for _ in range(20):
        await trio.lowlevel.checkpoint()


async def test_each_reader_hands_over_one_message_per_round_and_the_task_yields_between() -> None:
    """Two connections whose clients packed three messages each are served A B A B A B,
    and the reactor's task yields after each round (others run between)."""
    log: list[str] = []
    reactor = Reactor(round_seconds=1.0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(reactor.run, name="reactor")
        await _settle()
        task = next(t for t in nursery.child_tasks if t.name == "reactor")
        a, b = _watched(reactor, Queue("a", 3, log)), _watched(reactor, Queue("b", 3, log))
        steps = Steps(task)
        trio.lowlevel.add_instrument(steps)
        try:
            a.theirs.send(b"x")
            b.theirs.send(b"x")
            await _settle()
        finally:
            trio.lowlevel.remove_instrument(steps)
        assert log == ["a", "b", "a", "b", "a", "b"]
        assert steps.count >= 3  # a round, a yield, the next round
        assert (a.reads, b.reads) == (1, 1)
        nursery.cancel_scope.cancel()
    a.close()
    b.close()


async def test_a_round_yields_once_it_took_its_time() -> None:
    """A round that took `round_seconds` ends early; the readers it did not reach are
    served first in the next round."""
    log: list[str] = []
    reactor = Reactor(round_seconds=0.0)  # every round ends after one reader
    async with trio.open_nursery() as nursery:
        nursery.start_soon(reactor.run)
        queues = [_watched(reactor, Queue(name, 1, log)) for name in "abc"]
        await _settle()
        assert sorted(log) == ["a", "b", "c"]
        nursery.cancel_scope.cancel()
    for queue in queues:
        queue.close()


async def test_a_paused_reader_is_not_read_until_resumed() -> None:
    """A reader that pauses is not served while its socket stays readable; `resume`
    wakes the parked reactor and serves it again."""
    log: list[str] = []
    reactor = Reactor(round_seconds=1.0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(reactor.run)
        q = _watched(reactor, Queue("q", 2, log))
        q.refuse = True
        q.theirs.send(b"x")
        await trio.sleep(0.05)
        assert log == [] and q.reads == 0
        q.refuse = False
        reactor.resume(q)
        await _until(lambda: len(log) == 2)
        assert log == ["q", "q"] and q.reads == 1
        nursery.cancel_scope.cancel()
    q.close()


async def test_a_reader_that_raises_is_dropped_and_the_others_are_served(
        caplog: pytest.LogCaptureFixture) -> None:
    """A bug serving one connection is logged and ends that connection (`failed`); the
    reactor goes on serving the others."""
    log: list[str] = []
    reactor = Reactor(round_seconds=1.0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(reactor.run)
        bad, good = _watched(reactor, Queue("bad", 2, log)), _watched(reactor, Queue("good", 2, log))
        bad.broken = True
        await _until(lambda: len(log) == 2 and bad.failures == 1)
        assert (bad.failures, log, len(reactor)) == (1, ["good", "good"], 1)
        assert "serving a connection failed" in caplog.text
        nursery.cancel_scope.cancel()
    bad.close()
    good.close()


async def test_an_unwatched_descriptor_number_may_serve_the_next_connection() -> None:
    """Unwatched before its socket closes, a descriptor's number is free for the next
    connection's reader, which is then served (and the old one never again)."""
    log: list[str] = []
    reactor = Reactor(round_seconds=1.0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(reactor.run)
        old = _watched(reactor, Queue("old", 5, log))
        number = old.ours.fileno()
        reactor.unwatch(old)
        old.close()
        new = Queue("new", 1, log)
        assert new.ours.fileno() == number  # Linux hands out the lowest free number
        _watched(reactor, new)
        new.theirs.send(b"x")
        await _until(lambda: log != [])
        await _settle()
        assert log == ["new"] and len(reactor) == 1
        nursery.cancel_scope.cancel()
    new.close()


async def test_a_client_past_its_answer_slots_is_paused_then_served_in_order(
        tmp_path: Path) -> None:
    """200 requests packed into one segment by a connection with 4 answer slots: the
    reactor pauses the reader while the slots are taken (TCP holds the rest), resumes it
    as answers go out, and every request is answered once, in order."""
    async with running_server(tmp_path, open_mode=True, max_inflight=4, rate=1e6,
                              burst=10**6) as srv:
        pauses = []
        pause = srv.state.reactor.pause
        srv.state.reactor.pause = lambda reader: (pauses.append(reader), pause(reader))[1]
        client = await RawSocket.open(srv.port)
        assert (await client.hello())["ok"]
        await client.send_json({"id": 0, "op": "lobby.create",
                                "args": {"kind": "counter", "name": "r"}})
        assert (await client.recv_json())["ok"]
        await client.send(b"".join(
            frame(TEXT, json.dumps({"id": k, "op": "counter.add", "to": "counter:r",
                                    "args": {"amount": 1}}).encode()) for k in range(1, 201)))
        replies = [await client.recv_json() for _ in range(200)]
        assert [r["id"] for r in replies] == list(range(1, 201))
        assert [r["result"]["adds"] for r in replies] == list(range(1, 201))
        assert pauses  # the slots ran out at least once
        await client.aclose()


async def test_a_bug_reading_a_connection_closes_it_1011_and_others_are_served(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in taking one connection's message closes that connection with 1011 (and
    logs it); every other connection is served as before."""
    def broken(self: Session, frame: object, now: float) -> None:
        raise RuntimeError("a bug in the budgets")

    async with running_server(tmp_path, open_mode=True) as srv:
        victim = await RawSocket.open(srv.port)
        assert (await victim.hello())["ok"]
        monkeypatch.setattr(Session, "_may_compute", broken)
        await victim.send_json({"id": 1, "op": "lobby.list"})
        assert await victim.close_code() == 1011
        await victim.aclose()
        monkeypatch.undo()
        other = await RawSocket.open(srv.port)
        assert (await other.hello())["ok"]
        await other.send_json({"id": 2, "op": "lobby.list"})
        assert (await other.recv_json())["ok"]
        await other.aclose()
