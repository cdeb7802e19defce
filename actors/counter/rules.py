"""The counter world, complete: a total, the number of adds, and nothing else. Pure.

This is the template a new world copies: the state and events are frozen attrs values,
`decide` functions return events or a `Refusal`, `evolve` folds one event, and `WORLD`
is the table the host runs. Stored events are `{"type": "created"}` and
`{"type": "added", "amount": A, "note": N}`.
"""

from __future__ import annotations

from typing import Any

import attrs

from actors.world import Codec, Ctx, Move, Read, Refusal, StateCodec, World
from protocol.errors import ErrorCode
from protocol.ops import counter as ops


@attrs.frozen
class Counter:
    """The folded state: the sum of every amount added, how many adds, the revision."""

    total: int = 0
    adds: int = 0
    rev: int = 0


@attrs.frozen
class Created:
    """The counter exists (its first event)."""


@attrs.frozen
class Added:
    """`amount` was added, with a note."""

    amount: int
    note: str = ""


Event = Created | Added


def initial(_name: str) -> Counter:
    """A counter that was never created."""
    return Counter()


def evolve(state: Counter, event: Event) -> Counter:
    """The state after one event."""
    if isinstance(event, Added):
        return Counter(state.total + event.amount, state.adds + 1, state.rev + 1)
    return attrs.evolve(state, rev=state.rev + 1)


def encode(event: Event, _after: Counter) -> dict[str, Any]:
    """The stored JSON of an event."""
    if isinstance(event, Added):
        return {"type": "added", "amount": event.amount, "note": event.note}
    return {"type": "created"}


def decode(data: dict[str, Any]) -> Event:
    """The event of stored JSON."""
    if data["type"] == "added":
        return Added(data["amount"], data["note"])
    return Created()


def decide_create(state: Counter, _args: ops.CreateArgs, _ctx: Ctx) -> list[Event] | Refusal:
    """Create the counter once."""
    if state.rev:
        return Refusal(ErrorCode.ALREADY_EXISTS, "this counter exists")
    return [Created()]


def decide_add(_state: Counter, args: ops.AddArgs, _ctx: Ctx) -> list[Event]:
    """One add (the protocol's bounds have checked the amount and the note)."""
    return [Added(args.amount, args.note)]


def total(state: Counter, *_: Any) -> ops.Total:
    """The reply of every counter op."""
    return ops.Total(state.total, state.adds, state.rev)


def view(state: Counter) -> dict[str, int]:
    """What subscribers see: the total, the adds and the revision."""
    return {"total": state.total, "adds": state.adds, "revision": state.rev}


WORLD = World(
    kind="counter",
    initial=initial,
    evolve=evolve,
    codec=Codec(encode, decode),
    view=view,
    ops=ops.OPS,
    moves={"counter.create": Move(decide_create, total),
           "counter.add": Move(decide_add, total)},
    reads={"counter.get": Read(total)},
    create="counter.create",
    create_role="agent",
    snapshot=StateCodec(lambda s: {"total": s.total, "adds": s.adds, "rev": s.rev},
                        lambda d: Counter(d["total"], d["adds"], d["rev"])),
)
