"""The directory: ids to live actors, started on demand, created by kind."""

from __future__ import annotations

import threading

import pytest
import trio
import trio.lowlevel
import trio.testing

from actors.runtime import Call, RuntimeConfig
from actors.runtime.directory import ActorKind, any_name, open_directory
from actors.runtime.mailbox import Pending
from actors.runtime.subscriber import SubscriberQueue
from actors.store import MemoryEventStore
from protocol.errors import ErrorCode, ProtocolError
from tests.runtime.probe import (
    ONE_BATCH,
    Add,
    Block,
    Create,
    Defer,
    Offload,
    ProbeActor,
    Settle,
)


def counting_factory(calls: list[str]):
    def factory(actor_id, context):
        calls.append(actor_id)
        return ProbeActor(actor_id, context)
    return factory


async def test_get_starts_an_existing_world_once_even_when_asked_concurrently() -> None:
    store = MemoryEventStore()
    await store.append("probe:a", 0, [{"type": "added", "amount": 4}])
    calls: list[str] = []
    async with open_directory(store, [ActorKind("probe", counting_factory(calls))]) as directory:
        found: list[object] = []

        async def get() -> None:
            found.append(await directory.get("probe:a"))

        async with trio.open_nursery() as nursery:
            for _ in range(5):
                nursery.start_soon(get)
        assert calls == ["probe:a"]
        assert len({id(a) for a in found}) == 1
        assert found[0].total == 4


@pytest.mark.parametrize(("actor_id", "code", "message"), [
    ("nope:a", ErrorCode.UNKNOWN_ACTOR, "there is no world kind 'nope'"),
    ("probe:missing", ErrorCode.UNKNOWN_ACTOR, "there is no world 'probe:missing'"),
    ("probe", ErrorCode.BAD_REQUEST, "'probe' is not an actor id 'kind:name'"),
])
async def test_get_refuses_unknown_ids(actor_id: str, code: ErrorCode, message: str) -> None:
    async with open_directory(MemoryEventStore(), [ActorKind("probe", ProbeActor)]) as d:
        with pytest.raises(ProtocolError) as err:
            await d.get(actor_id)
        assert (err.value.code, err.value.message) == (code, message)
        assert d.live() == []


def _create(refuse: bool = False) -> Call:
    return Call("probe.create", Create(refuse), "agent", "ann")


async def test_create_writes_the_first_events_and_refuses_a_second_time() -> None:
    store = MemoryEventStore()
    kinds = [ActorKind("probe", ProbeActor, create_op="probe.create")]
    async with open_directory(store, kinds) as directory:
        assert await directory.ask("probe:new", _create()) == 1
        actor = await directory.get("probe:new")
        assert actor.rev == 1 and await actor.ask(Add(2)) == 2
        with pytest.raises(ProtocolError) as err:
            await directory.ask("probe:new", _create())
        assert err.value.code == ErrorCode.ALREADY_EXISTS
        assert await store.streams() == {"probe:new": 2}
        assert [s.actor_id for s in directory.live()] == ["probe:new"]


async def test_a_refused_create_leaves_nothing_and_other_calls_start_nothing() -> None:
    store = MemoryEventStore()
    kinds = [ActorKind("probe", ProbeActor, create_op="probe.create")]
    async with open_directory(store, kinds) as directory:
        with pytest.raises(ProtocolError) as err:
            await directory.ask("probe:nope", _create(refuse=True))
        assert err.value.code == ErrorCode.BAD_REQUEST
        for _ in range(3):
            with pytest.raises(ProtocolError, match=r"^there is no world 'probe:nope'; probe\.create creates it$"):
                await directory.ask("probe:nope", Add(1))
        await trio.lowlevel.checkpoint()  # the refused one has finished stopping
        assert await store.streams() == {} and directory.live() == []
        assert directory.alive("probe:nope") is None
        assert await directory.ask("probe:nope", _create()) == 1  # the name is still free


async def test_declared_names_are_the_only_ones_started_without_a_stream() -> None:
    kinds = [ActorKind("probe", ProbeActor, declared=lambda name, _t: name == "main")]
    async with open_directory(MemoryEventStore(), kinds) as directory:
        assert (await directory.get("probe:main")).rev == 0
        with pytest.raises(ProtocolError, match=r"^there is no world 'probe:other'$"):
            await directory.get("probe:other")


