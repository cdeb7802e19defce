"""Crashes: the ask gets actor_restarted, the state comes back equal from the store."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
import trio
import trio.testing

from actors.runtime import Actor, RuntimeConfig
from actors.runtime.directory import ActorKind, any_name, open_directory
from actors.runtime.subscriber import SubscriberQueue
from actors.store import MemoryEventStore, Snapshot, StoreStatistics
from protocol.errors import ErrorCode, ProtocolError
from tests.runtime.probe import ONE_BATCH, Add, Block, Crash, Durable, ProbeActor

KINDS = [ActorKind("probe", ProbeActor, declared=any_name)]


async def ask_into(actor: Actor, outcome: dict[str, object], label: str,
                   message: object) -> None:
    """Ask `actor` and keep the answer, or the refusal, as `outcome[label]`."""
    try:
        outcome[label] = await actor.ask(message)
    except ProtocolError as error:
        outcome[label] = error


async def one_batch(actor: Actor, *asks: tuple[str, object]) -> dict[str, object]:
    """Ask `asks` (label, message) as one batch, behind a block; their answers by label."""
    release = trio.Event()
    outcome: dict[str, object] = {}
    ask = partial(ask_into, actor, outcome)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "block", Block(release))
        await trio.testing.wait_all_tasks_blocked()
        for label, message in asks:  # waiting behind the block: handled as one batch
            nursery.start_soon(ask, label, message)
            await trio.testing.wait_all_tasks_blocked()
        release.set()
    return outcome


async def fresh_state(store: MemoryEventStore, actor_id: str) -> dict:
    """The state a brand-new actor folds from the store alone."""
    async with open_directory(store, KINDS) as directory:
        return (await directory.get(actor_id)).snapshot()


async def test_crash_restarts_from_the_store_with_equal_state() -> None:
    store = MemoryEventStore()
    async with open_directory(store, KINDS, config=RuntimeConfig(snapshot_every=4)) as directory:
        actor = await directory.get("probe:a")
        other = await directory.get("probe:b")
        await other.ask(Add(7))
        for i in range(10):
            await actor.ask(Add(i))
        before = actor.snapshot()
        outcome = await one_batch(actor, ("crash", Crash()), ("queued", Add(100)))
        err = outcome["crash"]
        assert isinstance(err, ProtocolError)
        assert err.code == ErrorCode.ACTOR_RESTARTED
        assert err.message == ("probe:a crashed handling this request and was restarted "
                                     "from its stored state; the request may be retried")
        assert actor.statistics().restarts == 1
        assert outcome["queued"] == 11  # queued behind the crash: served after the restart
        assert actor.snapshot() == {"total": before["total"] + 100,
                                    "amounts": [*before["amounts"], 100]}
        assert (other.statistics().restarts, other.total) == (0, 7)
        assert await other.ask(Add(1)) == 2
    assert await fresh_state(store, "probe:a") == actor.snapshot()
    assert (await store.load_snapshot("probe:a")).rev == 8


async def test_a_crashed_handler_changes_nothing_and_its_batch_neighbours_survive() -> None:
    store = MemoryEventStore()
    async with open_directory(store, KINDS, config=ONE_BATCH) as directory:
        actor = await directory.get("probe:a")
        await actor.ask(Add(1))
        queue = SubscriberQueue(100)
        await actor.subscribe(queue, 1, request_id=5)
        outcome = await one_batch(actor, ("before", Add(2)),
                                  ("crash", Crash(after_commit=True)), ("after", Add(3)))
        crash = outcome.pop("crash")
        assert isinstance(crash, ProtocolError) and crash.code == ErrorCode.ACTOR_RESTARTED
        assert outcome == {"block": "released", "before": 2, "after": 3}
        assert (actor.total, actor.rev) == (6, 3)
        assert [e.data["amount"] for e in await store.read("probe:a")] == [1, 2, 3]
        frames = [await queue.get() for _ in range(2)]
        assert frames[0] == '{"id":5,"ok":true,"result":{"topic":"probe:a","rev":1}}'
        assert frames[1] == ('{"topic":"probe:a","rev":3,"kind":"events","data":['
                             '{"type":"added","amount":2},{"type":"added","amount":3}]}')
        assert actor.statistics().restarts == 1


async def test_one_append_per_batch() -> None:
    store = MemoryEventStore()
    async with open_directory(store, KINDS, config=ONE_BATCH) as directory:
        actor = await directory.get("probe:a")
        release = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(actor.ask, Block(release))
            await trio.testing.wait_all_tasks_blocked()
            for i in range(50):
                nursery.start_soon(actor.ask, Add(i))
            await trio.testing.wait_all_tasks_blocked()
            release.set()
        assert actor.total == sum(range(50))
        assert store.statistics() == StoreStatistics(appends=1, commits=1, events=50)


async def test_too_many_crashes_stop_the_actor_for_good() -> None:
    config = RuntimeConfig(max_restarts=2, restart_window=60)
    async with open_directory(MemoryEventStore(), KINDS, config=config) as directory:
        actor = await directory.get("probe:a")
        for _ in range(2):
            with pytest.raises(ProtocolError, match="crashed"):
                await actor.ask(Crash())
        with pytest.raises(ProtocolError, match=r"^probe:a has stopped$"):
            await actor.ask(Crash())  # the crash that spends the budget: no restart
        await trio.testing.wait_all_tasks_blocked()
        assert actor.stopped
        with pytest.raises(ProtocolError, match=r"^probe:a has stopped$") as err:
            await actor.ask(Add(1))
        assert err.value.code == ErrorCode.UNAVAILABLE
        assert [s.actor_id for s in directory.live()] == []
        again = await directory.get("probe:a")  # a later get starts a fresh one
        assert again is not actor and await again.ask(Add(1)) == 1


async def test_a_handler_crashing_after_durable_keeps_only_what_was_stored() -> None:
    """`durable` stores the batch so far (the handler's own event too) at once; a crash
    after it drops only what the handler committed since, as any crash does."""
    store = MemoryEventStore()
    async with open_directory(store, KINDS, config=ONE_BATCH) as directory:
        actor = await directory.get("probe:a")
        await actor.ask(Add(1))
        outcome = await one_batch(actor, ("before", Add(2)), ("durable", Durable(10)),
                                  ("after", Add(3)))
        crash = outcome.pop("durable")
        assert isinstance(crash, ProtocolError) and crash.code == ErrorCode.ACTOR_RESTARTED
        assert outcome == {"block": "released", "before": 2, "after": 4}
        assert [e.data["amount"] for e in await store.read("probe:a")] == [1, 2, 10, 3]
        assert (actor.total, actor.rev) == (16, 4)


class BrokenTidying(MemoryEventStore):
    """Snapshots and the forgetting of old receipts fail (counted)."""

    tried = 0

    async def save_snapshot(self, stream: str, rev: int, data: object) -> None:
        self.tried += 1
        raise OSError("disk full")

    async def forget_receipts(self, stream: str, upto: int) -> None:
        self.tried += 1
        raise OSError("disk full")


class BrokenReads(MemoryEventStore):
    async def read(self, stream: str, after: int = 0) -> list:
        raise OSError("unreadable")


class OneBrokenAppend(MemoryEventStore):
    """The first append raises as an event that cannot be encoded would."""

    broken = True

    async def append(self, *args: Any, **kwargs: Any) -> int:
        if self.broken:
            self.broken = False
            raise ValueError("Out of range float values are not JSON compliant")
        return await super().append(*args, **kwargs)


async def test_a_failing_append_answers_its_batch_at_once() -> None:
    store = OneBrokenAppend()
    async with open_directory(store, KINDS) as directory:
        actor = await directory.get("probe:a")
        with trio.fail_after(5), pytest.raises(ProtocolError) as err:
            await actor.ask(Add(1))  # answered now, not when the next message comes
        assert err.value.code == ErrorCode.ACTOR_RESTARTED
        assert actor.statistics().restarts == 1
        assert await actor.ask(Add(2)) == 1  # the first revision: nothing was stored
    assert await fresh_state(store, "probe:a") == {"total": 2, "amounts": [2]}


async def test_a_failing_snapshot_or_receipt_cleanup_is_logged_and_changes_nothing() -> None:
    store = BrokenTidying()
    config = RuntimeConfig(snapshot_every=1, receipt_window=1)
    async with open_directory(store, KINDS, config=config) as d:
        actor = await d.get("probe:a")
        assert [await actor.ask(Add(i)) for i in range(3)] == [1, 2, 3]
        assert actor.statistics().restarts == 0
        assert await store.load_snapshot("probe:a") is None
    assert store.tried == 3 + 2  # a snapshot each revision, a cleanup past the window


async def test_a_snapshot_that_cannot_be_restored_is_skipped_for_the_whole_stream() -> None:
    """A snapshot only shortens loading: one the actor cannot read (another layout) leaves
    the load to fold every event, and the next batch saves a readable one."""
    store = MemoryEventStore()
    config = RuntimeConfig(snapshot_every=4)
    async with open_directory(store, KINDS, config=config) as directory:
        actor = await directory.get("probe:a")
        for i in range(6):
            await actor.ask(Add(i))
        assert (await store.load_snapshot("probe:a")).rev == 4
    await store.save_snapshot("probe:a", 4, {"layout": 2})
    async with open_directory(store, KINDS, config=config) as directory:
        actor = await directory.get("probe:a")
        assert (actor.rev, actor.snapshot()) == (6, {"total": 15, "amounts": [0, 1, 2, 3, 4, 5]})
        assert await actor.ask(Add(6)) == 7
    assert await store.load_snapshot("probe:a") == Snapshot(7, {"total": 21,
                                                               "amounts": list(range(7))})


async def test_a_world_that_cannot_be_loaded_is_unavailable() -> None:
    async with open_directory(BrokenReads(), KINDS) as directory:
        with pytest.raises(ProtocolError, match=r"^probe:a could not be loaded from the "
                                                r"store$") as err:
            await directory.get("probe:a")
        assert err.value.code == ErrorCode.UNAVAILABLE
        assert directory.live() == []
