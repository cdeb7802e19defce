"""Worlds driven by trio's MockClock: a world's clock read from trio's, and the test's
clock moved a step at a time, each step settled before the next."""

from __future__ import annotations

import time
from typing import Any

import trio
import trio.testing

SETTLE_TURNS = 6000  # 5 ms real-time waits (30 s) before `settled` gives up


def trio_ms() -> int:
    """A world's clock in ms: trio's (the test's mock clock)."""
    return int(trio.current_time() * 1000)


async def settled(actor: Any) -> None:
    """Once the actor waits for its next message (or stopped) and no work of it runs off its
    task: offloaded work (a model call, a generation) and the store's writes (a writer
    process) are waited for in real time, the world's clock standing still."""
    for _ in range(SETTLE_TURNS):
        await trio.testing.wait_all_tasks_blocked()
        if not actor._offloads and (actor.stopped or actor._waiting):
            return
        await trio.to_thread.run_sync(time.sleep, 0.005)
    raise AssertionError(f"{actor.actor_id} did not settle: offloads {actor._offloads}, "
                         f"waiting {actor._waiting}, stopped {actor.stopped}")


async def run_for(clock: trio.testing.MockClock, actor: Any, seconds: float,
                  step: float) -> None:
    """Let `seconds` of the world's clock pass, `step` at a time, each settled."""
    for _ in range(int(seconds / step)):
        clock.jump(step)
        await settled(actor)
