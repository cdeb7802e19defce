"""The event store interface the actors depend on, and an in-memory implementation.

A stream is one actor's history: events numbered 1, 2, 3 ... (the revision of a stream
is the number of its last event; an empty stream is at revision 0). `append` is atomic
and durable: when it returns, the events survive a crash. Nothing above this interface
may assume a backend; SQLite and PostgreSQL live in `server/storage/`.

Ownership: a writer `claim`s a stream before it replays it; the claim gives the stream a
new fence, and every later append of that writer carries the fence it claimed. Once
another writer claims the stream, the first one's appends are refused by the backend
itself (FencedError) and write nothing: that is what makes a stale owner (a paused
process, a lost lease) harmless. A writer that never claimed a stream appends under fence
0, which works only while nobody holds a claim on it or wrote under one (see `unclaim`).

Receipts: a write that carried a client's request id is stored with a `Receipt` (its
caller, the id and the reply's JSON) in the same transaction as its events, so whichever
process hosts the world later can answer that caller's retry of the write with its first
result instead of applying it again (actors/runtime/base.py remembers the recent ones).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from protocol.errors import ErrorCode, ProtocolError

Event = dict[str, Any]  # a JSON object; worlds convert their attrs events to and from it

MAX_STREAM_BYTES = 255  # a stream name's UTF-8 length (PostgreSQL sends names in NOTIFYs)
MAX_REV = 2**63 - 1  # a revision is a signed 64-bit integer (SQLite INTEGER, PostgreSQL bigint)


class ConflictError(Exception):
    """`append` was called with an `expected_rev` that is not the stream's revision."""

    def __init__(self, stream: str, expected: int, actual: int) -> None:
        super().__init__(f"stream {stream!r} is at revision {actual}, not {expected}")
        self.stream, self.expected, self.actual = stream, expected, actual


class FencedError(ConflictError):
    """`append` was refused because another writer claimed the stream after this one (or
    this one let its claim go, and its backend forgot the stream: `current` is 0).

    The writer is stale (it lost the stream's ownership): stop it; claiming again and
    replaying is how a new owner starts. Nothing was written.
    """

    def __init__(self, stream: str, held: int, current: int) -> None:
        now = (f"is claimed under fence {current}" if current else
               "is not claimed (its claim was let go with nothing written under it)")
        Exception.__init__(self, f"stream {stream!r} {now}; this writer holds fence {held}")
        self.stream, self.held, self.current = stream, held, current


class StoreUnavailable(ProtocolError):
    """`unavailable`: the store cannot make writes durable right now (its writer died, or it
    cannot be reached). Raised at once, without waiting; `sent` says whether the refused
    call had reached the store (an append that had may have been written: read it back).
    Its detail says `outcome: "unknown"` then, as every unavailable whose write may have
    been applied does (docs/protocol.md: retry with the same request id); `stored` says
    it too, for clients that read it."""

    def __init__(self, why: str, *, sent: bool) -> None:
        stored = "whether it was stored is unknown" if sent else "nothing was stored"
        detail = {"store": "down", "stored": "unknown" if sent else "no"}
        super().__init__(ErrorCode.UNAVAILABLE, f"the event store cannot make writes "
                         f"durable right now ({why}); {stored}; retry in a moment",
                         detail | ({"outcome": "unknown"} if sent else {}))
        self.why, self.sent = why, sent


def check_stream_name(stream: str) -> None:
    """Refuse (ValueError) a stream name longer than MAX_STREAM_BYTES."""
    if len(stream) > MAX_STREAM_BYTES // 4 and len(stream.encode()) > MAX_STREAM_BYTES:
        raise ValueError(f"a stream name is at most {MAX_STREAM_BYTES} bytes of UTF-8")


def check_read_bounds(after: int, upto: int | None) -> None:
    """Refuse (ValueError) a read's bound that is not a revision (0..MAX_REV)."""
    for name, bound in (("after", after), ("upto", upto)):
        if bound is not None and not 0 <= bound <= MAX_REV:
            raise ValueError(f"{name} is {bound}, not a revision (0..{MAX_REV})")


def decoded(rows: list[tuple[int, str]]) -> Iterator[Event]:
    """The events of `read_rows`'s rows, in order, taking each row out of `rows` as it is
    decoded: a long stream is never in memory whole as events (nor twice), so the cyclic
    collector's full passes, which hold every thread, have that many fewer objects to visit
    and come less often."""
    rows.reverse()
    while rows:
        yield json.loads(rows.pop()[1])


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
class Receipt:
    """A write's caller, its request id and its reply (JSON), stored beside the write's
    events; `rev` is the revision of the write's last event. A request id is the caller's
    own: another caller's write with the same one is not a retry of this one."""

    rev: int
    caller: str
    request_id: str
    result: Any


