"""Ops of the counter world, `counter:<name>`: a durable total with notes, the smallest
world (tests, benchmarks and the lobby page exercise the server through it)."""

from __future__ import annotations

import attrs

from protocol.bounds import bounded
from protocol.registry import OpSpec

MAX_AMOUNT = 10**12  # keeps totals exact in a JavaScript client
MAX_NOTE = 16384  # characters; notes make pushes big enough to fill slow queues in tests


@attrs.frozen
class CreateArgs:
    """No arguments: a new counter starts at zero."""


@attrs.frozen
class AddArgs:
    """Add `amount` to the total, with an optional note; one durable event."""

    amount: int = bounded(lo=-MAX_AMOUNT, hi=MAX_AMOUNT)
    note: str = bounded("", length=MAX_NOTE)


@attrs.frozen
class GetArgs:
    """No arguments."""


@attrs.frozen
class Total:
    """The world's total, how many adds made it, and its revision."""

    total: int
    adds: int
    revision: int


OPS = (
    OpSpec("counter.create", CreateArgs, Total, "agent",
           "Create this counter (also `lobby.create {kind: counter}`): one durable event."),
    OpSpec("counter.add", AddArgs, Total, "agent",
           "Add `amount` (with an optional `note`) to the total: one durable event."),
    OpSpec("counter.get", GetArgs, Total, "spectator", "Read the total."),
)
