"""The scratch world's rules: a total, the number of adds, and nothing else. Pure."""

from __future__ import annotations

from typing import Any

import attrs

from protocol.errors import ErrorCode, ProtocolError
from protocol.ops.scratch import MAX_NOTE, AddArgs

MAX_AMOUNT = 10**12  # keeps totals exact in a JavaScript client


@attrs.frozen
class ScratchState:
    """The folded state: the sum of every amount added, and how many adds."""

    total: int = 0
    adds: int = 0


def setup() -> ScratchState:
    """The state of a new scratch world."""
    return ScratchState()


def decide_add(state: ScratchState, args: AddArgs) -> list[dict[str, Any]]:
    """The events of one add, or a bad_request naming the field that is out of range."""
    if not -MAX_AMOUNT <= args.amount <= MAX_AMOUNT:
        raise ProtocolError(ErrorCode.BAD_REQUEST,
                            f"args.amount: must be between -{MAX_AMOUNT} and {MAX_AMOUNT}",
                            {"path": "args.amount"})
    if len(args.note) > MAX_NOTE:
        raise ProtocolError(ErrorCode.BAD_REQUEST,
                            f"args.note: at most {MAX_NOTE} characters", {"path": "args.note"})
    return [{"type": "added", "amount": args.amount, "note": args.note}]


def apply(state: ScratchState, event: dict[str, Any]) -> ScratchState:
    """The state after one event (`created` changes nothing)."""
    if event["type"] == "added":
        return ScratchState(state.total + event["amount"], state.adds + 1)
    return state
