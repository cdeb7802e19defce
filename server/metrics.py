"""Process metrics in the Prometheus text exposition format (version 0.0.4).

A small registry of counters, gauges (set directly or read from a callback when
rendered) and fixed-bucket histograms, each optionally labelled, plus `Metrics`:
the instruments the server updates. No client library: the format is a few
lines of text per sample.

    metrics = Metrics()
    metrics.frames_in.inc()
    metrics.handler_seconds.labels(kind="lobby").observe(0.0012)
    metrics.mailbox_depth.set_function(lambda: {("lobby",): 3})
    body = metrics.render()   # served by GET /metrics with CONTENT_TYPE
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from typing import Any

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_NAME_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
# Handler latencies from sub-millisecond appends to multi-second stalls.
DEFAULT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

LabelValues = tuple[str, ...]


def format_value(value: float) -> str:
    """A sample value as the text format spells it (`+Inf`, `NaN`, integers without `.0`)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _label_text(names: Sequence[str], values: Sequence[str]) -> str:
    if not names:
        return ""
    pairs = ",".join(f'{n}="{_escape_label(v)}"' for n, v in zip(names, values, strict=True))
    return "{" + pairs + "}"


# ---- metric families ------------------------------------------------------------


class _Family:
    """A named metric with fixed label names and one child per label-value tuple."""

    kind = ""

    def __init__(self, name: str, help: str, labelnames: Sequence[str] = ()) -> None:
        if not _NAME_RE.match(name):
            raise ValueError(f"invalid metric name {name!r}")
        for label in labelnames:
            if not _LABEL_RE.match(label) or label.startswith("__") or label == "le":
                raise ValueError(f"invalid label name {label!r} for {name}")
        self.name = name
        self.help = help
        self.labelnames = tuple(labelnames)
        self._children: dict[LabelValues, object] = {}

    def labels(self, *values: str, **by_name: str) -> Any:
        """The child for one combination of label values (created on first use)."""
        if not by_name and (child := self._children.get(values)) is not None:
            return child  # the hot path: positional values seen before
        if by_name:
            if values or set(by_name) != set(self.labelnames):
                raise ValueError(f"{self.name} takes labels {self.labelnames}, got {sorted(by_name)}")
            values = tuple(by_name[n] for n in self.labelnames)
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name} takes {len(self.labelnames)} label values, got {len(values)}")
        key = tuple(str(v) for v in values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._new_child()
        return child

    def _unlabelled(self) -> Any:
        if self.labelnames:
            raise ValueError(f"{self.name} has labels {self.labelnames}; use .labels(...)")
        return self.labels()

    def _new_child(self) -> object:
        raise NotImplementedError

    def samples(self) -> list[tuple[str, str, float]]:
        """(suffixed name, label text, value) for every sample of this family."""
        raise NotImplementedError

    def render(self) -> str:
        """HELP and TYPE lines followed by the samples."""
        lines = [f"# HELP {self.name} {_escape_help(self.help)}", f"# TYPE {self.name} {self.kind}"]
        lines += [f"{name}{labels} {format_value(v)}" for name, labels, v in self.samples()]
        return "\n".join(lines) + "\n"


class _CounterValue:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        """Add a non-negative `amount`: a counter only goes up."""
        if amount < 0:
            raise ValueError("a counter cannot decrease")
        self.value += amount


class _GaugeValue:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        """Add `amount`."""
        self.value += amount

    def dec(self, amount: float = 1.0) -> None:
        """Subtract `amount`."""
        self.value -= amount

    def set(self, value: float) -> None:
        """Set the value."""
        self.value = float(value)


class Counter(_Family):
    """A monotonically increasing total; by convention its name ends in `_total`."""

    kind = "counter"

    def _new_child(self) -> _CounterValue:
        return _CounterValue()

    def inc(self, amount: float = 1.0) -> None:
        """Increment the unlabelled counter."""
        self._unlabelled().inc(amount)

    def samples(self) -> list[tuple[str, str, float]]:
        """One sample per label-value tuple."""
        return [(self.name, _label_text(self.labelnames, k), c.value)
                for k, c in sorted(self._children.items())]


class Gauge(_Family):
    """A value that goes up and down."""

    kind = "gauge"

    def _new_child(self) -> _GaugeValue:
        return _GaugeValue()

    def inc(self, amount: float = 1.0) -> None:
        """Increment the unlabelled gauge."""
        self._unlabelled().inc(amount)

    def dec(self, amount: float = 1.0) -> None:
        """Decrement the unlabelled gauge."""
        self._unlabelled().dec(amount)

    def set(self, value: float) -> None:
        """Set the unlabelled gauge."""
        self._unlabelled().set(value)

    def samples(self) -> list[tuple[str, str, float]]:
        """One sample per label-value tuple."""
        return [(self.name, _label_text(self.labelnames, k), c.value)
                for k, c in sorted(self._children.items())]


class CallbackGauge(_Family):
    """A gauge read from a function when rendered (e.g. mailbox depths of live actors).

    The function returns a mapping from label-value tuples to values; `()` is the
    key of an unlabelled gauge. With no function set the gauge has no samples.
    """

    kind = "gauge"

    def __init__(self, name: str, help: str, labelnames: Sequence[str] = ()) -> None:
        super().__init__(name, help, labelnames)
        self._function: Callable[[], Mapping[LabelValues, float]] | None = None

    def set_function(self, function: Callable[[], Mapping[LabelValues, float]]) -> None:
        """Read the samples from `function` at every render (replaces any earlier one)."""
        self._function = function

    def labels(self, *values: str, **by_name: str) -> Any:
        """Not available: the callback supplies every labelled value."""
        raise TypeError(f"{self.name} is read from its callback; it has no settable children")

    def samples(self) -> list[tuple[str, str, float]]:
        """The callback's values, sorted by label values."""
        if self._function is None:
            return []
        out = []
        for key, value in sorted(self._function().items()):
            key = tuple(str(v) for v in key)
            if len(key) != len(self.labelnames):
                raise ValueError(f"{self.name} callback returned {key!r} for labels {self.labelnames}")
            out.append((self.name, _label_text(self.labelnames, key), float(value)))
        return out


class CallbackCounter(CallbackGauge):
    """A counter read from a function when rendered (a total some other object keeps,
    such as the event store's commits); no samples until the function is set."""

    kind = "counter"


class _HistogramValue:
    __slots__ = ("bounds", "count", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * len(bounds)  # per bucket, not cumulative; the +Inf bucket is `count`
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        """Record one observation."""
        i = bisect_left(self.bounds, value)  # first bound >= value: buckets are `le`
        if i < len(self.counts):
            self.counts[i] += 1
        self.sum += value
        self.count += 1


class Histogram(_Family):
    """Observations counted into fixed `le` buckets, with their sum and count."""

    kind = "histogram"

    def __init__(self, name: str, help: str, labelnames: Sequence[str] = (),
                 buckets: Sequence[float] = DEFAULT_BUCKETS) -> None:
        super().__init__(name, help, labelnames)
        bounds = tuple(float(b) for b in buckets if not math.isinf(b))
        if not bounds or list(bounds) != sorted(set(bounds)):
            raise ValueError(f"{name}: buckets must be a non-empty increasing sequence")
        self.bounds = bounds

    def _new_child(self) -> _HistogramValue:
        return _HistogramValue(self.bounds)

    def observe(self, value: float) -> None:
        """Record one observation on the unlabelled histogram."""
        self._unlabelled().observe(value)

    def samples(self) -> list[tuple[str, str, float]]:
        """Cumulative `_bucket` samples (ending with `le="+Inf"`), then `_sum` and `_count`."""
        out = []
        for key, h in sorted(self._children.items()):
            names = self.labelnames + ("le",)
            running = 0
            for bound, n in zip(self.bounds, h.counts, strict=True):
                running += n
                out.append((f"{self.name}_bucket", _label_text(names, key + (format_value(bound),)),
                            running))
            out.append((f"{self.name}_bucket", _label_text(names, key + ("+Inf",)), h.count))
            labels = _label_text(self.labelnames, key)
            out.append((f"{self.name}_sum", labels, h.sum))
            out.append((f"{self.name}_count", labels, h.count))
        return out


class Registry:
    """The metric families of one process, rendered in registration order."""

    def __init__(self) -> None:
        self._families: dict[str, _Family] = {}

    def register(self, family: _Family) -> _Family:
        """Add `family`; a second family with the same name is an error."""
        if family.name in self._families:
            raise ValueError(f"metric {family.name} is already registered")
        self._families[family.name] = family
        return family

    def render(self) -> str:
        """Every family in the text exposition format."""
        return "".join(f.render() for f in self._families.values())


# ---- the server's instruments ---------------------------------------------------


class Metrics:
    """The instruments `/metrics` exposes; one instance per server process."""

    def __init__(self) -> None:
        r = self.registry = Registry()
        self.connections_open = r.register(Gauge(
            "petridish_connections_open", "Websocket connections currently open."))
        self.frames_in = r.register(Counter(
            "petridish_frames_in_total", "Websocket frames received from clients."))
        self.frames_out = r.register(Counter(
            "petridish_frames_out_total", "Websocket frames sent to clients."))
        self.errors = r.register(Counter(
            "petridish_errors_total", "Error replies sent, by error code.", ("code",)))
        self.mailbox_depth = r.register(CallbackGauge(
            "petridish_mailbox_depth", "Messages waiting in actor mailboxes, summed by actor kind.",
            ("kind",)))
        self.handler_seconds = r.register(Histogram(
            "petridish_handler_seconds", "Time an actor spent handling one message, by actor kind.",
            ("kind",)))
        self.events_appended = r.register(Counter(
            "petridish_events_appended_total", "Events appended to the event store, by actor kind.",
            ("kind",)))
        self.subscribers_dropped = r.register(Counter(
            "petridish_subscribers_dropped_total",
            "Subscribers dropped with a resync because their queue was full, by actor kind.",
            ("kind",)))
        # What leaves a trace (server/trace.py) and what the budgets refuse (server/budgets.py).
        self.warnings = r.register(Counter(
            "petridish_warnings_total",
            "Warnings logged or folded into a logged line, by event (see docs/operations.md).",
            ("event",)))
        self.violation_closes = r.register(Counter(
            "petridish_violation_closes_total", "Websocket connections the server failed for "
            "what their client sent, by close code (1002 a protocol violation, 1007 text not "
            "UTF-8, 1008 too many frames that complete no message, 1009 a message too big).",
            ("code",)))
        self.budget_hits = r.register(Counter(
            "petridish_budget_hits_total", "Requests or connections refused by a budget, by "
            "budget.", ("budget",)))
        self.inflight = r.register(CallbackGauge(
            "petridish_inflight", "Requests and subscribes in flight (each held until its "
            "world is done with it), all accounts together."))
        self.inflight_freed = r.register(Counter(
            "petridish_inflight_freed_total", "Requests in flight freed by the backstop: "
            "their worlds had not answered them in server/claims.py BACKSTOP ask timeouts (a "
            "server bug)."))
        self.actor_crashes = r.register(Counter(
            "petridish_actor_crashes_total", "Handlers that raised (the actor restarted or "
            "stopped), by actor kind.", ("kind",)))
        self.connections_by_role = r.register(CallbackGauge(
            "petridish_connections", "Websocket connections open, by role (`none`: no hello "
            "yet).", ("role",)))
        self.store_up = r.register(CallbackGauge(
            "petridish_store_up", "1 while the event store can make writes durable, else 0."))
        self.store_restarts = r.register(Counter(
            "petridish_store_writer_restarts_total",
            "Times the event store's writer process died and was started again."))
        # The event store (any backend), read from its statistics.
        self.store_appends = r.register(CallbackCounter(
            "petridish_store_appends_total", "Appends requested of the event store."))
        self.store_commits = r.register(CallbackCounter(
            "petridish_store_commits_total",
            "Transactions the event store committed (group commit: many appends each)."))
        self.fenced_appends = r.register(CallbackCounter(
            "petridish_fenced_appends_total",
            "Appends the store refused because another process claimed the world since."))
        # A cluster's (docs/scale-out.md); no samples on a single process.
        self.leases_held = r.register(CallbackGauge(
            "petridish_leases_held", "Worlds this process hosts under a lease."))
        self.leases_lost = r.register(CallbackCounter(
            "petridish_leases_lost_total",
            "Worlds stopped because their lease was lost (reason: lost, self_fenced).",
            ("reason",)))
        self.forwards = r.register(CallbackCounter(
            "petridish_forwards_total",
            "Requests and views forwarded to the process hosting the world (direction: out), "
            "and received from other processes (in).", ("direction",)))
        self.rehomes = r.register(CallbackCounter(
            "petridish_rehome_waits_total",
            "Times requests waited for a world whose host could not be reached to re-home."))
        self.notifications = r.register(CallbackCounter(
            "petridish_notifications_total",
            "Store notifications received (origin: own appends, other processes').",
            ("origin",)))
        self.notification_batches = r.register(CallbackCounter(
            "petridish_notification_batches_total",
            "Batches of notifications the mirrors were fed."))
        self.mirror_reads = r.register(CallbackCounter(
            "petridish_mirror_reads_total",
            "Store reads made for spectators of worlds other processes host."))
        self.mirror_subscribers = r.register(CallbackGauge(
            "petridish_mirror_subscribers",
            "Spectators here of worlds other processes host."))

    def render(self) -> str:
        """The whole exposition text."""
        return self.registry.render()
