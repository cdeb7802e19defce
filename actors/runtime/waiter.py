"""A parking spot for the one task that reads a queue (an actor's mailbox, a connection's
outbox): cheaper than a memory channel or a parking lot when only one task ever waits."""

from __future__ import annotations

from typing import Any

import trio


class Waiter:
    """`wait` parks the calling task until `wake`; a second task waiting at once is a bug."""

    __slots__ = ("_task", "_what")

    def __init__(self, what: str) -> None:
        self._what = what  # named in the error
        self._task: trio.lowlevel.Task | None = None

    async def wait(self) -> None:
        """Park until `wake` (or cancellation)."""
        if self._task is not None:
            raise trio.BusyResourceError(f"one task at a time waits on {self._what}")
        self._task = trio.lowlevel.current_task()
        await trio.lowlevel.wait_task_rescheduled(self._abort)  # (a method: no closure cell)

    def _abort(self, _: Any) -> trio.lowlevel.Abort:
        self._task = None
        return trio.lowlevel.Abort.SUCCEEDED

    def wake(self) -> None:
        """Let the parked task, if any, run again."""
        if self._task is not None:
            task, self._task = self._task, None
            trio.lowlevel.reschedule(task)


class Slots:
    """A counting semaphore (trio.Semaphore's calls) for one taking task, the others only
    giving back: a count and a `Waiter`, lighter than a semaphore's parking lot (a
    connection's answer slots: its reader takes them)."""

    __slots__ = ("_waiter", "value")

    def __init__(self, value: int, what: str) -> None:
        self.value = value
        self._waiter = Waiter(what)

    def acquire_nowait(self) -> None:
        """Take a slot, or raise trio.WouldBlock when none is free."""
        if not self.value:
            raise trio.WouldBlock
        self.value -= 1

    async def acquire(self) -> None:
        """Take a slot, waiting for one (no checkpoint when one is free)."""
        while not self.value:
            await self._waiter.wait()
        self.value -= 1

    def release(self) -> None:
        """Give a slot back."""
        self.value += 1
        self._waiter.wake()


class Turn:
    """A lock (trio.Lock's calls) for the few tasks that rarely meet: a flag, and a parking
    lot made only once two do (a socket's sends: its writer, its reader's pongs, a ping)."""

    __slots__ = ("_lot", "held")

    def __init__(self) -> None:
        self.held = False
        self._lot: trio.lowlevel.ParkingLot | None = None

    def acquire_nowait(self) -> None:
        """Take the turn, or raise trio.WouldBlock when it is held."""
        if self.held:
            raise trio.WouldBlock
        self.held = True

    async def acquire(self) -> None:
        """Take the turn, waiting for it (no checkpoint when it is free)."""
        if not self.held:
            self.held = True
            return
        if self._lot is None:
            self._lot = trio.lowlevel.ParkingLot()
        await self._lot.park()  # `release` passed the turn to us: `held` stayed True

    def release(self) -> None:
        """Pass the turn to the next waiting task, or free it."""
        if self._lot:
            self._lot.unpark()
        else:
            self.held = False
