"""A world is a value: its kind's rules, declared once, for one generic host to run.

A `World` says what an empty world is (`initial`), how one event changes the state
(`evolve`), how events are stored (`codec`), and which ops it answers: `moves` (writes:
`decide` events from the state, then a `result` for the caller) and `reads` (an answer
from the state). Everything here is pure: a world package's `rules.py` builds its `World`
from plain functions over attrs/numpy values, and the host (`actors.host.WorldActor`)
does the rest: dispatch by the table, the durable append, replies, publishing, timers.

    decide(state, args, ctx) -> [event, ...] | Refusal     nothing changes on a Refusal
    evolve(state, event) -> state                           never fails for a decided event
    result(state_after, events, args) -> the reply's attrs value
    answer(state, args, ctx) -> the reply's attrs value | Refusal

`ctx` is all a decision may know beyond the state: who calls (`ctx.caller`), when the
host took the message (`ctx.t`, milliseconds since the epoch) and a generator seeded for
the move's purpose (`ctx.rng`). Domain code reads no clock and makes no generator.

A world comes to life only through its `create` move (a write on an empty state, by a
caller with `create_role`) or because the kind declares the name (`declared`, e.g. the
daily field of today); naming any other world starts nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from enum import StrEnum
from typing import Any, Generic, Protocol, TypeVar

import attrs
import numpy as np

S = TypeVar("S")  # a world's state
E = TypeVar("E")  # one of its events


@attrs.frozen
class Refusal:
    """Why a move or read was refused: a code (an `ErrorCode` value or one of the world's
    registered codes), a plain sentence, and detail for programs. Nothing changed."""

    code: StrEnum | str
    message: str
    detail: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Caller:
    """Who sent a message: the credential's name and its role."""

    name: str
    role: str


class Ctx:
    """What the host hands a decision: the caller, the time, a seeded generator.

    `rng` is built on first use from the world's seed (`World.seed(state)`), the move's
    `purpose` and the revision the move starts from, so replaying the same events draws
    the same numbers.
    """

    __slots__ = ("_purpose", "_rng", "_seed", "caller", "rev", "t")

    def __init__(self, caller: Caller, t: int, rev: int, seed: int = 0,
                 purpose: int | None = None) -> None:
        self.caller = caller
        self.t = t
        self.rev = rev
        self._seed = seed
        self._purpose = purpose
        self._rng: np.random.Generator | None = None

    @property
    def rng(self) -> np.random.Generator:
        """The generator of this move's purpose at this revision."""
        if self._purpose is None:
            raise RuntimeError("this move declared no purpose for a generator")
        if self._rng is None:
            self._rng = np.random.default_rng(np.random.SeedSequence(
                self._seed, spawn_key=(self._purpose, self.rev)))
        return self._rng


@attrs.frozen
class Move(Generic[S, E]):
    """A write: `decide` the events (or refuse), then build the reply from the state after.

    `purpose` is the spawn key of `ctx.rng` for this move (None: it draws no numbers).
    """

    decide: Callable[[S, Any, Ctx], Sequence[E] | Refusal]
    result: Callable[[S, Sequence[E], Any], Any]
    purpose: int | None = None


@attrs.frozen
class Read(Generic[S]):
    """A read: an answer from the state, or a refusal. Reads never change anything."""

    answer: Callable[[S, Any, Ctx], Any]


@attrs.frozen
class Codec(Generic[S, E]):
    """Events as stored JSON objects and back. `encode` also sees the state after the
    event, for fields derived from it that renderers want (the field's dirty map tiles);
    `decode` must ignore those again."""

    encode: Callable[[E, S], dict[str, Any]]
    decode: Callable[[dict[str, Any]], E]


@attrs.frozen
class StateCodec(Generic[S]):
    """A state as a JSON snapshot and back (worlds with long streams declare one)."""

    dump: Callable[[S], Any]
    load: Callable[[Any], S]
    # Events between snapshots, when fewer than the runtime's `snapshot_every` (a world
    # whose events are costly to fold, such as a run's simulated generations).
    every: int | None = None


