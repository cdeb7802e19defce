"""Request ids: a retried write is answered with its first result and applied once, across
batches, restarts and reloads (its receipt is stored with its events), for the caller who
sent it (another caller's write with the same id is its own); a fenced append stops the
actor without applying anything; a placement redelivers what a stopped actor did not
apply."""

from __future__ import annotations

import trio

from actors import counter
from actors.runtime import Call, RuntimeConfig
from actors.runtime.directory import ActorKind, open_directory
from actors.runtime.mailbox import ActorStopped, Pending
from actors.store import MemoryEventStore, Receipt
from protocol.errors import ErrorCode
from protocol.ops.counter import AddArgs, CreateArgs
from tests.runtime.probe import ONE_BATCH

KINDS = [ActorKind.of(counter.WORLD)]
WORLD = "counter:c"


def add(amount: int, request_id: str | None = None, caller: str = "ann") -> Call:
    return Call("counter.add", AddArgs(amount), "agent", caller, request_id)


async def test_a_retry_gets_the_first_result_and_changes_nothing() -> None:
    store = MemoryEventStore()
    async with open_directory(store, KINDS) as d:
        await d.ask(WORLD, Call("counter.create", CreateArgs(), "agent", "ann"))
        first = await d.ask(WORLD, add(5, "r1"))
        await d.ask(WORLD, add(1))
        again = await d.ask(WORLD, add(5, "r1"))
        assert again == {"total": 5, "adds": 1, "revision": 2}  # the first reply, as JSON
        assert (first.total, first.revision) == (5, 2)
        assert (await d.ask(WORLD, Call("counter.get", None, "agent", "ann"))).total == 6
    assert await store.receipts(WORLD) == [Receipt(2, "ann", "r1", {"total": 5, "adds": 1,
                                                                     "revision": 2})]
    assert len(await store.read(WORLD)) == 3


async def test_retries_in_the_same_batch_apply_once() -> None:
    store = MemoryEventStore()
    async with open_directory(store, KINDS, config=ONE_BATCH) as d:
        await d.ask(WORLD, Call("counter.create", CreateArgs(), "agent", "ann"))
        actor = await d.get(WORLD)
        answers = [Pending() for _ in range(4)]
        for pending in answers:  # all in the mailbox before the actor runs: one batch
            actor.send(add(7, "same"), pending)
        for pending in answers:
            await pending.done.wait()
        revisions = {p.value.revision if hasattr(p.value, "revision") else p.value["revision"]
                     for p in answers}
        assert revisions == {2}
    assert [e.data.get("amount") for e in await store.read(WORLD)] == [None, 7]


async def test_receipts_survive_a_reload_and_are_forgotten_past_the_window() -> None:
    store = MemoryEventStore()
    async with open_directory(store, KINDS, config=RuntimeConfig(receipt_window=3)) as d:
        await d.ask(WORLD, Call("counter.create", CreateArgs(), "agent", "ann"))
        await d.ask(WORLD, add(1, "old"))
    async with open_directory(store, KINDS, config=RuntimeConfig(receipt_window=3)) as d:
        assert await d.ask(WORLD, add(1, "old")) == {"total": 1, "adds": 1, "revision": 2}
        for k in range(3):
            await d.ask(WORLD, add(10, f"new{k}"))
        # 3 revisions later "old" is out of the window: the same id is a new write now
        assert (await d.ask(WORLD, add(1, "old"))).revision == 6
    async with open_directory(store, KINDS, config=RuntimeConfig(receipt_window=3)) as d:
        assert await d.ask(WORLD, add(10, "new2")) == {"total": 31, "adds": 4, "revision": 5}
        assert (await d.ask(WORLD, add(10, "new0"))).revision == 7  # out of the window


