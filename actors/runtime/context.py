"""What the runtime hands every actor and reports about it: bounds, clock, observer,
statistics."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import trio

from actors.store import EventStore
from protocol.errors import ProtocolError

if TYPE_CHECKING:
    from actors.runtime.directory import Directory


@attrs.frozen
class RuntimeConfig:
    """Bounds of every actor: mailbox size, resume history, snapshot period, crash budget."""

    mailbox_size: int = 1024
    history_size: int = 1024  # events kept for resume; older gaps get a snapshot
    snapshot_every: int = 500  # events between snapshots (worlds without `snapshot` skip it)
    ask_timeout: float = 10.0
    max_restarts: int = 5  # more crashes than this within restart_window stop the actor
    restart_window: float = 60.0
    # An actor that got no message and has no subscriber for this long is unloaded; the
    # next `get` reloads it from the store. None keeps every actor loaded.
    idle_timeout: float | None = 600.0
    max_batch: int = 256  # messages handled before their events are appended together
    # ... or this many seconds of handling: the batch ends there, and the actor lets the
    # other tasks run before its next one (slow reads queued by one client would
    # otherwise hold the whole server for their sum).
    batch_seconds: float = 0.001
    # A write retried with its request id is recognised (and answered with its first
    # result) while the world has moved on fewer than this many revisions since.
    receipt_window: int = 1024
    # Worker threads that run every actor's offloaded work together (generation rings,
    # solver searches): more requests for heavy work wait their turn, so one client
    # cannot start many at once.
    offload_threads: int = 1
    # Worker threads that wait on a network peer for every actor (`offload(io=True)`: a
    # model's replies, seconds each): they hold no CPU, so they wait behind a limiter of
    # their own and never keep the CPU work above (a validation, a field's generation, a
    # hint) waiting behind a model call.
    io_threads: int = 4


def wall_clock_ms() -> int:
    """Milliseconds since the epoch: the one wall clock the runtime stamps messages with."""
    return int(time.time() * 1000)


class RuntimeObserver(Protocol):
    """What the runtime reports as it works (the server feeds its metrics from this)."""

    def handled(self, kind: str, seconds: float) -> None:
        """An actor of `kind` finished one message in `seconds`."""

    def appended(self, kind: str, events: int) -> None:
        """An actor of `kind` appended `events` events to the store."""

    def dropped(self, kind: str) -> None:
        """A slow subscriber of an actor of `kind` was dropped with a resync."""

    def crashed(self, kind: str, actor_id: str) -> None:
        """A handler of actor `actor_id` raised (it restarts from the store, or stops)."""

    def refused(self, actor_id: str, refusal: ProtocolError) -> None:
        """World `actor_id` was not started: `refusal` (`max_live_worlds` are live, each
        in use)."""


class NullObserver:
    """An observer that ignores everything."""

    def handled(self, kind: str, seconds: float) -> None:
        """Ignored."""

    def appended(self, kind: str, events: int) -> None:
        """Ignored."""

    def dropped(self, kind: str) -> None:
        """Ignored."""

    def crashed(self, kind: str, actor_id: str) -> None:
        """Ignored."""

    def refused(self, actor_id: str, refusal: ProtocolError) -> None:
        """Ignored."""


@attrs.frozen
class ActorStatistics:
    """One actor's counters as a frozen value (read by the lobby and /metrics)."""

    actor_id: str
    kind: str
    rev: int
    mailbox_depth: int
    mailbox_peak: int
    subscribers: int
    handled: int
    restarts: int
    dropped: int


@attrs.frozen
class ActorContext:
    """What an actor gets from its host: the store, the directory, the bounds, the observer,
    the wall clock (ms since the epoch; tests pass their own), the model endpoint and the
    two offload limiters (CPU work; network waits, `offload(io=True)`)."""

    store: EventStore
    directory: Directory
    config: RuntimeConfig
    observer: RuntimeObserver
    clock: Callable[[], int] = wall_clock_ms
    offload_limiter: trio.CapacityLimiter = attrs.field(
        factory=lambda: trio.CapacityLimiter(1))
    # The server's chat-completions endpoint (an `actors.ecosystem.endpoint.ModelEndpoint`),
    # for worlds that can speak to a model; None: every world's deterministic path.
    model: Any = None
    io_limiter: trio.CapacityLimiter = attrs.field(
        factory=lambda: trio.CapacityLimiter(RuntimeConfig().io_threads))

    def limiter(self, *, io: bool, process: bool) -> trio.CapacityLimiter:
        """The limiter offloaded work waits behind: the I/O threads' for work that waits on
        a network peer (a model's reply), else the CPU work's."""
        assert not (io and process), "a network wait takes a thread, not a process"
        return self.io_limiter if io else self.offload_limiter
