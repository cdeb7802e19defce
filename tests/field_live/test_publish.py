"""The field actor's pushes: a snapshot, then every event once, in order, coalesced to at
most one push per `live.PUSH_INTERVAL` (20 a second) however the writes arrive."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from itertools import pairwise

import trio

from actors import field
from actors.field import live
from actors.runtime import Actor, ActorKind, Call, open_directory
from actors.runtime.subscriber import SubscriberQueue
from actors.store import MemoryEventStore
from protocol.errors import ProtocolError
from protocol.ops.field import JoinArgs, RulesArgs, StartArgs

JOINS = 25


@asynccontextmanager
async def _field(name: str) -> AsyncIterator[Actor]:
    kinds = [ActorKind.of(field.WORLD)]
    async with open_directory(MemoryEventStore(), kinds) as directory:
        await directory.ask(f"field:{name}",
                            Call("field.start", StartArgs(size=80, seed=2), "agent", "t"))
        actor = await directory.get(f"field:{name}")
        with trio.fail_after(30):
            while True:
                try:
                    await actor.ask(Call("field.rules", RulesArgs(), "agent", "t"))
                    break
                except ProtocolError:
                    await trio.sleep(0.05)
        yield actor


def _join(k: int) -> Call:
    return Call("field.join", JoinArgs(name=f"p{k}"), "agent", "t")


async def _pushes(queue: SubscriberQueue, actor: Actor, until: int) -> list[tuple[float, dict]]:
    """Frames with their arrival times until one reaches revision `until`."""
    frames: list[tuple[float, dict]] = []
    with trio.fail_after(10):
        while not frames or frames[-1][1].get("rev") != until:
            frame = json.loads(await queue.get())
            frames.append((trio.current_time(), frame))
    return frames


def _events_of(frames: list[tuple[float, dict]]) -> list[dict]:
    assert frames[0][1] == {"id": 1, "ok": True, "result": {"topic": frames[1][1]["topic"],
                                                            "rev": 1}}
    assert frames[1][1]["kind"] == "snapshot" and frames[1][1]["data"]["revision"] == 1
    pushes = [f for _, f in frames[2:]]
    assert all(f["kind"] == "events" and f["rev"] == f["data"][-1]["rev"] for f in pushes)
    return [e for f in pushes for e in f["data"]]


async def test_a_burst_is_one_batch_and_loses_no_event() -> None:
    async with _field("burst") as actor:
        queue = SubscriberQueue(1000)
        await actor.subscribe(queue, None, 1)
        async with trio.open_nursery() as n:  # every join waits in the mailbox at once
            for k in range(JOINS):
                n.start_soon(actor.ask, _join(k))
        frames = await _pushes(queue, actor, JOINS + 1)
        events = _events_of(frames)
        assert [e["rev"] for e in events] == list(range(2, JOINS + 2))
        assert all(e["kind"] == "join" and e["dirty"] for e in events)
        assert len(frames) - 2 < JOINS / 2, f"{len(frames) - 2} pushes for {JOINS} events"


async def test_writes_one_after_another_are_spaced_to_twenty_pushes_a_second() -> None:
    async with _field("spaced") as actor:
        queue = SubscriberQueue(1000)
        await actor.subscribe(queue, None, 1)
        got: list[tuple[float, dict]] = []

        async def read() -> None:
            got.extend(await _pushes(queue, actor, JOINS + 1))

        async with trio.open_nursery() as n:
            n.start_soon(read)
            for k in range(JOINS):  # ~0.3 s of writes, each answered before the next
                await actor.ask(_join(k))
                await trio.sleep(0.01)
        events = _events_of(got)
        assert [e["rev"] for e in events] == list(range(2, JOINS + 2))
        times = [t for t, _ in got[2:]]
        gaps = [b - a for a, b in pairwise(times)]
        assert len(times) >= 4, times
        # Without coalescing each answered join would be pushed at once (gaps of ~1 ms).
        assert min(gaps) >= 0.8 * live.PUSH_INTERVAL, gaps
        assert len(times) < JOINS
