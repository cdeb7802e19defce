"""`WorldActor`: the one generic host that runs any `World` (actors/world.py).

Per message: the op is looked up in the tables (the effect actor's `effects` first, then
the world's `moves`, then its `reads`); a move's `decide` gets the state, the args and a
`Ctx` stamped now; its events are folded with `evolve` as the typed values they are and
encoded once, for the store; the runtime appends the batch's records in one durable
append, then answers, then publishes (actors/runtime/base.py). A `Refusal` becomes the
reply's error and changes nothing.

A world whose rules need effects (generation off the task, timers, asking other worlds)
subclasses `WorldActor` in its `actor.py`, names the subclass in `World.actor`, and adds
entries to `effects`: async methods `(self, call) -> result` that may use `play`, `read`,
`fold`, `offload`, `after`/`every` and the side snapshots.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar

from actors.runtime.base import Actor, ActorContext
from actors.runtime.mailbox import Call
from actors.store import Snapshot
from actors.world import Caller, Ctx, Move, Refusal, World
from protocol.bounds import borrowed
from protocol.convert import unstructure
from protocol.errors import ErrorCode, ProtocolError, world_codes

Effect = Callable[[Any, Call], Awaitable[Any]]


def refused(refusal: Refusal) -> ProtocolError:
    """The wire error of a refusal (its code must be a protocol or registered world code)."""
    return ProtocolError(refusal.code, refusal.message, dict(refusal.detail))


def check_world(world: World, host: type[WorldActor]) -> None:
    """Raise ValueError unless every op of `world` is answered exactly once by the tables
    and its world codes are registered (checked once per kind, when it is hosted)."""
    tables = {"effects": set(host.effects), "moves": set(world.moves),
              "reads": set(world.reads)}
    for spec in world.ops:
        if spec.kind != world.kind:
            raise ValueError(f"{world.kind}: op {spec.name} belongs to another kind")
        holders = [name for name, ops in tables.items() if spec.name in ops]
        if len(holders) > 2 or (len(holders) == 2 and holders[0] != "effects"):
            raise ValueError(f"{world.kind}: op {spec.name} is in {' and '.join(holders)}")
        if not holders:
            raise ValueError(f"{world.kind}: no move, read or effect answers {spec.name}")
    if not host.effect_reads <= tables["effects"]:
        raise ValueError(f"{world.kind}: effect reads {sorted(host.effect_reads)} are not "
                         "all effects")
    unknown = set().union(*tables.values()) - world.op_names()
    if unknown:
        raise ValueError(f"{world.kind}: {sorted(unknown)} are not ops of the world")
    for part, op in (("create", world.create), ("seat", world.seat)):
        if op is not None and op not in world.op_names():
            raise ValueError(f"{world.kind}: the {part} op {op} is not declared")
    registered = world_codes()
    for code in world.codes or ():
        if registered.get(code.value) is not world.codes:
            raise ValueError(f"{world.kind}: world code {code.value!r} is not registered")


class WorldActor(Actor):
    """Hosts one world of `world`'s kind; `state` is its folded state."""

    # op -> async method (self, call) of a subclass, for ops a table cannot answer. An
    # effect may wrap a move or read of the same name (play or read it, then start work
    # off the task); one that wraps a read changes nothing either.
    effects: ClassVar[Mapping[str, Effect]] = {}
    # Effects that only read (store nothing, safe to send again: ActorKind.reads).
    effect_reads: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, actor_id: str, context: ActorContext, world: World) -> None:
        self.world = world
        self.kind = world.kind  # type: ignore[misc]  # the base reads it per instance
        self.push_interval = world.push_interval  # type: ignore[misc]
        self.fanout_rate = world.fanout_rate  # type: ignore[misc]
        self.name = actor_id.partition(":")[2]
        super().__init__(actor_id, context)
        self.state: Any = world.initial(self.name)

    # ---- the base's hooks, from the world's value --------------------------------------

    @property
    def snapshot_every(self) -> int:
        """The runtime's period, or the world's (`StateCodec.every`) when shorter."""
        codec, every = self.world.snapshot, super().snapshot_every
        return every if codec is None or codec.every is None else min(every, codec.every)

    def reset(self) -> None:
        """The state of an empty stream."""
        self.state = self.world.initial(self.name)

    def apply(self, event: dict[str, Any]) -> None:
        """Fold one stored record (decoded by the world's codec)."""
        self.state = self.world.evolve(self.state, self.world.codec.decode(event))

    def view(self) -> Any:
        """The world's view of its state."""
        return self.world.view(self.state)

    def snapshot(self) -> Any | None:
        """The state as JSON, when the world declares a snapshot codec."""
        codec = self.world.snapshot
        return None if codec is None else codec.dump(self.state)

    def restore(self, data: Any) -> None:
        """The state from a snapshot."""
        assert self.world.snapshot is not None
        self.state = self.world.snapshot.load(data)

    async def handle(self, call: Call) -> Any:
        """Dispatch by the tables: effects, then moves, then reads.

        A call with a request id that an earlier write of the same caller carried gets
        that write's reply again and changes nothing; a write with one that commits events
        keeps a receipt (stored with the events, see actors/store.py) when it commits some
        after its handler's last `durable` (a receipt is stored with events still to be
        appended). Another caller's write with the same request id is a write of its own."""
        request_id = call.request_id
        if request_id is None:
            return await self._dispatch(call)
        seen, reply = self.receipt(call.caller, request_id)
        if seen:
            return reply
        before = self.rev
        result = await self._dispatch(call)
        if self.rev > max(before, self._durable_rev):
            self.keep_receipt(call.caller, request_id, unstructure(result))
        return result

    async def _dispatch(self, call: Call) -> Any:
        effect = self.effects.get(call.op)
        if effect is not None:
            return await effect(self, call)
        move = self.world.moves.get(call.op)
        if move is not None:
            return self.play(move, call)
        return self.read(call)

    # ---- services for effects ----------------------------------------------------------

    def ctx(self, call: Call, purpose: int | None = None) -> Ctx:
        """The context of `call`: its caller, the time now, the generator of `purpose`."""
        return Ctx(Caller(call.caller, call.role), self.context.clock(), self.rev,
                   self.world.seed(self.state), purpose)

    def play(self, move: Move, call: Call) -> Any:
        """Decide `move` for `call`, fold its events, and return its result (a refusal is
        raised as the reply's error; nothing changes then)."""
        if (path := borrowed(call.args, call.caller, call.role)) is not None:
            raise self.refuse(ErrorCode.FORBIDDEN, f"{path}: only the owner may name another "
                              "user than the caller", path=path)
        decided = move.decide(self.state, call.args, self.ctx(call, move.purpose))
        if isinstance(decided, Refusal):
            raise refused(decided)
        self.fold(decided)
        return move.result(self.state, decided, call.args)

    def read(self, call: Call) -> Any:
        """Answer `call` with the world's read of its op (a refusal is raised)."""
        answer = self.world.reads[call.op].answer(self.state, call.args, self.ctx(call))
        if isinstance(answer, Refusal):
            raise refused(answer)
        return answer

    def fold(self, events: Sequence[Any]) -> int:
        """Fold typed events into the state now and hand their records to the batch's
        durable append (no-ops skipped, transient ones kept in memory only); returns the
        new revision. Nobody hears of them before they are durable."""
        world = self.world
        records = []
        for event in events:
            if world.is_noop(event):
                continue
            self.state = world.evolve(self.state, event)
            if not world.transient(event):
                records.append(world.codec.encode(event, self.state))
        return self._stage(records)

    def now(self) -> int:
        """The wall clock in ms (for effects; decisions get `ctx.t`)."""
        return self.context.clock()

    async def save_side(self, stream: str, rev: int, data: Any) -> None:
        """Keep `data` as the snapshot of a side stream (state that is not in events, such
        as a secret or a board several worlds share); durable when this returns."""
        await self.context.store.save_snapshot(stream, rev, data)

    async def load_side(self, stream: str) -> Snapshot | None:
        """The snapshot of a side stream, or None."""
        return await self.context.store.load_snapshot(stream)

    def refuse(self, code: Any, message: str, **detail: Any) -> ProtocolError:
        """A refusal for an effect to raise."""
        return refused(Refusal(code, message, detail))