# ---- MCP tools: how a world speaks to agents over /mcp (hosted by server/mcp.py) ----------

@attrs.frozen
class ToolResult:
    """What a tool answers: one line of text for the model, and the payload for programs
    (sent once, as `structuredContent`)."""

    text: str
    structured: Mapping[str, Any] | None = None


class ToolCall(Protocol):
    """What the MCP host hands a tool: who calls, from which client, and a way to reach
    worlds as that caller. Refusals from worlds arrive as `protocol.errors.ProtocolError`."""

    caller: Caller  # the credential's name and role (anonymous callers: one name per call)
    anonymous: bool  # no bearer token: the host named the caller for this call only
    client: str  # the MCP client's "name/version" (clientInfo), or its User-Agent; "" if none
    origin: str  # the server's base URL as the client reached it, e.g. http://127.0.0.1:8000
    t: int  # ms since the epoch, when the host took the call

    async def ask(self, actor_id: str, op: str, args: Any, *, caller: str | None = None) -> Any:
        """Send op `op` (its args an attrs value) to world `actor_id` as this caller (or as
        `caller`, a name this call owns: see `key`) and wait for the result."""

    def key(self) -> tuple[str, str]:
        """A fresh secret key and the caller name it stands for (`keyed(key)`): what an
        anonymous caller carries to be itself again on a later call."""

    def keyed(self, key: str) -> str:
        """The caller name a key stands for."""

    def fresh_id(self) -> str:
        """A new unique id (a uuid) for something the caller creates."""


@attrs.frozen
class Tool:
    """One MCP tool a world offers (`World.tools`).

    `args` is an attrs class with bounds (protocol/bounds.py): the host derives the JSON
    Schema from it and checks arguments with the protocol's strict converter, so MCP
    arguments meet the same bounds and the same plain-sentence refusals as the websocket.
    `describe` gives an argument's schema description and `keywords` more JSON Schema
    keywords of an argument (e.g. a `pattern` the tool checks itself); `unknown`
    (argument, sentence) is the refusal the host gives when the world the tool asks does
    not exist, naming the argument rather than the op. The host checks `role` before
    `run(call, args) -> ToolResult | Refusal` runs.
    """

    name: str
    title: str
    description: str
    args: type
    run: Callable[[ToolCall, Any], Awaitable[ToolResult | Refusal]]
    role: str = "spectator"
    describe: Mapping[str, str] = attrs.field(factory=dict)
    keywords: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    unknown: tuple[str, str] | None = None


# A world's name (the part of its id after `kind:`), and as a tool's argument, bare or
# keyed (`NAME~KEY`, an anonymous caller's).
WORLD_NAME = r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,79}"
KEYED_NAME = rf"^{WORLD_NAME}(~[A-Za-z0-9_-]+)?$"


def with_keywords(tools: Sequence[Tool], keywords: Mapping[str, Mapping[str, Any]]
                  ) -> tuple[Tool, ...]:
    """`tools`, each given the `keywords` of the arguments it has (a tool's own win)."""
    return tuple(attrs.evolve(tool, keywords={
        **{k: v for k, v in keywords.items() if k in attrs.fields_dict(tool.args)},
        **tool.keywords}) for tool in tools)


@attrs.frozen
class Prompt:
    """An MCP prompt a world offers (`World.prompts`): `text(call)` is its one message."""

    name: str
    title: str
    description: str
    text: Callable[[ToolCall], Awaitable[str]]


def _never(*_: Any) -> bool:
    return False


def _zero(_: Any) -> int:
    return 0


def creates_any(_name: str) -> bool:
    """Every name: the create op refuses none for its name."""
    return True


