"""The lobby actor: creates worlds through the directory and publishes changes."""

from __future__ import annotations

import json

import pytest
import trio

from actors import counter, lobby
from actors.runtime import ActorKind, Call, open_directory
from actors.runtime.subscriber import SubscriberQueue
from actors.store import MemoryEventStore
from protocol.errors import ProtocolError
from protocol.ops.counter import AddArgs
from protocol.ops.lobby import CreateArgs, CreateResult, ListArgs, WorldInfo

KINDS = [ActorKind.of(lobby.WORLD), ActorKind.of(counter.WORLD)]


async def test_lobby_creates_lists_and_publishes(autojump_clock: trio.abc.Clock) -> None:
    store = MemoryEventStore()
    async with open_directory(store, KINDS) as directory:
        lobby = await directory.get("lobby:main")
        queue = SubscriberQueue(100)
        await lobby.subscribe(queue, None, request_id=1)
        made = await lobby.ask(Call("lobby.create", CreateArgs("counter", "a"), "agent", "ann"))
        assert made == CreateResult("counter:a", 1)
        with pytest.raises(ProtocolError, match="exists"):
            await lobby.ask(Call("lobby.create", CreateArgs("counter", "a"), "agent", "ann"))
        world = await directory.get("counter:a")
        await world.ask(Call("counter.add", AddArgs(5), "agent", "ann"))
        await trio.sleep(1)  # a tick notices the new revision
        listed = await lobby.ask(Call("lobby.list", ListArgs(), "spectator", "anonymous"))
        assert listed.worlds == [WorldInfo("counter", "counter:a", 2, 0, True)]
        frames = [json.loads(await queue.get()) for _ in range(4)]
        assert [f.get("kind") for f in frames] == [None, "snapshot", "events", "snapshot"]
        assert frames[2]["data"] == [{"type": "world_created", "kind": "counter",
                                      "id": "counter:a", "by": "ann"}]
        assert frames[3]["data"]["worlds"] == [{"kind": "counter", "id": "counter:a",
                                                "revision": 2, "subscribers": 0, "live": True,
                                                "summary": None}]
        assert len(queue) == 0  # nothing changed since: no more snapshots
    assert [e.data["type"] for e in await store.read("lobby:main")] == ["world_created"]
