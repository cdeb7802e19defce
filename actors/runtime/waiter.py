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

        def abort(_: Any) -> trio.lowlevel.Abort:
            self._task = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    def wake(self) -> None:
        """Let the parked task, if any, run again."""
        if self._task is not None:
            task, self._task = self._task, None
            trio.lowlevel.reschedule(task)
