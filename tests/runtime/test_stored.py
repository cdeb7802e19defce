"""What a message's events took in the store, told its answer (`stored(bytes)`) once the
batch is durable: the server charges it to the caller's `stored_per_hour`."""

from __future__ import annotations

import json

import trio
import trio.testing

from actors.runtime.directory import ActorKind, any_name, open_directory
from actors.runtime.mailbox import Pending
from actors.store import MemoryEventStore
from tests.runtime.probe import ONE_BATCH, Add, Block, Crash, ProbeActor

KINDS = [ActorKind("probe", ProbeActor, declared=any_name)]


class Told(Pending):
    """An answer slot that keeps the sizes it is told."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def stored(self, nbytes: int) -> None:
        self.sizes.append(nbytes)


def size(amount: int) -> int:
    """The stored size of the probe's `added` event (the memory store's JSON text)."""
    return len(json.dumps({"type": "added", "amount": amount}))


async def test_each_ask_of_a_batch_is_told_its_own_events_size_once_durable() -> None:
    """In one batch (one append): each write is told its own events' bytes, a crashed
    write none (its events were dropped), nor a read; the writes kept across the crash
    are told theirs all the same."""
    async with open_directory(MemoryEventStore(), KINDS, config=ONE_BATCH) as directory:
        actor = await directory.get("probe:a")
        release = trio.Event()
        messages = {"one": Add(1), "big": Add(10**12), "crash": Crash(after_commit=True),
                    "read": Block(release), "after": Add(333)}  # (released when handled)
        answers = {name: Told() for name in messages}
        async with trio.open_nursery() as nursery:
            nursery.start_soon(actor.ask, Block(release))
            await trio.testing.wait_all_tasks_blocked()
            for name, answer in answers.items():  # queued behind the block: one batch
                actor.send(messages[name], answer)
            release.set()
        for answer in answers.values():
            await answer.done.wait()
        assert {name: a.sizes for name, a in answers.items()} == {
            "one": [size(1)], "big": [size(10**12)], "crash": [], "read": [],
            "after": [size(333)]}
        assert actor.amounts == [1, 10**12, 333]
