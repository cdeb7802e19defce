"""The field actor's pushes: a snapshot, then every event once, in order, coalesced."""

from __future__ import annotations

import json

import trio

from actors.directory import ActorKind, open_directory
from actors.field.actor import FieldActor
from actors.mailbox import Call
from actors.store import MemoryEventStore
from actors.subscriber import SubscriberQueue
from protocol.errors import ProtocolError
from protocol.ops.field import JoinArgs, RulesArgs, StartArgs

JOINS = 25


async def test_bursts_are_coalesced_without_losing_events() -> None:
    kinds = [ActorKind("field", FieldActor, autostart=True)]
    async with open_directory(MemoryEventStore(), kinds) as directory:
        actor = await directory.get("field:pub")
        await actor.ask(Call("field.start", StartArgs(size=80, seed=2), "agent", "t"))
        with trio.fail_after(30):
            while True:
                try:
                    await actor.ask(Call("field.rules", RulesArgs(), "agent", "t"))
                    break
                except ProtocolError:
                    await trio.sleep(0.05)
        queue = SubscriberQueue(1000)
        await actor.subscribe(queue, None, 1)
        async with trio.open_nursery() as n:  # a burst: every join waits in the mailbox at once
            for k in range(JOINS):
                n.start_soon(actor.ask, Call("field.join", JoinArgs(name=f"p{k}"), "agent", "t"))
        frames = []
        with trio.fail_after(5):
            while not frames or frames[-1].get("rev") != actor.rev:
                frames.append(json.loads(await queue.get()))
        assert frames[0] == {"id": 1, "ok": True, "result": {"topic": "field:pub", "rev": 1}}
        assert frames[1]["kind"] == "snapshot" and frames[1]["data"]["revision"] == 1
        events = [e for f in frames[2:] for e in f["data"]]
        assert [e["rev"] for e in events] == list(range(2, JOINS + 2))
        assert all(e["kind"] == "join" and e["dirty"] for e in events)
        pushes = frames[2:]
        assert len(pushes) < JOINS / 2, f"{len(pushes)} pushes for {JOINS} events"
        assert all(f["rev"] == f["data"][-1]["rev"] for f in pushes)
