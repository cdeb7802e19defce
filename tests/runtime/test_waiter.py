"""actors/runtime/waiter.py: the light semaphore and lock a connection holds."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from actors.runtime.waiter import Slots, Turn


async def test_slots_are_taken_waited_for_and_given_back() -> None:
    slots = Slots(2, "test slots")
    slots.acquire_nowait()
    await slots.acquire()  # one was free: no wait
    assert slots.value == 0
    with pytest.raises(trio.WouldBlock):
        slots.acquire_nowait()
    taken = trio.Event()

    async def take() -> None:
        await slots.acquire()
        taken.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(take)
        await trio.testing.wait_all_tasks_blocked()
        assert not taken.is_set()  # none free: it waits
        slots.release()
        await taken.wait()
    assert slots.value == 0


async def test_a_cancelled_taker_leaves_the_slots_as_they_were() -> None:
    slots = Slots(0, "test slots")
    with trio.move_on_after(0.01):
        await slots.acquire()
    slots.release()
    slots.acquire_nowait()  # the cancelled wait took nothing, and a new one may wait
    assert slots.value == 0


async def test_the_turn_passes_to_the_waiting_tasks_in_order() -> None:
    turn = Turn()
    await turn.acquire()
    with pytest.raises(trio.WouldBlock):
        turn.acquire_nowait()
    order: list[int] = []

    async def wait_turn(k: int) -> None:
        await turn.acquire()
        order.append(k)
        await trio.lowlevel.checkpoint()  # held across a yield: the others still wait
        turn.release()

    async with trio.open_nursery() as nursery:
        for k in range(3):
            nursery.start_soon(wait_turn, k)
            await trio.testing.wait_all_tasks_blocked()
        assert order == []
        turn.release()
    assert order == [0, 1, 2]
    assert not turn.held
    turn.acquire_nowait()


async def test_a_cancelled_waiter_does_not_get_the_turn() -> None:
    turn = Turn()
    turn.acquire_nowait()
    with trio.move_on_after(0.01):
        await turn.acquire()
    turn.release()
    assert not turn.held  # nobody waits now: the turn is free
    await turn.acquire()
    assert turn.held
