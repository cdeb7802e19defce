"""The bounded queue between actors and a connection's writer."""

from __future__ import annotations

import trio
import trio.testing

from actors.runtime.subscriber import QueueStatistics, SubscriberQueue


async def test_offer_respects_frames_and_characters_force_does_not() -> None:
    queue = SubscriberQueue(3, max_chars=10)
    assert queue.offer("a" * 20)  # an empty queue takes any frame
    assert not queue.offer("b")  # ... but then it is past its characters
    assert await queue.get() == "a" * 20
    assert queue.offer("1234") and queue.offer("5678")
    assert not queue.offer("abc")  # 8 + 3 > 10
    assert queue.offer("90")
    assert not queue.offer("x")  # 3 frames
    queue.force("resync")
    assert queue.statistics() == QueueStatistics(depth=4, peak=4, capacity=3, chars=16)
    assert [await queue.get() for _ in range(4)] == ["1234", "5678", "90", "resync"]


async def test_put_waits_for_room_and_close_releases_everyone() -> None:
    queue = SubscriberQueue(1)
    queue.offer("first")
    done: list[str] = []

    async def put() -> None:
        await queue.put("second")
        done.append("put")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(put)
        await trio.testing.wait_all_tasks_blocked()
        assert done == []
        assert await queue.get() == "first"
        await trio.testing.wait_all_tasks_blocked()
        assert done == ["put"]
    queue.close()
    assert not queue.offer("late")
    assert await queue.get() == "second"
    assert await queue.get() is None