async def test_the_store_keeps_only_the_receipts_a_load_reads() -> None:
    """Every `snapshot_every` revisions the world forgets the stored receipts out of its
    window (no load reads them): at most window + period stay, and retries in the window
    are still recognised after a reload."""
    store = MemoryEventStore()
    config = RuntimeConfig(receipt_window=4, snapshot_every=3)
    async with open_directory(store, KINDS, config=config) as d:
        await d.ask(WORLD, Call("counter.create", CreateArgs(), "agent", "ann"))
        for k in range(40):
            await d.ask(WORLD, add(1, f"r{k}"))
    stored = [r.rev for r in await store.receipts(WORLD)]
    assert stored == list(range(stored[0], 42)) and 4 <= len(stored) <= 4 + 3
    async with open_directory(store, KINDS, config=config) as d:
        assert await d.ask(WORLD, add(1, "r39")) == {"total": 40, "adds": 40, "revision": 41}
        assert await d.ask(WORLD, add(1, "r36")) == {"total": 37, "adds": 37, "revision": 38}
        assert (await d.ask(WORLD, add(1, "r35"))).revision == 42  # out of the window


class _CountedForgets(MemoryEventStore):
    forgets = 0

    async def forget_receipts(self, stream: str, upto: int) -> None:
        self.forgets += 1
        await super().forget_receipts(stream, upto)


async def test_a_world_that_stores_no_receipts_stops_asking_to_forget_them() -> None:
    """The first period past the window forgets what a load may have read past; then only
    a period in which receipts were stored asks again (each ask is a store transaction)."""
    store = _CountedForgets()
    config = RuntimeConfig(receipt_window=4, snapshot_every=3)
    async with open_directory(store, KINDS, config=config) as d:
        await d.ask(WORLD, Call("counter.create", CreateArgs(), "agent", "ann"))
        for _ in range(30):
            await d.ask(WORLD, add(1))
        assert store.forgets == 1
        await d.ask(WORLD, add(1, "r"))
        for _ in range(6):
            await d.ask(WORLD, add(1))
        assert store.forgets == 2


async def test_a_request_id_is_its_caller_s_own_before_and_after_a_reload() -> None:
    store = MemoryEventStore()
    async with open_directory(store, KINDS) as d:
        await d.ask(WORLD, Call("counter.create", CreateArgs(), "agent", "ann"))
        ann = await d.ask(WORLD, add(5, "1"))
        bob = await d.ask(WORLD, add(3, "1", caller="bob"))  # bob's own write, not ann's reply
        assert ((ann.total, ann.revision), (bob.total, bob.revision)) == ((5, 2), (8, 3))
        assert await d.ask(WORLD, add(3, "1", caller="bob")) == {"total": 8, "adds": 2,
                                                                  "revision": 3}
    async with open_directory(store, KINDS) as d:  # reloaded: the receipts come from the store
        assert await d.ask(WORLD, add(5, "1")) == {"total": 5, "adds": 1, "revision": 2}
        assert await d.ask(WORLD, add(3, "1", caller="bob")) == {"total": 8, "adds": 2,
                                                                  "revision": 3}
        assert (await d.ask(WORLD, add(2, "1", caller="cy"))).revision == 4
    assert [(r.caller, r.request_id) for r in await store.receipts(WORLD)] == \
        [("ann", "1"), ("bob", "1"), ("cy", "1")]
    assert [e.data.get("amount") for e in await store.read(WORLD)] == [None, 5, 3, 2]


async def test_a_fenced_append_stops_the_actor_and_applies_nothing() -> None:
    store = MemoryEventStore()
    other = MemoryEventStore(sharing=store)
    async with open_directory(store, KINDS) as d:
        await store.claim(WORLD)
        await d.ask(WORLD, Call("counter.create", CreateArgs(), "agent", "ann"))
        actor = await d.get(WORLD)
        await other.claim(WORLD)  # another process took the world over
        try:
            await d.ask(WORLD, add(3, "z"))
        except ActorStopped as error:
            assert error.code == ErrorCode.UNAVAILABLE
            assert "moved to another process" in error.message
        else:
            raise AssertionError("the fenced write was answered")
        with trio.fail_after(5):
            while not actor.stopped:
                await trio.sleep(0.01)
    assert [e.rev for e in await store.read(WORLD)] == [1]
    assert await store.receipts(WORLD) == []
    assert store.statistics().fenced == 1
