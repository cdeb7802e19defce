"""Actor basics: ask/tell, one message at a time, timeouts, a bounded mailbox, timers."""

from __future__ import annotations

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from actors.runtime import RuntimeConfig
from actors.runtime.directory import ActorKind, any_name, open_directory
from actors.runtime.mailbox import Pending
from actors.store import MemoryEventStore
from protocol.errors import ErrorCode, ProtocolError
from tests.runtime.probe import Add, Block, Note, ProbeActor, Sleep, Spin

KINDS = [ActorKind("probe", ProbeActor, declared=any_name)]


async def test_ask_commits_durably_and_returns_the_revision() -> None:
    store = MemoryEventStore()
    async with open_directory(store, KINDS) as directory:
        actor = await directory.get("probe:a")
        assert await actor.ask(Add(2)) == 1
        assert await actor.ask(Add(3)) == 2
        assert actor.total == 5 and actor.rev == 2
        assert [e.data for e in await store.read("probe:a")] == [
            {"type": "added", "amount": 2}, {"type": "added", "amount": 3}]
        stats = actor.statistics()
        assert (stats.rev, stats.handled, stats.restarts) == (2, 2, 0)


async def test_messages_are_handled_one_at_a_time() -> None:
    ProbeActor.active = ProbeActor.peak_active = 0
    async with open_directory(MemoryEventStore(), KINDS) as directory:
        actor = await directory.get("probe:a")
        async with trio.open_nursery() as nursery:
            for _ in range(8):
                nursery.start_soon(actor.ask, Sleep(0.01))
            for i in range(8):
                nursery.start_soon(actor.ask, Add(i))
        assert ProbeActor.peak_active == 1
        assert actor.total == sum(range(8))


async def test_a_long_batch_yields_to_the_other_tasks() -> None:
    config = RuntimeConfig(batch_seconds=0.001)
    async with open_directory(MemoryEventStore(), KINDS, config=config) as directory:
        actor = await directory.get("probe:a")
        release = trio.Event()
        seen: list[int] = []  # messages handled, each time this task got a turn
        async with trio.open_nursery() as nursery:
            nursery.start_soon(actor.ask, Block(release))
            await wait_all_tasks_blocked()
            for _ in range(10):
                nursery.start_soon(actor.ask, Spin(0.0005))
            await wait_all_tasks_blocked()  # all ten wait in the mailbox
            release.set()
            while actor.statistics().handled < 11:
                seen.append(actor.statistics().handled)
                await trio.lowlevel.checkpoint()
        # Half a millisecond each against a 1 ms batch: two or three a batch, and this
        # task got turns while they were handled (one batch of all ten gives it none).
        assert len([n for n in seen if 1 < n < 11]) >= 2, seen


async def test_ask_times_out_and_the_actor_goes_on(autojump_clock: trio.abc.Clock) -> None:
    async with open_directory(MemoryEventStore(), KINDS) as directory:
        actor = await directory.get("probe:a")
        with pytest.raises(ProtocolError, match=r"^probe:a did not answer within 0\.5 s$") as err:
            await actor.ask(Sleep(10), timeout=0.5)
        assert err.value.code == ErrorCode.TIMEOUT
        assert await actor.ask(Add(1), timeout=20) == 1


async def test_a_full_mailbox_refuses_with_overloaded() -> None:
    config = RuntimeConfig(mailbox_size=2)
    async with open_directory(MemoryEventStore(), KINDS, config=config) as directory:
        actor = await directory.get("probe:a")
        release = trio.Event()
        results: dict[object, object] = {}

        async def ask(message: object) -> None:
            results[message] = await actor.ask(message)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, Block(release))
            await wait_all_tasks_blocked()  # the actor is inside Block
            nursery.start_soon(ask, Add(1))
            nursery.start_soon(ask, Add(2))
            await wait_all_tasks_blocked()
            assert actor.statistics().mailbox_depth == 2
            with pytest.raises(ProtocolError, match=r"^the mailbox of probe:a is full$") as err:
                await actor.ask(Add(3))
            assert err.value.code == ErrorCode.OVERLOADED
            with pytest.raises(ProtocolError):
                actor.tell(Note("no room"))
            release.set()
        assert results[Block(release)] == "released"
        assert sorted([results[Add(1)], results[Add(2)]]) == [1, 2]  # revisions, either order
        assert actor.statistics().mailbox_peak == 2


async def test_tell_and_timers_post_to_the_own_mailbox(autojump_clock: trio.abc.Clock) -> None:
    async with open_directory(MemoryEventStore(), KINDS) as directory:
        actor = await directory.get("probe:a")
        actor.tell(Note("told"))
        await actor.ask(Add(0))  # handled after the tell: the mailbox is FIFO
        assert actor.notes == ["told"]
        actor.after(5, Note("once"))
        ticker = actor.every(2, Note("tick"))
        await trio.sleep(7)
        ticker.cancel()
        await trio.sleep(10)
        await actor.ask(Add(0))
        assert actor.notes == ["told", "tick", "tick", "once", "tick"]


async def test_a_timer_waiting_for_room_ends_quietly_when_the_actor_is_stopped() -> None:
    """Stopped from outside (the owner's console, a lost lease) while its timer waits for
    room in the full mailbox: the timer ends, and the directory's other actors go on."""
    config = RuntimeConfig(mailbox_size=1)
    async with open_directory(MemoryEventStore(), KINDS, config=config) as directory:
        actor, other = await directory.get("probe:a"), await directory.get("probe:b")
        release = trio.Event()
        blocked = Pending()
        actor.send(Block(release), blocked)
        await wait_all_tasks_blocked()  # the actor is inside Block
        actor.tell(Note("fills the mailbox"))
        actor.after(0, Note("waits for room"))
        await wait_all_tasks_blocked()
        actor.stop()
        release.set()
        await actor.ended.wait()
        assert blocked.value == "released" and actor.notes == []
        assert await other.ask(Add(1)) == 1
