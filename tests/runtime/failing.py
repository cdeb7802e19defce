"""Failures on purpose, for what a world does then (tests/runtime/test_once_durable.py,
tests/lab): a store whose next append to one stream fails, and a handler bug."""

from __future__ import annotations

from typing import Any

import pytest

from actors.runtime import Call
from actors.runtime.host import WorldActor
from actors.store import MemoryEventStore

CRASH = "crash"  # the caller whose calls `crash_calls` makes every world's handler raise on


class FailsOneAppend(MemoryEventStore):
    """Fails the next append to `stream` once armed (`fail` raised then)."""

    stream = ""
    fail: Exception | None = None

    async def append(self, stream: str, *args: Any, **kwargs: Any) -> int:
        if stream == self.stream and self.fail is not None:
            error, self.fail = self.fail, None
            raise error
        return await super().append(stream, *args, **kwargs)


def crash_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every world's handler raise (a bug) on a call from `CRASH`, for the test."""
    handle = WorldActor.handle

    async def crashing(self: WorldActor, call: Call) -> Any:
        if call.caller == CRASH:
            raise RuntimeError("a bug in a handler")
        return await handle(self, call)

    monkeypatch.setattr(WorldActor, "handle", crashing)
