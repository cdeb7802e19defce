"""Property: whatever mix of commits and crashes an actor goes through, its state equals what a
fresh actor folds from the store, and holds every acknowledged add exactly once and nothing of
a crashed handler."""

from __future__ import annotations

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.runtime import RuntimeConfig
from actors.runtime.directory import ActorKind, any_name, open_directory
from actors.store import MemoryEventStore
from protocol.errors import ProtocolError
from tests.runtime.probe import Add, Crash, ProbeActor

steps = st.lists(st.one_of(st.integers(-50, 50).map(Add), st.booleans().map(Crash)),
                 max_size=40)


@settings(max_examples=40, deadline=None)
@given(steps, st.integers(1, 6))
def test_state_always_equals_the_fold_of_the_store(plan: list, snapshot_every: int) -> None:
    config = RuntimeConfig(snapshot_every=snapshot_every, max_restarts=1000)
    kinds = [ActorKind("probe", ProbeActor, declared=any_name)]

    async def run() -> None:
        store = MemoryEventStore()
        acknowledged: list[int] = []
        async with open_directory(store, kinds, config=config) as directory:
            actor = await directory.get("probe:p")
            for step in plan:
                try:
                    await actor.ask(step)
                    acknowledged.append(step.amount)
                except ProtocolError:
                    pass  # a crashed handler changes nothing
            state = actor.snapshot()
        async with open_directory(store, kinds, config=config) as directory:
            assert (await directory.get("probe:p")).snapshot() == state
        assert state["amounts"] == acknowledged

    trio.run(run)
