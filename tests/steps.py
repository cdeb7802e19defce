"""Counting one task's steps (trio's instrument hook): how often it yielded to the others
(tests/server/test_transport.py, test_reactor.py)."""

from __future__ import annotations

import trio


class Steps(trio.abc.Instrument):
    """Counts the steps of one task (a step begins each time it resumes after a yield)."""

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task = task
        self.count = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        """One more step when it is our task's."""
        if task is self.task:
            self.count += 1