async def test_idle_actors_unload_and_come_back_from_the_store(
        autojump_clock: trio.abc.Clock) -> None:
    from actors.runtime import RuntimeConfig
    store = MemoryEventStore()
    config = RuntimeConfig(idle_timeout=60)
    kinds = [ActorKind("probe", ProbeActor, declared=any_name)]
    async with open_directory(store, kinds, config=config) as directory:
        busy, watched = await directory.get("probe:busy"), await directory.get("probe:w")
        await busy.ask(Add(5))
        queue = SubscriberQueue(10)
        await watched.subscribe(queue, None, request_id=1)
        await trio.sleep(59)
        await busy.ask(Add(1))  # activity restarts the idle clock
        await trio.sleep(59)
        assert [s.actor_id for s in directory.live()] == ["probe:busy", "probe:w"]
        await trio.sleep(2)
        assert busy.stopped and not watched.stopped  # a subscriber keeps an actor loaded
        assert [s.actor_id for s in directory.live()] == ["probe:w"]
        again = await directory.get("probe:busy")
        assert again is not busy and (again.total, again.rev) == (6, 2)
        queue.close()  # the subscriber's connection went away
        await trio.sleep(61)
        assert watched.stopped


async def test_a_world_loads_again_only_once_its_stopped_actor_has_ended() -> None:
    """Unloaded (the owner's console) while a handler awaits, an actor still appends its
    batch when the handler returns: the world's next actor must replay that batch, not
    serve the world beside it from the state before."""
    store = MemoryEventStore()
    kinds = [ActorKind("probe", ProbeActor, declared=any_name)]
    async with open_directory(store, kinds, config=ONE_BATCH) as directory:
        old = await directory.get("probe:a")
        release = trio.Event()
        added, blocked = Pending(), Pending()
        old.send(Add(5), added)  # one batch: folded, then the handler below awaits
        old.send(Block(release), blocked)
        await trio.testing.wait_all_tasks_blocked()
        assert directory.evict("probe:a")
        again: list[ProbeActor] = []

        async def load() -> None:
            again.append(await directory.get("probe:a"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(load)
            await trio.testing.wait_all_tasks_blocked()
            release.set()
        assert added.value == 1  # acknowledged: durable
        assert again[0] is not old and again[0].total == 5
    assert [e.data["amount"] for e in await store.read("probe:a")] == [5]


async def test_past_max_live_worlds_the_world_used_least_lately_that_nothing_holds_unloads(
        autojump_clock: trio.abc.Clock) -> None:
    store = MemoryEventStore()
    kinds = [ActorKind("probe", ProbeActor, declared=any_name, create_op="probe.create")]
    async with open_directory(store, kinds, max_live_worlds=3) as directory:
        def live() -> list[str]:
            return [s.actor_id for s in directory.live()]

        a = await directory.get("probe:a")
        release, blocked = trio.Event(), Pending()
        a.send(Block(release), blocked)  # a request in hand holds it
        for name in "bc":
            await trio.sleep(1)
            await directory.ask(f"probe:{name}", Add(ord(name)))
        await trio.sleep(1)
        d = await directory.get("probe:d")  # b, idle and used least lately, goes
        assert live() == ["probe:a", "probe:c", "probe:d"]
        queue = SubscriberQueue(10)
        await directory.subscribe("probe:c", queue, None, request_id=1)  # a subscriber holds c
        owed = Pending()
        d.send(Defer(), owed)  # ... and an answer owed holds d
        await trio.testing.wait_all_tasks_blocked()
        full = (r"^the server's live worlds are at their most \(3\), and each is followed "
                r"or answering a request; retry once one is not \(a world nobody follows is "
                r"unloaded to make room\)$")
        for refused in (directory.get("probe:b"), directory.ask("probe:e", _create())):
            with pytest.raises(ProtocolError, match=full) as err:
                await refused
            assert err.value.code == ErrorCode.OVER_BUDGET
            assert err.value.detail == {"budget": "max_live_worlds", "limit": 3}
        assert live() == ["probe:a", "probe:c", "probe:d"]
        assert await store.streams() == {"probe:b": 1, "probe:c": 1}  # e was not created
        release.set()
        d.tell(Settle())
        await trio.testing.wait_all_tasks_blocked()
        assert (blocked.value, owed.value) == ("released", "settled")
        again = await directory.get("probe:b")  # a is the one used least lately now
        assert live() == ["probe:b", "probe:c", "probe:d"]
        assert (again.total, again.rev) == (ord("b"), 1)
        queue.close()


async def test_worlds_loading_at_once_count_against_max_live_worlds() -> None:
    store = MemoryEventStore()
    for name in "bcd":
        await store.append(f"probe:{name}", 0, [{"type": "added", "amount": 1}])
    kinds = [ActorKind("probe", ProbeActor, declared=any_name)]
    async with open_directory(store, kinds, max_live_worlds=2) as directory:
        a = await directory.get("probe:a")
        release = trio.Event()
        a.send(Block(release), Pending())  # a stays live
        codes: list[str] = []

        async def load(actor_id: str) -> None:
            try:
                await directory.get(actor_id)
                codes.append("loaded")
            except ProtocolError as error:
                codes.append(error.code.value)

        async with trio.open_nursery() as nursery:
            for name in "bcd":
                nursery.start_soon(load, f"probe:{name}")
        # One takes the free place; a world just loaded, with no message handled yet (its
        # caller's not yet posted), is not unloaded for the next.
        assert sorted(codes) == ["loaded", "over_budget", "over_budget"]
        assert len(directory.live()) == 2
        release.set()


async def test_a_world_just_loaded_for_a_message_is_not_unloaded_before_it_gets_it() -> None:
    """Two asks race for the one free place: each is answered or refused `over_budget`,
    never `unavailable` (its world unloaded for the other between its load and its
    message), whichever turn the second starts at."""
    store = MemoryEventStore()
    for name in "bc":  # stored: loading them reads the store
        await store.append(f"probe:{name}", 0, [{"type": "added", "amount": 1}])
    kinds = [ActorKind("probe", ProbeActor, declared=any_name)]
    async with open_directory(store, kinds, max_live_worlds=2) as directory:
        a = await directory.get("probe:a")
        release = trio.Event()
        a.send(Block(release), Pending())  # a stays live: one place is left

        async def ask(name: str, turns: int, answers: dict[str, object]) -> None:
            for _ in range(turns):
                await trio.lowlevel.checkpoint()
            try:
                await directory.ask(f"probe:{name}", Add(1))
                answers[name] = "added"
            except ProtocolError as error:
                answers[name] = error.code

        for delay in range(8):
            answers: dict[str, object] = {}
            async with trio.open_nursery() as nursery:
                nursery.start_soon(ask, "b", 0, answers)
                nursery.start_soon(ask, "c", delay, answers)
            # The first in adds; the other is refused, or loads once that add is done
            # (the first world then goes to make room).
            assert len(answers) == 2 and "added" in answers.values(), (delay, answers)
            assert set(answers.values()) <= {"added", ErrorCode.OVER_BUDGET}, (delay, answers)
            for name in "bc":  # the next round starts from a alone again
                if (actor := directory.alive(f"probe:{name}")) is not None:
                    actor.stop()
            await trio.sleep(0.01)
        release.set()


async def test_a_world_running_offloaded_work_is_not_unloaded_to_make_room() -> None:
    """Its work's result would be lost with it (a field's generation, a lab's validation)."""
    store = MemoryEventStore()
    kinds = [ActorKind("probe", ProbeActor, declared=any_name)]
    gate = threading.Event()
    async with open_directory(store, kinds, max_live_worlds=1) as directory:
        b = await directory.get("probe:b")
        assert await directory.ask("probe:b", Offload(gate)) == "offloading"
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(ProtocolError) as refused:
            await directory.get("probe:c")
        assert refused.value.detail == {"budget": "max_live_worlds", "limit": 1}
        gate.set()
        with trio.fail_after(5):
            while "offloaded" not in b.notes:
                await trio.sleep(0.01)
        await directory.get("probe:c")  # b's work is in: it goes now
        assert b.stopped and [s.actor_id for s in directory.live()] == ["probe:c"]


async def noted(actor: ProbeActor, note: str) -> None:
    """Once `actor` noted `note` (its offloaded work ended in a worker thread)."""
    with trio.fail_after(5):
        while note not in actor.notes:
            await trio.sleep(0.01)


async def test_work_waiting_on_a_network_peer_never_holds_the_cpu_workers_slot() -> None:
    """A model's reply takes seconds (`offload(io=True)`): CPU work offloaded meanwhile runs
    at once, and the waits are bounded by their own limiter."""
    store = MemoryEventStore()
    kinds = [ActorKind("probe", ProbeActor, declared=any_name)]
    config = RuntimeConfig(offload_threads=1, io_threads=1)
    model, done = threading.Event(), threading.Event()
    done.set()
    async with open_directory(store, kinds, config=config) as directory:
        a, b, c = [await directory.get(f"probe:{name}") for name in "abc"]
        await directory.ask("probe:a", Offload(model, io=True))  # the model thinks
        await directory.ask("probe:b", Offload(done))  # CPU work: not behind it
        await noted(b, "offloaded")
        await directory.ask("probe:c", Offload(done, io=True))  # the next wait: behind it
        await trio.testing.wait_all_tasks_blocked()
        assert a.notes == c.notes == []
        assert c.context.io_limiter.statistics().tasks_waiting == 1
        model.set()
        await noted(a, "offloaded")
        await noted(c, "offloaded")


async def test_house_worlds_are_outside_max_live_worlds() -> None:
    """A resident kind's world (the lobby, the owner's console) is neither counted nor
    unloaded to make room, and loads when every other place is taken."""
    store = MemoryEventStore()
    kinds = [ActorKind("probe", ProbeActor, declared=any_name),
             ActorKind("house", ProbeActor, declared=any_name, resident=True)]
    async with open_directory(store, kinds, max_live_worlds=1) as directory:
        await directory.ask("house:main", Add(1))  # handled once: unloadable if counted
        await directory.ask("probe:a", Add(1))
        await directory.ask("probe:b", Add(1))  # a goes, the house stays
        queue = SubscriberQueue(10)
        await directory.subscribe("probe:b", queue, None, request_id=1)  # b is held
        assert [s.actor_id for s in directory.live()] == ["house:main", "probe:b"]
        await directory.ask("house:other", Add(1))  # loads past the bound
        assert len(directory.live()) == 3
        queue.close()


class _Spectator(SubscriberQueue):
    """A subscriber that lets its worlds go to make room (an anonymous client's, whose
    client follows `footprint` worlds)."""

    def __init__(self, footprint: int) -> None:
        super().__init__(10)
        self.footprint = footprint

    def frames(self) -> list[str]:
        out = []
        while (frame := self.get_nowait()) is not None:
            out.append(frame)
        return out


class _Caller(Pending):
    """An ask's answer slot whose client has a footprint (an anonymous one's)."""

    def __init__(self, footprint: int | None) -> None:
        super().__init__()
        self.footprint = footprint


async def test_past_max_live_worlds_a_world_whose_followers_let_it_go_unloads_heaviest_first(
        autojump_clock: trio.abc.Clock) -> None:
    """When every live world is followed, one whose every subscriber lets it go (an
    anonymous spectator's) is unloaded to make room: that whose lightest follower follows
    the most, its subscribers told `resync` `actor_stopped`; a subscriber that holds its
    world (a token holder's) keeps it live. A caller with a footprint of its own unloads
    only a world whose followers all follow more than it does."""
    store = MemoryEventStore()
    kinds = [ActorKind("probe", ProbeActor, declared=any_name)]
    async with open_directory(store, kinds, max_live_worlds=3) as directory:
        def live() -> list[str]:
            return [s.actor_id for s in directory.live()]

        heavy, light, holder = _Spectator(64), _Spectator(2), SubscriberQueue(10)
        for name, queues in (("a", [heavy]), ("b", [heavy, light]), ("c", [holder, heavy])):
            await directory.ask(f"probe:{name}", Add(1))
            for queue in queues:
                await directory.subscribe(f"probe:{name}", queue, None, request_id=1)
            await trio.sleep(1)
        for queue in (heavy, light):
            queue.frames()
        # A caller following as much as the heaviest follower unloads nothing.
        for footprint in (64, 65):
            with pytest.raises(ProtocolError) as refused:
                await directory.ask("probe:d", Add(1), answer=_Caller(footprint))
            assert refused.value.detail == {"budget": "max_live_worlds", "limit": 3}
        assert live() == ["probe:a", "probe:b", "probe:c"]
        # A lighter one unloads a: only heavy follows it (b has a light follower too).
        await directory.ask("probe:d", Add(1), answer=_Caller(3))
        assert live() == ["probe:b", "probe:c", "probe:d"]
        assert heavy.frames() == [('{"topic":"probe:a","rev":1,"kind":"resync",'
                                   '"data":{"reason":"actor_stopped"}}')]
        await directory.subscribe("probe:d", heavy, None, request_id=2)
        await directory.ask("probe:x", Add(1), answer=_Caller(2))  # d goes: 64 > 2
        assert live() == ["probe:b", "probe:c", "probe:x"]
        assert any("actor_stopped" in frame for frame in heavy.frames())
        await directory.subscribe("probe:x", holder, None, request_id=3)
        with pytest.raises(ProtocolError):  # b's light follower follows 2: not more
            await directory.ask("probe:y", Add(1), answer=_Caller(2))
        assert light.frames() == []
        # The owner (no footprint) unloads b: c and x are held by a subscriber that holds.
        await directory.ask("probe:y", Add(1))
        assert live() == ["probe:c", "probe:x", "probe:y"]
        assert light.frames() == [('{"topic":"probe:b","rev":1,"kind":"resync",'
                                   '"data":{"reason":"actor_stopped"}}')]
        await directory.ask("probe:a", Add(1))  # loads again, as it was (y goes)
        assert directory.alive("probe:a").total == 2
        for queue in (heavy, light, holder):
            queue.close()
