"""The event store interface the actors depend on, and an in-memory implementation.

A stream is one actor's history: events numbered 1, 2, 3 ... (the revision of a stream
is the number of its last event; an empty stream is at revision 0). `append` is atomic
and durable: when it returns, the events survive a crash. Nothing above this interface
may assume a backend; the SQLite one lives in `server/storage/`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import attrs

Event = dict[str, Any]  # a JSON object; worlds convert their attrs events to and from it


class ConflictError(Exception):
    """`append` was called with an `expected_rev` that is not the stream's revision."""

    def __init__(self, stream: str, expected: int, actual: int) -> None:
        super().__init__(f"stream {stream!r} is at revision {actual}, not {expected}")
        self.stream, self.expected, self.actual = stream, expected, actual


@attrs.frozen
class StoredEvent:
    """One event as read back, with its revision in the stream."""

    rev: int
    data: Event


@attrs.frozen
class Snapshot:
    """A folded state of a stream as of revision `rev`."""

    rev: int
    data: Any


@attrs.frozen
class StoreStatistics:
    """Counters of a store: appends requested, transactions committed, events written."""

    appends: int
    commits: int
    events: int


class EventStore(ABC):
    """Append-only streams of JSON events with optimistic concurrency and snapshots."""

    @abstractmethod
    async def append(self, stream: str, expected_rev: int, events: Sequence[Event]) -> int:
        """Append `events` after revision `expected_rev`; return the new revision.

        Atomic and durable. Raises ConflictError (writing nothing) when the stream is
        not at `expected_rev`.
        """

    @abstractmethod
    async def read(self, stream: str, after: int = 0) -> list[StoredEvent]:
        """The events of `stream` with a revision greater than `after`, in order."""

    @abstractmethod
    async def revision(self, stream: str) -> int:
        """The stream's revision (0 for a stream that has no events)."""

    @abstractmethod
    async def save_snapshot(self, stream: str, rev: int, data: Any) -> None:
        """Keep `data` (JSON) as the folded state of `stream` at `rev`, replacing older ones."""

    @abstractmethod
    async def load_snapshot(self, stream: str) -> Snapshot | None:
        """The latest snapshot of `stream`, or None."""

    @abstractmethod
    async def streams(self, prefix: str = "") -> dict[str, int]:
        """Every non-empty stream whose name starts with `prefix`, with its revision."""

    @abstractmethod
    def statistics(self) -> StoreStatistics:
        """Counters for metrics and benchmarks."""

    async def aclose(self) -> None:
        """Release the backend's resources; appends after this fail."""


class MemoryEventStore(EventStore):
    """A store in a dict: not durable. For tests of the runtime and of worlds."""

    def __init__(self) -> None:
        self._events: dict[str, list[Event]] = {}
        self._snapshots: dict[str, Snapshot] = {}
        self._appends = self._events_written = 0

    async def append(self, stream: str, expected_rev: int, events: Sequence[Event]) -> int:
        """See EventStore.append."""
        log = self._events.setdefault(stream, [])
        if len(log) != expected_rev:
            raise ConflictError(stream, expected_rev, len(log))
        # A JSON round trip, as a real backend does: a non-JSON event fails here too.
        log.extend(json.loads(json.dumps(e)) for e in events)
        self._appends += 1
        self._events_written += len(events)
        return len(log)

    async def read(self, stream: str, after: int = 0) -> list[StoredEvent]:
        """See EventStore.read."""
        log = self._events.get(stream, [])
        return [StoredEvent(rev, json.loads(json.dumps(e))) for rev, e in enumerate(log[after:], start=after + 1)]

    async def revision(self, stream: str) -> int:
        """See EventStore.revision."""
        return len(self._events.get(stream, []))

    async def save_snapshot(self, stream: str, rev: int, data: Any) -> None:
        """See EventStore.save_snapshot."""
        self._snapshots[stream] = Snapshot(rev, json.loads(json.dumps(data)))

    async def load_snapshot(self, stream: str) -> Snapshot | None:
        """See EventStore.load_snapshot."""
        return self._snapshots.get(stream)

    async def streams(self, prefix: str = "") -> dict[str, int]:
        """See EventStore.streams."""
        return {s: len(log) for s, log in self._events.items() if log and s.startswith(prefix)}

    def statistics(self) -> StoreStatistics:
        """See EventStore.statistics (each append is its own commit here)."""
        return StoreStatistics(self._appends, self._appends, self._events_written)
