"""The directory: ids to live actors, started on demand, created by kind."""

from __future__ import annotations

import pytest
import trio

from actors.directory import ActorKind, open_directory
from actors.store import MemoryEventStore
from protocol.errors import ErrorCode, ProtocolError
from tests.runtime.counter import Add, CounterActor


def counting_factory(calls: list[str]):
    def factory(actor_id, context):
        calls.append(actor_id)
        return CounterActor(actor_id, context)
    return factory


async def test_get_starts_an_existing_world_once_even_when_asked_concurrently() -> None:
    store = MemoryEventStore()
    await store.append("counter:a", 0, [{"type": "added", "amount": 4}])
    calls: list[str] = []
    async with open_directory(store, [ActorKind("counter", counting_factory(calls))]) as directory:
        found: list[object] = []

        async def get() -> None:
            found.append(await directory.get("counter:a"))

        async with trio.open_nursery() as nursery:
            for _ in range(5):
                nursery.start_soon(get)
        assert calls == ["counter:a"]
        assert len({id(a) for a in found}) == 1
        assert found[0].total == 4


@pytest.mark.parametrize(("actor_id", "code", "message"), [
    ("nope:a", ErrorCode.UNKNOWN_ACTOR, "there is no world kind 'nope'"),
    ("counter:missing", ErrorCode.UNKNOWN_ACTOR, "there is no world 'counter:missing'"),
    ("counter", ErrorCode.BAD_REQUEST, "'counter' is not an actor id 'kind:name'"),
])
async def test_get_refuses_unknown_ids(actor_id: str, code: ErrorCode, message: str) -> None:
    async with open_directory(MemoryEventStore(), [ActorKind("counter", CounterActor)]) as d:
        with pytest.raises(ProtocolError) as err:
            await d.get(actor_id)
        assert (err.value.code, err.value.message) == (code, message)
        assert d.live() == []


async def test_create_writes_the_first_events_and_refuses_a_second_time() -> None:
    store = MemoryEventStore()
    async with open_directory(store, [ActorKind("counter", CounterActor)]) as directory:
        actor = await directory.create("counter:new", {})
        assert actor.rev == 1 and await actor.ask(Add(2)) == 2
        with pytest.raises(ProtocolError, match=r"^the world 'counter:new' exists$") as err:
            await directory.create("counter:new", {})
        assert err.value.code == ErrorCode.ALREADY_EXISTS
        with pytest.raises(ProtocolError, match=r"^a counter world takes no params$"):
            await directory.create("counter:other", {"size": 3})
        assert await store.streams() == {"counter:new": 2}
        assert [s.actor_id for s in directory.live()] == ["counter:new"]


async def test_autostart_names_are_the_only_ones_started_without_a_stream() -> None:
    kinds = [ActorKind("counter", CounterActor, autostart=frozenset({"main"}))]
    async with open_directory(MemoryEventStore(), kinds) as directory:
        assert (await directory.get("counter:main")).rev == 0
        with pytest.raises(ProtocolError, match=r"^there is no world 'counter:other'$"):
            await directory.get("counter:other")


async def test_idle_actors_unload_and_come_back_from_the_store(
        autojump_clock: trio.abc.Clock) -> None:
    from actors.runtime import RuntimeConfig
    from actors.subscriber import SubscriberQueue

    store = MemoryEventStore()
    config = RuntimeConfig(idle_timeout=60)
    kinds = [ActorKind("counter", CounterActor, autostart=True)]
    async with open_directory(store, kinds, config=config) as directory:
        busy, watched = await directory.get("counter:busy"), await directory.get("counter:w")
        await busy.ask(Add(5))
        queue = SubscriberQueue(10)
        await watched.subscribe(queue, None, request_id=1)
        await trio.sleep(59)
        await busy.ask(Add(1))  # activity restarts the idle clock
        await trio.sleep(59)
        assert [s.actor_id for s in directory.live()] == ["counter:busy", "counter:w"]
        await trio.sleep(2)
        assert busy.stopped and not watched.stopped  # a subscriber keeps an actor loaded
        assert [s.actor_id for s in directory.live()] == ["counter:w"]
        again = await directory.get("counter:busy")
        assert again is not busy and (again.total, again.rev) == (6, 2)
        queue.close()  # the subscriber's connection went away
        await trio.sleep(61)
        assert watched.stopped
