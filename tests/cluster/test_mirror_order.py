"""A mirror pushes the snapshots its world's host relays in the host's order: each after the
events up to its revision and before later ones; one that comes after later events went
out is dropped. A topic gives its relays the snapshot pushes and its end; the host's
relay on a peer connection ends when that peer reads too slowly. (No PostgreSQL: the
store is a list.)"""

from __future__ import annotations

import json
from typing import Any

import trio
from trio.testing import wait_all_tasks_blocked

from actors.runtime.context import NullObserver
from actors.runtime.subscriber import SubscriberQueue
from actors.runtime.topic import UNWATCHED, Topic
from actors.store import StoredEvent
from server.cluster.mirrors import Mirror, Mirrors
from server.cluster.peers import RELAY_BACKLOG, _PeerRelay
from server.cluster.wire import Outbox

WORLD = "counter:m"


class _Store:
    """Events 1..`last` of WORLD, each {"n": rev}."""

    def __init__(self, last: int) -> None:
        self.last = last

    async def read(self, stream: str, after: int = 0,
                   upto: int | None = None) -> list[StoredEvent]:
        end = self.last if upto is None else min(upto, self.last)
        return [StoredEvent(r, {"n": r}) for r in range(after + 1, end + 1)]


def _mirror(last: int, at: int) -> tuple[Mirrors, Mirror, SubscriberQueue]:
    mirrors = Mirrors(_Store(last), 100, NullObserver())  # type: ignore[arg-type]
    mirror = Mirror(WORLD, 100, lambda: None, mirrors)
    mirrors._mirrors[WORLD] = mirror
    mirror.rev = mirror.first = at
    queue = SubscriberQueue(100)
    mirror.topic.subscribe(queue, at, 1, at, lambda: None)
    queue.get_nowait()  # the reply
    return mirrors, mirror, queue


def _pushes(queue: SubscriberQueue) -> list[tuple[Any, ...]]:
    out = []
    while (frame := queue.get_nowait()) is not None:
        push = json.loads(frame)
        if push["kind"] == "events":
            out += [("event", e["n"]) for e in push["data"]]
        else:
            out.append((push["kind"], push["rev"], push["data"]))
    return out


async def test_relayed_snapshots_go_out_between_the_events_as_on_the_host() -> None:
    mirrors, mirror, queue = _mirror(last=9, at=5)
    mirrors.on_relayed(mirror, 7, "view at 7")
    mirrors.on_relayed(mirror, 7, "view at 7 again")  # figures moved, no event
    mirrors.on_relayed(mirror, 9, "view at 9")
    async with mirror.lock:
        await mirrors._advance(mirror)
    assert _pushes(queue) == [("event", 6), ("event", 7), ("snapshot", 7, "view at 7"),
                              ("snapshot", 7, "view at 7 again"), ("event", 8),
                              ("event", 9), ("snapshot", 9, "view at 9")]
    assert mirrors.relayed == 3 and mirrors.late == 0 and not mirror.views


async def test_a_snapshot_older_than_the_events_pushed_is_dropped() -> None:
    mirrors, mirror, queue = _mirror(last=9, at=9)
    mirrors.on_relayed(mirror, 7, "late")
    mirrors.on_relayed(mirror, 9, "now")
    async with mirror.lock:
        await mirrors._advance(mirror, read=False)
    assert _pushes(queue) == [("snapshot", 9, "now")]
    assert mirrors.late == 1


async def test_a_view_marks_which_relayed_snapshots_came_before_it(
        nursery: trio.Nursery) -> None:
    mirrors, mirror, queue = _mirror(last=9, at=5)
    mirrors._nursery = nursery
    mirrors.on_relayed(mirror, 6, "before the view")  # (arrived first)
    mark = mirror.arrived
    mirrors.on_relayed(mirror, 8, "after the view")
    async with mirror.lock:  # what a new subscriber's view at 7 has the mirror do first
        await mirrors._advance(mirror, before=mark, upto=7)
        assert _pushes(queue) == [("event", 6), ("snapshot", 6, "before the view"),
                                  ("event", 7)]
        assert mirror.rev == 7
    with trio.fail_after(5):  # the rest goes out in order once the subscriber is in
        while mirror.rev != 9:
            await trio.sleep(0.01)
    assert _pushes(queue) == [("event", 8), ("snapshot", 8, "after the view"), ("event", 9)]


class _Relay:
    footprint = None  # (its spectators hold the world)

    def __init__(self) -> None:
        self.closed = False
        self.got: list[Any] = []

    def snapshot(self, rev: int, frame: str) -> None:
        self.got.append(("snapshot", rev, json.loads(frame)["data"]))

    def stopped(self, rev: int, _unloaded: bool) -> None:
        self.got.append(("stopped", rev))


def test_a_topic_gives_its_relays_the_snapshots_and_its_end() -> None:
    topic = Topic(WORLD, 10, lambda: None)
    relay, gone = _Relay(), _Relay()
    topic.relay(relay)
    topic.relay(relay)  # once
    topic.relay(gone)
    assert len(topic) == 2  # relays count as subscribers (the world is watched)
    topic.publish(1, [{"n": 1}])
    topic.flush()  # events reach relays through the store, not here
    topic.publish_snapshot(1, {"v": 1})
    gone.closed = True
    assert len(topic) == 1
    topic.publish_snapshot(1, {"v": 2})
    topic.close(1)
    assert relay.got == [("snapshot", 1, {"v": 1}), ("snapshot", 1, {"v": 2}), ("stopped", 1)]
    assert gone.got == [("snapshot", 1, {"v": 1})]
    assert len(topic) == 0


