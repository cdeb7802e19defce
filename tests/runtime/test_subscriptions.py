"""Subscriptions: bounded queues, slow consumers dropped with resync, resume with `since`."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import pytest
import trio
import trio.testing

from actors.runtime import RuntimeConfig
from actors.runtime.directory import ActorKind, any_name, open_directory
from actors.runtime.mailbox import Pending, SubscribeMsg
from actors.runtime.subscriber import SubscriberQueue
from actors.runtime.topic import FANOUT_CHUNK, Topic
from actors.store import MemoryEventStore
from protocol.errors import ErrorCode, ProtocolError
from tests.runtime.probe import Add, ProbeActor, Sleep

KINDS = [ActorKind("probe", ProbeActor, declared=any_name)]


def drain(queue: SubscriberQueue) -> list[dict]:
    """Every frame waiting in `queue`, decoded (without waiting)."""
    frames = []
    while len(queue):
        frames.append(json.loads(queue.get_nowait()))
    return frames


def event_revs(frames: list[dict]) -> list[int]:
    """The revision of every event carried by `events` pushes, in arrival order."""
    revs = []
    for f in frames:
        if f.get("kind") == "events":
            revs.extend(range(f["rev"] - len(f["data"]) + 1, f["rev"] + 1))
    return revs


async def test_slow_subscriber_is_dropped_with_resync_while_fast_one_gets_all() -> None:
    async with open_directory(MemoryEventStore(), KINDS) as directory:
        actor = await directory.get("probe:a")
        fast, slow = SubscriberQueue(1000), SubscriberQueue(4)
        await actor.subscribe(fast, 0, request_id=1)
        await actor.subscribe(slow, 0, request_id=2)
        for i in range(50):
            await actor.ask(Add(i))
        fast_frames, slow_frames = drain(fast), drain(slow)
        assert event_revs(fast_frames) == list(range(1, 51))
        assert [f.get("kind") for f in slow_frames] == [None, "events", "events", "events",
                                                        "resync"]
        assert slow_frames[-1] == {"topic": "probe:a", "rev": 4, "kind": "resync",
                                   "data": {"reason": "slow_consumer"}}
        stats = actor.statistics()
        assert (stats.subscribers, stats.dropped) == (1, 1)


async def test_resume_from_history_sends_exactly_the_missed_events() -> None:
    async with open_directory(MemoryEventStore(), KINDS) as directory:
        actor = await directory.get("probe:a")
        for i in range(10):
            await actor.ask(Add(i))
        queue = SubscriberQueue(100)
        await actor.subscribe(queue, 6, request_id=3)
        await actor.ask(Add(10))
        frames = drain(queue)
        assert frames[0] == {"id": 3, "ok": True, "result": {"topic": "probe:a", "rev": 10}}
        assert frames[1] == {"topic": "probe:a", "rev": 10, "kind": "events",
                             "data": [{"type": "added", "amount": i} for i in (6, 7, 8, 9)]}
        assert event_revs(frames) == [7, 8, 9, 10, 11]


async def test_a_world_loaded_from_its_snapshot_resumes_from_the_events_before_it() -> None:
    """The resume history after a load is the stream's last events whether or not a
    snapshot shortened the fold: a client that saw revision 6 before the world unloaded
    gets events 7.. after it loads again from its snapshot at 8, not a snapshot."""
    store, config = MemoryEventStore(), RuntimeConfig(snapshot_every=4, history_size=5)
    async with open_directory(store, KINDS, config=config) as directory:
        actor = await directory.get("probe:a")
        for i in range(10):
            await actor.ask(Add(i))
    assert (await store.load_snapshot("probe:a")).rev == 8
    async with open_directory(store, KINDS, config=config) as directory:
        actor = await directory.get("probe:a")
        assert actor.snapshot() == {"total": sum(range(10)), "amounts": list(range(10))}
        queue = SubscriberQueue(100)
        await actor.subscribe(queue, 6, request_id=3)
        assert drain(queue)[1] == {"topic": "probe:a", "rev": 10, "kind": "events",
                                   "data": [{"type": "added", "amount": i} for i in (6, 7, 8, 9)]}
        late = SubscriberQueue(100)  # older than the history: a snapshot, as before
        await actor.subscribe(late, 4, request_id=4)
        assert drain(late)[1]["kind"] == "snapshot"


async def test_resume_at_the_current_revision_sends_nothing_until_new_events() -> None:
    async with open_directory(MemoryEventStore(), KINDS) as directory:
        actor = await directory.get("probe:a")
        await actor.ask(Add(1))
        queue = SubscriberQueue(100)
        await actor.subscribe(queue, 1, request_id=4)
        assert [f.get("id") for f in drain(queue)] == [4]


async def test_a_gap_older_than_the_history_gets_a_snapshot() -> None:
    config = RuntimeConfig(history_size=5)
    async with open_directory(MemoryEventStore(), KINDS, config=config) as directory:
        actor = await directory.get("probe:a")
        for i in range(12):
            await actor.ask(Add(i))
        queue = SubscriberQueue(100)
        await actor.subscribe(queue, 3, request_id=5)
        frames = drain(queue)
        assert frames[1] == {"topic": "probe:a", "rev": 12, "kind": "snapshot",
                             "data": {"total": sum(range(12)), "rev": 12}}
        fresh = SubscriberQueue(100)
        await actor.subscribe(fresh, None, request_id=6)
        assert drain(fresh)[1]["kind"] == "snapshot"


def test_a_backfilled_history_reaches_back_as_far_as_it_holds() -> None:
    topic = Topic("t:x", 4, on_drop=lambda: None)
    topic.publish(7, [{"r": 7}])
    topic.backfill([(5, {"r": 5}), (6, {"r": 6})])
    queue = SubscriberQueue(10)
    topic.subscribe(queue, 4, 1, 7, lambda: None)
    assert drain(queue)[1]["data"] == [{"r": 5}, {"r": 6}, {"r": 7}]
    with pytest.raises(ValueError, match=r"^t:x: a backfill past the history's 4 events$"):
        topic.backfill([(3, {"r": 3}), (4, {"r": 4})])
    assert topic.events_after(4, 7) == [{"r": 5}, {"r": 6}, {"r": 7}]


async def test_since_ahead_of_the_actor_is_a_bad_request() -> None:
    async with open_directory(MemoryEventStore(), KINDS) as directory:
        actor = await directory.get("probe:a")
        queue = SubscriberQueue(10)
        with pytest.raises(ProtocolError, match=r"^since: 5 is ahead of probe:a \(revision 0\)$"
                           ) as err:
            await actor.subscribe(queue, 5, request_id=7)
        assert err.value.code == ErrorCode.BAD_REQUEST
        assert len(queue) == 0 and actor.statistics().subscribers == 0


async def test_closed_and_unsubscribed_queues_are_forgotten() -> None:
    async with open_directory(MemoryEventStore(), KINDS) as directory:
        actor = await directory.get("probe:a")
        kept, closed, left = SubscriberQueue(10), SubscriberQueue(10), SubscriberQueue(10)
        for i, q in enumerate((kept, closed, left)):
            await actor.subscribe(q, 0, request_id=i)
        closed.close()
        actor.unsubscribe(left)
        drain(left)
        await actor.ask(Add(1))
        assert actor.statistics().subscribers == 1
        assert len(left) == 0
        assert event_revs(drain(kept)) == [1]


async def test_fanout_rate_stretches_the_interval_with_the_subscriber_count(
        autojump_clock: trio.abc.Clock) -> None:
    class Crowded(ProbeActor):
        fanout_rate = 4.0  # frames a second to all subscribers: 2 subscribers -> 0.5 s

    kinds = [ActorKind("probe", Crowded, declared=any_name)]
    async with open_directory(MemoryEventStore(), kinds) as directory:
        actor = await directory.get("probe:a")
        queues = [SubscriberQueue(100), SubscriberQueue(100)]
        for rid, queue in enumerate(queues, 1):
            await actor.subscribe(queue, 0, request_id=rid)
        start = trio.current_time()
        arrivals: list[tuple[float, list[int]]] = []
        for i in range(20):  # a batch every 0.05 s for one second
            await actor.ask(Add(i))
            arrivals.extend((trio.current_time() - start, event_revs([f]))
                            for f in drain(queues[0]) if f.get("kind") == "events")
            await trio.sleep(0.05)
        await trio.sleep(1)
        arrivals.extend((trio.current_time() - start, event_revs([f]))
                        for f in drain(queues[0]) if f.get("kind") == "events")
        times = [t for t, _ in arrivals]
        assert [r for _, revs in arrivals for r in revs] == list(range(1, 21))  # none lost
        assert all(b - a >= 0.5 - 1e-9 for a, b in pairwise(times))
        assert len(arrivals) <= 4  # 20 batches in ~1 s: at most one push per 0.5 s
        assert event_revs(drain(queues[1])) == list(range(1, 21))


async def test_push_interval_coalesces_pushes_without_losing_events(
        autojump_clock: trio.abc.Clock) -> None:
    class Coalescing(ProbeActor):
        push_interval = 1.0

    kinds = [ActorKind("probe", Coalescing, declared=any_name)]
    async with open_directory(MemoryEventStore(), kinds) as directory:
        actor = await directory.get("probe:a")
        queue = SubscriberQueue(100)
        await actor.subscribe(queue, 0, request_id=1)
        for i in range(10):  # ten batches within one interval
            await actor.ask(Add(i))
            await trio.sleep(0.05)
        frames = drain(queue)
        assert event_revs(frames) == [1]  # the first push went out at once
        await trio.sleep(1)
        frames = drain(queue)
        assert [f["kind"] for f in frames] == ["events"]  # the other nine, together
        assert event_revs(frames) == list(range(2, 11))
        late = SubscriberQueue(100)
        await actor.ask(Add(10))  # pending when the next subscriber arrives
        await actor.subscribe(late, 10, request_id=2)
        assert event_revs(drain(queue)) == [11]  # flushed before the new subscriber joined
        assert event_revs(drain(late)) == [11]


async def test_a_crowded_topic_delivers_every_event_in_order_exactly_once() -> None:
    async with open_directory(MemoryEventStore(), KINDS) as directory:
        actor = await directory.get("probe:a")
        queues = [SubscriberQueue(1000) for _ in range(3 * FANOUT_CHUNK + 5)]
        for rid, queue in enumerate(queues, 1):
            await actor.subscribe(queue, 0, request_id=rid)
        for i in range(10):
            await actor.ask(Add(i))
        await trio.sleep(0.5)  # pushes wait twice as long as the last spread took
        await trio.testing.wait_all_tasks_blocked()
        for queue in queues:
            assert event_revs(drain(queue)) == list(range(1, 11))


async def test_a_crowded_push_is_spread_over_task_steps_and_skips_a_late_joiner(
        nursery: trio.Nursery) -> None:
    steps = [0]  # task steps of the spread task so far

    class Steps(trio.abc.Instrument):
        def before_task_step(self, task: trio.lowlevel.Task) -> None:
            if task.name.endswith("Topic.spread"):
                steps[0] += 1

    offered_at: list[int] = []

    class Recording(SubscriberQueue):
        def offer(self, frame: str) -> bool:
            offered_at.append(steps[0])
            return super().offer(frame)

    topic = Topic("probe:a", 100, lambda: None)
    queues = [Recording(100) for _ in range(3 * FANOUT_CHUNK + 5)]
    for rid, queue in enumerate(queues, 1):
        topic.subscribe(queue, 0, rid, 0, dict)
    nursery.start_soon(topic.spread)
    trio.lowlevel.add_instrument(Steps())
    await trio.testing.wait_all_tasks_blocked()
    offered_at.clear()
    topic.publish(1, [{"n": 1}])
    topic.flush()
    assert not offered_at  # nothing offered in the actor's own step
    await trio.testing.wait_all_tasks_blocked()
    assert len(set(offered_at)) == 4  # 197 subscribers, 64 per step
    assert all(event_revs(drain(q)) == [1] for q in queues)
    topic.publish(2, [{"n": 2}])
    topic.flush()
    topic.subscribe(queues[-1], 1, 999, 2, dict)  # joins again before the push reaches it
    await trio.testing.wait_all_tasks_blocked()
    assert all(event_revs(drain(q)) == [2] for q in queues)  # the rejoined one: once


async def test_a_spread_reports_how_long_it_took(nursery: trio.Nursery,
                                                 mock_clock: trio.testing.MockClock) -> None:
    class Slow(SubscriberQueue):
        def offer(self, frame: str) -> bool:
            mock_clock.jump(0.001)  # each offer costs a millisecond of the clock
            return super().offer(frame)

    topic = Topic("probe:a", 100, lambda: None)
    queues = [Slow(100) for _ in range(2 * FANOUT_CHUNK)]
    for rid, queue in enumerate(queues, 1):
        topic.subscribe(queue, 0, rid, 0, dict)
    nursery.start_soon(topic.spread)
    await trio.testing.wait_all_tasks_blocked()
    assert topic.spread_seconds == 0.0
    topic.publish(1, [{"n": 1}])
    topic.flush()
    await trio.testing.wait_all_tasks_blocked()
    assert topic.spread_seconds == pytest.approx(2 * FANOUT_CHUNK * 0.001)


class _SlowAppends(MemoryEventStore):
    """A store whose appends take `APPEND_S` (a slow disk, or a writer busy with others)."""

    async def append(self, *args: Any, **kwargs: Any) -> int:
        await trio.sleep(APPEND_S)
        return await super().append(*args, **kwargs)


class _Charged(SubscriberQueue):
    """A subscriber queue that keeps what its subscription was charged."""

    charged = 0.0

    def charge(self, seconds: float) -> None:
        self.charged += seconds


APPEND_S = 0.3


async def test_a_subscriber_is_not_charged_for_the_batch_it_waits_for() -> None:
    """A subscription starts from durable state, so it waits for its batch's writes to be
    appended; that wait is the writers' batch, not the subscriber's cost."""
    async with open_directory(_SlowAppends(), KINDS) as directory:
        actor = await directory.get("probe:a")
        write, subscribed, queue = Pending(), Pending(), _Charged(100)
        actor.send(Add(1), write)  # both in one batch: the add is not durable yet ...
        actor.send(SubscribeMsg(queue, None, 1), subscribed)  # ... when this is handled
        with trio.fail_after(5):
            await subscribed.done.wait()
            await write.done.wait()
    assert subscribed.error is None and write.error is None
    assert drain(queue)[0]["result"] == {"topic": "probe:a", "rev": 1}
    assert 0 < queue.charged < APPEND_S / 3


async def test_a_subscribe_given_up_by_its_asker_is_not_made() -> None:
    """A subscribe whose ask timed out (its actor busy past `ask_timeout`) is not made when
    the actor gets to it: its caller heard `timeout`, so no reply, push or subscriber
    follows (they came, unaccounted, to a connection that did not follow the world)."""
    config = RuntimeConfig(ask_timeout=0.1)
    async with open_directory(MemoryEventStore(), KINDS, config=config) as directory:
        actor = await directory.get("probe:a")
        actor.send(Sleep(0.3), Pending())
        queue = SubscriberQueue(100)
        with pytest.raises(ProtocolError) as gave_up:
            await actor.subscribe(queue, None, request_id=1)
        assert gave_up.value.code == ErrorCode.TIMEOUT
        await actor.ask(Add(1), timeout=5)  # after the sleep and the subscribe
        assert drain(queue) == []
        assert actor.statistics().subscribers == 0


async def test_a_subscribe_given_up_while_it_waited_for_its_batch_is_not_made() -> None:
    """The same when the ask times out while the subscribe waits for its batch's append
    (a slow store: when timeouts happen); nor is its client charged that append."""
    config = RuntimeConfig(ask_timeout=0.1)
    async with open_directory(_SlowAppends(), KINDS, config=config) as directory:
        actor = await directory.get("probe:a")
        actor.send(Add(1), Pending())  # in the subscribe's batch: appended first, for 0.3 s
        queue = _Charged(100)
        with pytest.raises(ProtocolError) as gave_up:
            await actor.subscribe(queue, None, request_id=1)
        assert gave_up.value.code == ErrorCode.TIMEOUT
        await actor.ask(Add(2), timeout=5)
        assert drain(queue) == []
        assert actor.statistics().subscribers == 0
        assert queue.charged < APPEND_S / 3


async def test_an_unsubscribe_is_taken_by_a_full_mailbox() -> None:
    """An unsubscribe posted while its actor's mailbox is full is handled all the same (it
    was dropped, and the queue went on getting pushes for a topic it had left)."""
    config = RuntimeConfig(mailbox_size=4)
    async with open_directory(MemoryEventStore(), KINDS, config=config) as directory:
        actor = await directory.get("probe:a")
        queue = SubscriberQueue(100)
        await actor.subscribe(queue, None, request_id=1)
        drain(queue)
        actor.send(Sleep(0.2), Pending())
        while actor.statistics().mailbox_depth < 4:
            actor.send(Add(0), Pending())
        actor.unsubscribe(queue)
        with trio.fail_after(5):
            while actor.statistics().mailbox_depth:  # past the unsubscribe
                await trio.sleep(0.01)
        last = await actor.ask(Add(1), timeout=5)
        assert actor.statistics().subscribers == 0
        assert last not in event_revs(drain(queue))
