"""The server time of a request served by several trio tasks (the MCP SDK's: its HTTP
transport's, its session's, each handler's), measured step by step.

`metered(tab)` runs a block with `tab` in the task's context, which every task spawned
from it inherits (trio copies the spawner's context). While any block is metered, a trio
instrument adds the time of each step of a task whose context holds a tab
(`time.perf_counter`, as a websocket frame's reading is measured) to that tab; a step
that enters or leaves a block is split where it does. Work charged elsewhere (a world's,
through `replies.Charged`) runs `unmetered()`, so nothing is charged twice and an actor
it starts does not inherit the tab.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from time import perf_counter

import trio


class Tab:
    """What one request spent: seconds of server time."""

    __slots__ = ("spent",)

    def __init__(self) -> None:
        self.spent = 0.0


_TAB: ContextVar[Tab | None] = ContextVar("petridish_tab", default=None)


class _Meter(trio.abc.Instrument):
    """Adds each task step to its task's tab; installed only while a block is metered, so
    a run without metered requests pays nothing."""

    def __init__(self) -> None:
        self.blocks = 0  # metered blocks running
        self.started = 0.0  # when the running step began (or was last split)

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        """A step begins."""
        self.started = perf_counter()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        """A step ended: charge it to its task's tab, if any."""
        tab = tab_of(task)
        if tab is not None:
            tab.spent += perf_counter() - self.started


_METER: trio.lowlevel.RunVar[_Meter] = trio.lowlevel.RunVar("petridish_meter")


def current() -> Tab | None:
    """The tab of the request this task serves, if it is metered."""
    return _TAB.get()


def tab_of(task: trio.lowlevel.Task) -> Tab | None:
    """The tab of the request `task` serves, if it is metered."""
    return task.context.get(_TAB)


def settle() -> None:
    """Charge the running step so far to this task's tab (the rest of it comes later)."""
    meter = _METER.get(None)
    if meter is None or not meter.blocks:
        return  # not installed: no step is being timed
    now, tab = perf_counter(), _TAB.get()
    if tab is not None:
        tab.spent += now - meter.started
    meter.started = now


@contextmanager
def _on(tab: Tab | None) -> Iterator[None]:
    settle()
    token = _TAB.set(tab)
    try:
        yield
    finally:
        settle()
        _TAB.reset(token)


@contextmanager
def metered(tab: Tab) -> Iterator[None]:
    """Run a block (and the tasks it spawns) on `tab`."""
    meter = _METER.get(None)
    if meter is None:
        meter = _Meter()
        _METER.set(meter)
    if not meter.blocks:
        trio.lowlevel.add_instrument(meter)
    meter.blocks += 1
    try:
        with _on(tab):
            yield
    finally:
        meter.blocks -= 1
        if not meter.blocks:
            trio.lowlevel.remove_instrument(meter)


@contextmanager
def unmetered() -> Iterator[None]:
    """Run a block (and the tasks it spawns) on no tab."""
    with _on(None):
        yield