def test_a_relay_holds_the_world_as_its_spectators_would() -> None:
    """A relay's footprint counts as a subscriber's; one nobody watches through is no
    follower; the host's relay tells its peer when the world was unloaded to make room."""
    topic = Topic(WORLD, 10, lambda: None)
    outbox = Outbox()
    relay = _PeerRelay(outbox, WORLD, UNWATCHED)
    topic.relay(relay)
    assert len(topic) == 0 and topic.footprint(None) is None
    relay.footprint = 3  # anonymous spectators, the lightest following 3 worlds
    assert len(topic) == 1 and topic.footprint(None) == 3
    assert topic.footprint(2) == 3 and topic.footprint(3) is None
    queue = SubscriberQueue(10)
    queue.footprint = 2
    topic.subscribe(queue, None, 1, 0, lambda: None)
    assert topic.footprint(None) == 2
    relay.footprint = None  # a token holder there
    assert topic.footprint(None) is None
    topic.unloaded = True
    topic.close(0)
    assert json.loads(outbox._frames[-1]) == {"topic": WORLD, "rev": 0, "kind": "resync",
                                              "data": {"reason": "unloaded"}}


def test_a_peer_that_reads_too_slowly_loses_its_relay() -> None:
    outbox = Outbox()
    relay = _PeerRelay(outbox, WORLD, None)
    relay.snapshot(3, json.dumps({"topic": WORLD, "rev": 3, "kind": "snapshot", "data": 1}))
    assert not relay.closed
    outbox.put(b"x" * (RELAY_BACKLOG + 1))  # the peer has not read this yet
    relay.snapshot(4, json.dumps({"topic": WORLD, "rev": 4, "kind": "snapshot", "data": 2}))
    assert relay.closed
    frames = [json.loads(f) for f in outbox._frames if f.startswith(b"{")]
    assert [(f["kind"], f["rev"]) for f in frames] == [("snapshot", 3), ("resync", 4)]
    assert frames[-1]["data"] == {"reason": "slow_consumer"}


class _Host:
    """The process hosting WORLD at revision `rev`, as a mirror's directory reaches it: a
    view registers its relay on the live actor's topic (a real `Topic`) and is answered;
    while `gate` is shut, views wait for it."""

    def __init__(self, rev: int) -> None:
        self.rev = rev
        self.topic = Topic(WORLD, 10, lambda: None)
        self.gate = trio.Event()
        self.gate.set()
        self.views: list[bool] = []  # each view asked: did it ask for a relay?
        self.stop_after_answering = False  # the next view's actor stops once it answered

    async def ask(self, actor_id: str, message: Any, timeout: float | None = None,
                  answer: Any = None) -> Any:
        self.views.append(message.relay is not None)
        await self.gate.wait()
        self.topic.relay(message.relay)
        answer.succeed((self.rev, {"view at": self.rev}))
        if self.stop_after_answering:  # before the asker runs again (the answer and the
            self.stop_after_answering = False  # relay's end came in one read of a link)
            self.restart()
        return answer.value

    def restart(self) -> None:
        """The actor stops (its relays are told) and the world loads again."""
        self.topic.close(self.rev)
        self.topic = Topic(WORLD, 10, lambda: None)


def _following(host: _Host, nursery: trio.Nursery) -> Mirrors:
    mirrors = Mirrors(_Store(host.rev), 100, NullObserver())  # type: ignore[arg-type]
    mirrors.directory = host  # type: ignore[assignment]
    mirrors._nursery = nursery
    return mirrors


async def test_a_relay_lost_while_a_subscriber_s_view_is_asked_is_followed_again(
        nursery: trio.Nursery) -> None:
    """The mirror's only spectator left (it is kept a while); a new one's view is asked;
    the host's actor stops meanwhile, which ends the relay while nobody is in the topic:
    once the new spectator is in, the host is asked to relay again."""
    host = _Host(rev=5)
    mirrors = _following(host, nursery)
    first = SubscriberQueue(100)
    await mirrors.subscribe(WORLD, first, None, 1)
    mirrors.unsubscribe(WORLD, first)
    host.gate = trio.Event()
    queue = SubscriberQueue(100)
    nursery.start_soon(mirrors.subscribe, WORLD, queue, None, 2)
    await wait_all_tasks_blocked()
    assert host.views == [True, False]  # (relayed to already: the new one's view is plain)
    host.restart()
    await wait_all_tasks_blocked()  # (nobody watches yet: the mirror does not ask again)
    assert host.views == [True, False]
    host.gate.set()
    await wait_all_tasks_blocked()
    assert json.loads(queue.get_nowait())["result"] == {"topic": WORLD, "rev": 5}
    host.topic.publish_snapshot(5, "figures")
    await wait_all_tasks_blocked()
    assert _pushes(queue) == [("snapshot", 5, {"view at": 5}), ("snapshot", 5, "figures")]


async def test_a_relay_that_ends_as_its_view_is_answered_is_asked_for_again(
        nursery: trio.Nursery) -> None:
    """The host answers the view that registers the relay and its actor stops before the
    mirror's task runs again: the relay's end is not forgotten."""
    host = _Host(rev=5)
    host.stop_after_answering = True
    mirrors = _following(host, nursery)
    queue = SubscriberQueue(100)
    await mirrors.subscribe(WORLD, queue, None, 1)
    await wait_all_tasks_blocked()
    assert host.views == [True, True]
    host.topic.publish_snapshot(5, "figures")
    await wait_all_tasks_blocked()
    queue.get_nowait()  # the reply
    assert _pushes(queue) == [("snapshot", 5, {"view at": 5}), ("snapshot", 5, "figures")]
