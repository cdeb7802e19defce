"""A message refused because its actor stopped before applying it is delivered again through
the directory (`Rerouting`), for the same caller: loaded or forwarded as that caller's own
message would be."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from actors.runtime.directory import ActorKind, any_name, open_directory
from actors.runtime.mailbox import Answer, Call, Pending, wait_answer
from actors.runtime.subscriber import SubscriberQueue
from actors.store import MemoryEventStore
from protocol.errors import ProtocolError
from tests.runtime.probe import Add, Block, Create, ProbeActor


class _Cluster:
    """A placement: every world lives here, but those in `moved`, which it forwards (and
    answers for: `forwarded` notes how firmly each caller holds worlds)."""

    def __init__(self) -> None:
        self.moved: set[str] = set()
        self.forwarded: list[tuple[str, int | None]] = []

    async def acquire(self, actor_id: str) -> Any | None:
        return "elsewhere" if actor_id in self.moved else None

    async def release(self, actor_id: str) -> None:
        pass

    def forward(self, where: Any, actor_id: str, message: Any, answer: Answer,
                hops: int) -> None:
        self.forwarded.append((actor_id, answer.footprint))
        answer.succeed("forwarded")

    async def follow(self, where: Any, actor_id: str, queue: SubscriberQueue,
                     since: int | None, request_id: int) -> None:
        raise AssertionError("nothing is followed elsewhere here")

    def unfollow(self, actor_id: str, queue: SubscriberQueue) -> None:
        pass


class _Caller(Pending):
    """An ask's answer slot whose client follows `footprint` worlds (an anonymous one's)."""

    def __init__(self, footprint: int | None) -> None:
        super().__init__()
        self.footprint = footprint


class _Spectator(SubscriberQueue):
    """A subscriber whose client follows `footprint` worlds (an anonymous one's)."""

    def __init__(self, footprint: int) -> None:
        super().__init__(10)
        self.footprint = footprint


async def test_a_message_loaded_again_after_its_actor_stopped_keeps_its_caller_s_footprint(
        autojump_clock: trio.abc.Clock) -> None:
    """A caller following 3 worlds posts to w; w stops before applying it, and while it
    stops c takes its place. Loading w again for that caller may not unload a world whose
    spectator follows 2: it is refused, as the caller's own first message would be."""
    kinds = [ActorKind("probe", ProbeActor, declared=any_name)]
    async with open_directory(MemoryEventStore(), kinds, placement=_Cluster(),
                              max_live_worlds=2) as directory:
        spectator, holder = _Spectator(2), SubscriberQueue(10)
        await directory.ask("probe:a", Add(1))
        await directory.subscribe("probe:a", spectator, None, request_id=1)
        await trio.sleep(1)
        await directory.ask("probe:w", Add(1))
        release, caller = trio.Event(), _Caller(3)
        directory.send("probe:w", Block(release), Pending())
        await wait_all_tasks_blocked()  # (w is handling it)
        directory.send("probe:w", Add(1), caller)
        assert directory.evict("probe:w")  # (it ends once the block is released)
        await directory.ask("probe:c", Add(1))
        await directory.subscribe("probe:c", holder, None, request_id=1)
        release.set()
        with pytest.raises(ProtocolError) as refused:
            await wait_answer(caller, 5, "probe:w")
        assert refused.value.detail == {"budget": "max_live_worlds", "limit": 2}
        assert [s.actor_id for s in directory.live()] == ["probe:a", "probe:c"]
        for queue in (spectator, holder):
            queue.close()


async def test_a_message_forwarded_after_its_actor_stopped_keeps_its_caller_s_footprint(
        ) -> None:
    """The world moved while a message for it waited: it is forwarded to the new host
    for a caller following 3 worlds (the frame carries it: server/cluster/wire.py)."""
    cluster = _Cluster()
    kinds = [ActorKind("probe", ProbeActor, declared=any_name)]
    async with open_directory(MemoryEventStore(), kinds, placement=cluster) as directory:
        await directory.ask("probe:w", Add(1))
        caller = _Caller(3)
        directory.send("probe:w", Add(1), caller)
        cluster.moved.add("probe:w")  # its lease went to another process:
        assert directory.evict("probe:w")  # it stops before applying the message
        assert await wait_answer(caller, 5, "probe:w") == "forwarded"
        assert cluster.forwarded == [("probe:w", 3)]


async def test_a_create_forwarded_after_its_world_moved_keeps_its_caller_s_footprint() -> None:
    """Another process claimed a new world while its create was handled (the create's
    append is fenced): the create is forwarded to the new host for the same caller, one
    following 3 worlds, as any other message is."""
    cluster, store = _Cluster(), MemoryEventStore()
    kinds = [ActorKind("probe", ProbeActor, create_op="probe.create")]
    async with open_directory(store, kinds, placement=cluster) as directory:
        release, caller = trio.Event(), _Caller(3)
        create = Call("probe.create", Create(release=release), "agent", "ann")
        directory.send("probe:w", create, caller)
        await wait_all_tasks_blocked()  # (the new world is handling it)
        await MemoryEventStore(sharing=store).claim("probe:w")  # its lease went elsewhere
        cluster.moved.add("probe:w")
        release.set()
        assert await wait_answer(caller, 5, "probe:w") == "forwarded"
        assert cluster.forwarded == [("probe:w", 3)]
