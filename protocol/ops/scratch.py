"""Ops of the scratch world: a durable counter with notes, for exercising the server."""

from __future__ import annotations

import attrs

from protocol.registry import OpSpec

MAX_NOTE = 16384  # characters; notes make pushes big enough to fill slow queues in tests


@attrs.frozen
class AddArgs:
    """Add `amount` to the total, with an optional note; one durable event."""

    amount: int
    note: str = ""


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
    OpSpec("scratch.add", AddArgs, Total, "agent",
           "Add `amount` (with an optional `note`) to the total: one durable event."),
    OpSpec("scratch.get", GetArgs, Total, "spectator", "Read the total."),
)
