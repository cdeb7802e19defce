"""Offloaded work in a worker thread: abandoned when its waiter is cancelled, it runs on
under the name OFFLOAD_THREAD, and lets go of what it holds before the thread drops the
name (what tests/server/garbage.py waits on before it counts a server's garbage)."""

from __future__ import annotations

import threading
import weakref
from functools import partial

import trio

from actors.runtime.offload import OFFLOAD_THREAD, run_offloaded


class Held:
    """What a piece of work holds (an actor, for a field's generation)."""


def _wait(release: threading.Event, held: Held) -> None:
    release.wait(30)


def _named() -> bool:
    return any(t.name == OFFLOAD_THREAD for t in threading.enumerate())


async def _until(condition: bool) -> None:
    with trio.fail_after(30):
        while _named() != condition:
            await trio.sleep(0.01)


async def test_abandoned_work_lets_go_of_what_it_holds_while_its_thread_bears_the_name() -> None:
    release = threading.Event()
    held = Held()
    alive = weakref.ref(held)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_offloaded, partial(_wait, release, held),
                           trio.CapacityLimiter(1), False)
        await _until(True)
        nursery.cancel_scope.cancel()  # abandoned: the thread runs on
    del held
    assert _named() and alive() is not None
    release.set()
    await _until(False)
    assert alive() is None