@attrs.frozen
class World(Generic[S, E]):
    """One world kind, as a value. See the module docstring for the contract of each part.

    - `ops`: the kind's op declarations (`protocol/ops/<kind>.py`); every op is answered by
      exactly one of `moves`, `reads` or the effect actor's `effects`.
    - `create`: the op that brings a world of this kind to life (a key of `moves`, or of
      the effect actor's `effects`), None when worlds of the kind are only declared.
    - `seat`: the op that seats a new player (the field's join), which the server holds to
      each client's `joins_per_hour` budget; None when players need no seat.
    - `declared(name, t)`: True for names that exist without being created.
    - `creatable(name)`: False for names the `create` op refuses (a refusal for a world
      that does not exist then names no op that would create it).
    - `is_noop(event)`: a decided event that changes nothing; it is neither stored nor
      folded, but `result` still sees it.
    - `transient(event)`: an event folded into the state in memory but never stored or
      published (state a seed keeps in memory only, such as the lab's strikes: gone after
      a restart).
    - `actor`: the `WorldActor` subclass for effects a table cannot express (generation
      off the task, timers, asking other worlds); None runs the plain host.
    - `tools`, `prompts`: what the world offers agents over MCP (`Tool`, `Prompt`);
      server/mcp.py hosts every world's, knowing none of them.
    - `summary(state)`: what the lobby lists of a world (e.g. `{"state": "live",
      "agents": 3}`); the lobby keeps the last one it saw, so it survives unloads.
    - `internal`: the messages other worlds send this one that are not ops (no client can
      send them: a room's win claim to the board, a world's summary to the lobby). Each
      class names itself (`wire`, unique among the kind's) and has `to_wire()` (a JSON
      object) and the classmethod `from_wire(data)`, so a cluster carries it to the
      process hosting the world; it is told (nobody waits), so delivering it twice must
      do no harm. A message of another class reaches only a world on this process.
    """

    kind: str
    initial: Callable[[str], S]  # the world's name -> its state at revision 0
    evolve: Callable[[S, E], S]
    codec: Codec[S, E]
    view: Callable[[S], Any]  # the JSON value of a `snapshot` push
    ops: tuple[Any, ...]  # protocol.registry.OpSpec values
    moves: Mapping[str, Move[S, E]] = attrs.field(factory=dict)
    reads: Mapping[str, Read[S]] = attrs.field(factory=dict)
    create: str | None = None
    create_role: str = "owner"
    seat: str | None = None
    declared: Callable[[str, int], bool] = _never
    creatable: Callable[[str], bool] = creates_any
    codes: type[StrEnum] | None = None
    seed: Callable[[S], int] = _zero
    is_noop: Callable[[E], bool] = _never
    transient: Callable[[E], bool] = _never
    snapshot: StateCodec[S] | None = None
    listed: bool = True  # the lobby lists worlds of this kind
    # A house world (the lobby, the owner's console): never unloaded to make room and not
    # counted against the process's max_live_worlds (actors/runtime/directory.py).
    resident: bool = False
    # Spectators may subscribe (its stored events are pushed as they are). A world whose
    # events carry what only some callers may see (the lab's unproven code) says False:
    # every subscription to it is refused, on this process and through a cluster.
    followable: bool = True
    # Seconds between pushes (0: after every batch) and pushes a second the whole topic
    # may take; see actors.runtime.Actor.
    push_interval: float = 0.0
    fanout_rate: float = float("inf")
    actor: type | None = None
    # MCP tools and prompts the world offers (server/mcp.py hosts them; see Tool).
    tools: tuple[Tool, ...] = ()
    prompts: tuple[Prompt, ...] = ()
    # What the lobby shows of a world beyond its id and revision (state, agents, ...), as
    # a JSON object, or None for nothing more.
    summary: Callable[[S], Mapping[str, Any] | None] = attrs.field(default=lambda _s: None)
    # Work a server does once, off its trio thread, as it starts (e.g. compiling the field's
    # solver kernels), so no first request pays for it; None for nothing.
    warm: Callable[[], Any] | None = None
    internal: tuple[type, ...] = ()

    def op_names(self) -> frozenset[str]:
        """The names of the ops this world declares."""
        return frozenset(spec.name for spec in self.ops)