def check_receipts(expected_rev: int, count: int, receipts: Sequence[Receipt]) -> None:
    """Refuse (ValueError) a receipt that is not at a revision of the events appended."""
    for receipt in receipts:
        if not expected_rev < receipt.rev <= expected_rev + count:
            raise ValueError(f"receipt {receipt.request_id!r} is at revision {receipt.rev}, "
                             f"not one of {expected_rev + 1}..{expected_rev + count}")


@attrs.frozen
class StoreStatistics:
    """Counters of a store: appends requested, transactions committed, events written,
    appends refused because another writer claimed the stream."""

    appends: int
    commits: int
    events: int
    fenced: int = 0

    @property
    def appends_per_commit(self) -> float:
        """How many appends shared a commit, on average (group commit at work)."""
        return self.appends / self.commits if self.commits else 0.0


class EventStore(ABC):
    """Append-only streams of JSON events with optimistic concurrency and snapshots."""

    @abstractmethod
    async def append(self, stream: str, expected_rev: int, events: Sequence[Event],
                     receipts: Sequence[Receipt] = (), sizes: list[int] | None = None) -> int:
        """Append `events` after revision `expected_rev`; return the new revision.

        Atomic and durable, `receipts` included (each at a revision of these events, else
        ValueError; its result must be JSON). Raises ConflictError (writing nothing) when
        the stream is not at `expected_rev`, FencedError (a ConflictError, writing
        nothing) when another writer claimed the stream since this one did (see `claim`),
        TypeError or ValueError (writing nothing) for events that are not JSON, and
        ValueError for a stream name longer than MAX_STREAM_BYTES. `sizes`, if given, is
        extended with each event's size as stored: the bytes of its JSON text, from the
        one encoding the append makes anyway.
        """

    @abstractmethod
    async def claim(self, stream: str) -> tuple[int, int]:
        """Take the stream over: give it a new fence, greater than every fence it had;
        return `(fence, revision)`.

        Durable. From now on this store's appends to `stream` carry `fence`, and any
        other writer's appends under an older fence are refused (FencedError). Claim
        before reading the stream to replay it: an append of the previous owner either
        committed before the claim (and the replay sees it) or is refused.
        """

    @abstractmethod
    async def unclaim(self, stream: str) -> None:
        """This client no longer writes `stream` (the actor it claimed it for ended): it
        forgets its claim, so its memory of claims holds only the streams it writes. Its
        appends to `stream` carry fence 0 until it claims again (refused, as any writer's,
        while anyone holds a claim on the stream or once anything was written under one);
        one already sent carries the old fence, refused once another writer claimed the
        stream. Fences are never given out twice, so a backend may also forget a stream
        nothing was written under (a refused create's) while its fence is still this
        claim's: its revision stays 0, an append sent under the old fence is refused, and
        one under fence 0 is not (nobody holds a claim on it). Best effort: a store that
        cannot be reached, or fails, keeps the stream; nothing is raised."""

    @abstractmethod
    async def read(self, stream: str, after: int = 0, upto: int | None = None
                   ) -> list[StoredEvent]:
        """The events of `stream` with a revision greater than `after` (and at most
        `upto`, if given), in order; ValueError for a bound outside 0..MAX_REV."""

    @abstractmethod
    async def read_rows(self, stream: str, after: int = 0, upto: int | None = None
                        ) -> list[tuple[int, str]]:
        """`read`'s events as `(rev, JSON text)` rows, not decoded: for a caller that decodes
        a long stream off the trio thread (`decoded`)."""

    @abstractmethod
    async def receipts(self, stream: str, after: int = 0) -> list[Receipt]:
        """The receipts of `stream` at a revision greater than `after`, in order."""

    @abstractmethod
    async def forget_receipts(self, stream: str, upto: int) -> None:
        """Drop the receipts of `stream` at revisions up to `upto` (a world reads only
        those of its last `receipt_window` revisions: older ones are never read)."""

    @abstractmethod
    async def revision(self, stream: str) -> int:
        """The stream's revision (0 for a stream that has no events)."""

    @abstractmethod
    async def save_snapshot(self, stream: str, rev: int, data: Any) -> None:
        """Keep `data` (JSON) as the folded state of `stream` at `rev`.

        Snapshots only move forward: one at a lower revision than the stored one is
        ignored (a stale owner must not replace a newer snapshot); one at the same
        revision replaces it.
        """

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


