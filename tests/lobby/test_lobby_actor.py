"""The lobby actor: creates worlds through the directory and publishes changes."""

from __future__ import annotations

import json

import pytest
import trio

from actors import counter, lobby
from actors.lobby.actor import FIRST_PAGE, TICK, LobbyActor, Seen
from actors.runtime import ActorKind, Call, open_directory
from actors.runtime.subscriber import SubscriberQueue
from actors.store import MemoryEventStore, StoreUnavailable
from protocol.errors import ProtocolError
from protocol.ops.counter import AddArgs
from protocol.ops.lobby import PAGE, CreateArgs, CreateResult, ListArgs, ListResult, WorldInfo

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
        assert frames[3]["data"] == {"worlds": [{"kind": "counter", "id": "counter:a",
                                                 "revision": 2, "subscribers": 0,
                                                 "live": True, "summary": None}],
                                     "total": 1, "offset": 0}
        assert len(queue) == 0  # nothing changed since: no more snapshots
    assert [e.data["type"] for e in await store.read("lobby:main")] == ["world_created"]


class _RevisionsDown(MemoryEventStore):
    """A store whose reads of a stored world's revision are refused (its writer down)
    while `down`: the world's create goes through, the lobby's read after it fails."""

    down = False

    async def revision(self, stream: str) -> int:
        rev = await super().revision(stream)
        if self.down and rev:
            raise StoreUnavailable("its writer stopped", sent=False)
        return rev


async def test_a_create_whose_store_read_fails_answers_the_world_it_made() -> None:
    """The lobby reads whether the world it made is stored; that read refused, the create
    still answers the world (made: not 'nothing was stored'), unrecorded."""
    store = _RevisionsDown()
    async with open_directory(store, KINDS) as directory:
        lobby = await directory.get("lobby:main")
        store.down = True
        made = await lobby.ask(Call("lobby.create", CreateArgs("counter", "a"), "agent", "ann"))
        assert made == CreateResult("counter:a", 1)
        store.down = False
        with pytest.raises(ProtocolError, match="exists"):  # the world's own create says so
            await lobby.ask(Call("lobby.create", CreateArgs("counter", "a"), "agent", "ann"))
    assert await store.read("lobby:main") == []


async def test_an_unwatched_lobby_builds_no_listing(autojump_clock: trio.abc.Clock,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The listing costs O(worlds) a tick: nobody subscribed, no tick builds it; the first
    subscriber's snapshot builds it, and its ticks publish what changes."""
    built = []
    listing = LobbyActor._listing

    def counted(self: LobbyActor, args: ListArgs = FIRST_PAGE) -> ListResult:
        built.append(args)
        return listing(self, args)

    monkeypatch.setattr(LobbyActor, "_listing", counted)
    async with open_directory(MemoryEventStore(), KINDS) as directory:
        lobby = await directory.get("lobby:main")
        await lobby.ask(Call("lobby.create", CreateArgs("counter", "a"), "agent", "ann"))
        world = await directory.get("counter:a")
        await world.ask(Call("counter.add", AddArgs(5), "agent", "ann"))
        await trio.sleep(5)  # ten ticks, and the world's revision moved
        assert built == []
        queue = SubscriberQueue(100)
        await lobby.subscribe(queue, None, request_id=1)
        frames = [json.loads(await queue.get()) for _ in range(2)]
        assert frames[1]["kind"] == "snapshot"
        assert frames[1]["data"]["worlds"][0]["revision"] == 2
        await world.ask(Call("counter.add", AddArgs(5), "agent", "ann"))
        await trio.sleep(1)  # a tick notices the new revision
        pushed = json.loads(await queue.get())
        assert pushed["kind"] == "snapshot" and pushed["data"]["worlds"][0]["revision"] == 3
        assert len(built) >= 3  # the first snapshot, then the watched ticks


async def test_the_watched_listing_is_its_first_page(autojump_clock: trio.abc.Clock) -> None:
    """However many worlds exist, a subscriber's snapshot is the first page of `lobby.list`;
    the rest is asked for a page at a time."""
    async with open_directory(MemoryEventStore(), KINDS) as directory:
        lobby = await directory.get("lobby:main")
        for i in range(PAGE + 5):
            await lobby.ask(Call("lobby.create", CreateArgs("counter", f"c{i:03}"), "owner",
                                 "owner"))
        queue = SubscriberQueue(100)
        await lobby.subscribe(queue, None, request_id=1)
        view = [json.loads(await queue.get()) for _ in range(2)][1]["data"]
        assert (len(view["worlds"]), view["total"], view["offset"]) == (PAGE, PAGE + 5, 0)
        assert view["worlds"][-1]["id"] == f"counter:c{PAGE - 1:03}"
        rest = await lobby.ask(Call("lobby.list", ListArgs(offset=PAGE), "spectator",
                                    "anonymous"))
        assert [w.id for w in rest.worlds] == [f"counter:c{i:03}" for i in range(PAGE, PAGE + 5)]
        assert (rest.total, rest.offset) == (PAGE + 5, PAGE)


async def test_summaries_are_pushed_at_most_every_tick(autojump_clock: trio.abc.Clock) -> None:
    """A world that tells the lobby its summary every 50 ms for a second (a field generating
    tells it every 0.2 s) moves the subscribers' snapshot only on the ticks (every TICK, 0.5
    s, as documented), each with the latest summary: not once per summary."""
    async with open_directory(MemoryEventStore(), KINDS) as directory:
        lobby = await directory.get("lobby:main")
        await lobby.ask(Call("lobby.create", CreateArgs("counter", "a"), "agent", "ann"))
        queue = SubscriberQueue(100)
        await lobby.subscribe(queue, None, request_id=1)
        for step in range(20):
            lobby.tell(Seen("counter:a", {"state": "live", "step": step}))
            await trio.sleep(0.05)
        await trio.sleep(TICK)
        frames = [json.loads(frame) for frame in iter(queue.get_nowait, None)]
        snapshots = [f["data"]["worlds"][0]["summary"] for f in frames if "kind" in f]
        assert len(snapshots) <= 1 + 1 / TICK + 1  # the first, then at most one a tick
        assert snapshots[-1] == {"state": "live", "step": 19}


async def test_a_listing_reads_no_streams_from_the_store(autojump_clock: trio.abc.Clock) -> None:
    """The store's streams are read at start and every SCAN seconds, not once per
    `lobby.list` (a read of every stream, which a spectator could ask for at will); a world
    created meanwhile is listed at once, being live."""
    store, reads = MemoryEventStore(), []
    streams = store.streams

    async def counted(prefix: str = "") -> dict[str, int]:
        reads.append(prefix)
        return await streams(prefix)

    store.streams = counted  # type: ignore[method-assign]
    async with open_directory(store, KINDS) as directory:
        lobby = await directory.get("lobby:main")
        at_start = len(reads)
        await lobby.ask(Call("lobby.create", CreateArgs("counter", "a"), "agent", "ann"))
        for _ in range(50):
            listed = await lobby.ask(Call("lobby.list", ListArgs(), "spectator", "anonymous"))
        assert [w.id for w in listed.worlds] == ["counter:a"] and len(reads) == at_start