class _MemoryStreams:
    """What the clients of one memory store share: events, snapshots, fences."""

    def __init__(self) -> None:
        self.events: dict[str, list[Event]] = {}
        self.snapshots: dict[str, Snapshot] = {}
        self.receipts: dict[str, list[Receipt]] = {}
        self.fences: dict[str, int] = {}  # stream -> fence of its latest claim


def _round_trip(value: Any, sizes: list[int] | None = None) -> Any:
    # A JSON round trip, as a real backend does: non-JSON (NaN too) fails here as well.
    text = json.dumps(value, allow_nan=False)
    if sizes is not None:
        sizes.append(len(text))  # (ASCII: a character is a byte)
    return json.loads(text)


class MemoryEventStore(EventStore):
    """A store in a dict: not durable. For tests of the runtime and of worlds.

    `MemoryEventStore(sharing=other)` is a second client of `other`'s streams, with its
    own claims (fencing between the two works as between two processes).
    """

    def __init__(self, sharing: MemoryEventStore | None = None) -> None:
        self._data = sharing._data if sharing is not None else _MemoryStreams()
        self._held: dict[str, int] = {}  # stream -> fence this client claimed
        self._appends = self._commits = self._events_written = self._fenced = 0

    async def append(self, stream: str, expected_rev: int, events: Sequence[Event],
                     receipts: Sequence[Receipt] = (), sizes: list[int] | None = None) -> int:
        """See EventStore.append."""
        check_stream_name(stream)
        check_receipts(expected_rev, len(events), receipts)
        self._appends += 1
        held, current = self._held.get(stream, 0), self._data.fences.get(stream, 0)
        if held != current:
            self._fenced += 1
            raise FencedError(stream, held, current)
        log = self._data.events.get(stream, [])
        if len(log) != expected_rev:
            raise ConflictError(stream, expected_rev, len(log))
        copies = [_round_trip(e, sizes) for e in events]
        kept = [attrs.evolve(r, result=_round_trip(r.result)) for r in receipts]
        self._data.events.setdefault(stream, log).extend(copies)
        if kept:
            self._data.receipts.setdefault(stream, []).extend(kept)
        self._commits += 1
        self._events_written += len(copies)
        return len(log)

    async def claim(self, stream: str) -> tuple[int, int]:
        """See EventStore.claim."""
        fence = self._data.fences[stream] = self._data.fences.get(stream, 0) + 1
        self._held[stream] = fence
        return fence, len(self._data.events.get(stream, []))

    async def unclaim(self, stream: str) -> None:
        """See EventStore.unclaim (the stream's fence stays: it is a dict's entry)."""
        self._held.pop(stream, None)

    async def read(self, stream: str, after: int = 0, upto: int | None = None
                   ) -> list[StoredEvent]:
        """See EventStore.read."""
        return [StoredEvent(rev, json.loads(text))
                for rev, text in await self.read_rows(stream, after, upto)]

    async def read_rows(self, stream: str, after: int = 0, upto: int | None = None
                        ) -> list[tuple[int, str]]:
        """See EventStore.read_rows."""
        check_read_bounds(after, upto)
        log = self._data.events.get(stream, [])
        return [(rev, json.dumps(e)) for rev, e in enumerate(log[after:upto], start=after + 1)]

    async def receipts(self, stream: str, after: int = 0) -> list[Receipt]:
        """See EventStore.receipts."""
        return [attrs.evolve(r, result=_round_trip(r.result))
                for r in self._data.receipts.get(stream, []) if r.rev > after]

    async def forget_receipts(self, stream: str, upto: int) -> None:
        """See EventStore.forget_receipts."""
        if stream in self._data.receipts:
            self._data.receipts[stream] = [r for r in self._data.receipts[stream]
                                           if r.rev > upto]

    async def revision(self, stream: str) -> int:
        """See EventStore.revision."""
        return len(self._data.events.get(stream, []))

    async def save_snapshot(self, stream: str, rev: int, data: Any) -> None:
        """See EventStore.save_snapshot."""
        copy = _round_trip(data)
        old = self._data.snapshots.get(stream)
        if old is None or old.rev <= rev:
            self._data.snapshots[stream] = Snapshot(rev, copy)

    async def load_snapshot(self, stream: str) -> Snapshot | None:
        """See EventStore.load_snapshot."""
        return self._data.snapshots.get(stream)

    async def streams(self, prefix: str = "") -> dict[str, int]:
        """See EventStore.streams."""
        return {s: len(log) for s, log in self._data.events.items()
                if log and s.startswith(prefix)}

    def statistics(self) -> StoreStatistics:
        """See EventStore.statistics (each append that writes is its own commit here)."""
        return StoreStatistics(self._appends, self._commits, self._events_written, self._fenced)
