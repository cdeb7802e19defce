"""The field world's table: its state beside the fold, its stored events, moves and reads.

The state (`Live`) is the fold `State` plus what the live field keeps beside it: the
history checkpoints (for `field.history`), which caller joined each agent (only that
caller may write for it), the growth period, and two parts the effects set, never an
event: the secret (`truth`, the generator's `Field`) and whether a generation runs.

Stored events are the referee's events as JSON (`events.event_to_json`) plus `dirty`
(the map tiles the event changed, for renderers) and, on joins, `caller`; `Joined` is a
join with its caller. The store snapshot (`dump` / `load`) holds the fold state, the
callers and the growth period; a restored field's history starts at it. Generation,
growth and the merged leaderboard are effects (actor.py): the ops here are pure over
`Live`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

from actors.field import live, referee
from actors.field.events import (
    Event,
    JoinEvent,
    ManifestEvent,
    as_kept,
    event_from_json,
    event_to_json,
    is_noop,
)
from actors.field.fold import IMPLICIT_AGENT, State, apply_event, new_state, replay
from actors.field.generate import Field
from actors.field.health import dead_message, health_note, health_of
from actors.field.observe import observe
from actors.field.prompt import PROMPTS
from actors.field.rules_text import RULES_TEXT
from actors.field.snapshot import state_from_json, state_to_json
from actors.field.tools import TOOLS
from actors.field.warm import warm
from actors.world import Codec, Ctx, Move, Read, Refusal, StateCodec, World
from protocol.errors import ErrorCode
from protocol.ops import field as ops
from protocol.ops.field import FieldCode
from protocol.text import utf16_clip

KIND = "field"
JOIN_PURPOSE = 11  # SeedSequence spawn key of the join seating generator


@attrs.frozen
class Joined:
    """A join, and the caller that may write for the agent from now on."""

    event: JoinEvent
    caller: str


FieldEvent = Event | Joined


@attrs.frozen
class Live:
    """One live field: the fold state and what is kept beside it (see the module doc)."""

    game: str
    state: State = attrs.field(factory=new_state)
    # Append-only and keyed by revision, so every Live of one field shares it.
    history: live.History = attrs.field(factory=live.History, eq=False)
    callers: Mapping[str, str] = attrs.field(factory=dict)
    grow_every: float | None = None
    truth: Field | None = attrs.field(default=None, eq=False)  # set by the effects
    generating: bool = False  # set by the effects
    progress: live.Progress | None = None  # of the generation running, set by the effects
    failed: bool = False  # its first generation raised (logged), set by the effects

    @property
    def actor_id(self) -> str:
        """`field:<game id>`."""
        return f"{KIND}:{self.game}"

    @property
    def status(self) -> str:
        """`ready` once the manifest is stored, else `generating` or `none`."""
        if self.state.manifest is not None:
            return "ready"
        return "generating" if self.generating else "none"


# ---- state, events, codec -----------------------------------------------------------------

def initial(game: str) -> Live:
    """A field with no manifest yet."""
    return Live(game)


def _inner(ev: FieldEvent) -> Event:
    return ev.event if isinstance(ev, Joined) else ev


def evolve(w: Live, ev: FieldEvent) -> Live:
    """Fold one event (the checkpoints are kept as it goes)."""
    inner = _inner(ev)
    after = apply_event(w.state, inner)
    w.history.add(as_kept(inner), after)
    changes: dict[str, Any] = {"state": after}
    if isinstance(ev, Joined):
        changes["callers"] = {**w.callers, inner.agent: ev.caller}
    elif isinstance(inner, ManifestEvent):
        every = dict(inner.manifest.params).get("grow_every")
        changes["grow_every"] = float(every) if every else None
    return attrs.evolve(w, **changes)


def encode(ev: FieldEvent, after: Live) -> dict[str, Any]:
    """The stored record: the event's JSON (`as_kept`), the map tiles it dirtied, a join's
    caller."""
    inner = _inner(ev)
    record = {**event_to_json(as_kept(inner)), "dirty": sorted(after.state.dirty)}
    if isinstance(ev, Joined):
        record["caller"] = ev.caller
    return record


def decode(record: dict[str, Any]) -> FieldEvent:
    """The event of a stored record (`dirty` is derived again by the fold)."""
    ev = event_from_json({k: v for k, v in record.items() if k not in ("dirty", "caller")})
    return Joined(ev, record["caller"]) if "caller" in record else ev


def replayed(game: str, records: Iterable[dict[str, Any]]) -> Live:
    """The field folded from its stored records (its history included)."""
    w = initial(game)
    for record in records:
        w = evolve(w, decode(record))
    return w


def folded(start: State, records: Iterable[dict[str, Any]], revision: int) -> State:
    """The state at `revision`: `start` with the stored records after it folded in;
    ValueError when they do not reach `revision` (not all stored yet)."""
    s = replay((_inner(decode(record)) for record in records), start)
    if s.revision != revision:
        raise ValueError(f"the stored events end at revision {s.revision}, not {revision}")
    return s


# The snapshot's layout: `load` refuses any other, and the runtime then folds the stream.
SNAPSHOT_VERSION = 1


def dump(w: Live) -> dict[str, Any]:
    """The field as its store snapshot: the fold state (snapshot.py) and what is kept
    beside it; not the history (a restored field's starts at this state), nor what the
    effects set (the secret is loaded again; generation and progress are not durable)."""
    return {"v": SNAPSHOT_VERSION, "game": w.game, "callers": dict(w.callers),
            "grow_every": w.grow_every, "state": state_to_json(w.state)}


def load(data: Any) -> Live:
    """The field of `dump`'s snapshot; ValueError for a snapshot of another version
    (KeyError, TypeError or ValueError for one `dump` never wrote)."""
    version = data.get("v") if isinstance(data, dict) else None
    if version != SNAPSHOT_VERSION:
        raise ValueError(f"field snapshot version {version!r}, not {SNAPSHOT_VERSION}")
    state = state_from_json(data["state"])
    return Live(data["game"], state, live.History(state), dict(data["callers"]),
                data["grow_every"])


def _noop(ev: FieldEvent | Rejoined) -> bool:
    return isinstance(ev, Rejoined) or (not isinstance(ev, Joined) and is_noop(ev))


def seed(w: Live) -> int:
    """The field's seed (the generators of its moves derive from it)."""
    m = w.state.manifest
    return dict(m.params).get("seed", 0) if m is not None else 0


def declared(game: str, t: int) -> bool:
    """The daily field of the day `t` falls on (UTC) exists without a start."""
    day = live.daily_date(game)
    return day is not None and day == utc_day(t)


def creatable(game: str) -> bool:
    """`field.start` starts a game of this id: 1-80 of [a-zA-Z0-9_-], not a daily name."""
    return bool(live.GAME_ID_RE.match(game)) and live.daily_date(game) is None


def utc_day(t: int) -> Any:
    """The UTC date of `t` (ms since the epoch)."""
    return datetime.fromtimestamp(t / 1000, UTC).date()


# ---- decisions ------------------------------------------------------------------------------

def unready(w: Live) -> Refusal | None:
    """Why ops other than `field.start` cannot run yet, or None once the field is ready."""
    if w.state.manifest is not None:
        return None
    if w.generating:
        done = "" if w.progress is None else f" ({w.progress.text()})"
        return Refusal(FieldCode.GENERATING, f"{w.actor_id} is being generated{done}; retry "
                       "in a moment", {"retry_after": 1.0, **(
                           {} if w.progress is None else {"progress": w.progress.to_json()})})
    if w.failed:
        return Refusal(ErrorCode.UNKNOWN_ACTOR, f"the field {w.game!r} could not be generated "
                       "(the failure is logged); field.start starts it again",
                       {"actor": w.actor_id})
    return Refusal(ErrorCode.UNKNOWN_ACTOR, f"there is no field {w.game!r}; field.start "
                   "creates it", {"actor": w.actor_id})


def _owned(w: Live, agent: str, caller: str) -> Refusal | None:
    owner = w.callers.get(agent)
    if owner is not None and owner != caller and agent != IMPLICIT_AGENT:
        shown = agent[:ops.MAX_AGENT]
        return Refusal(ErrorCode.FORBIDDEN, f"agent {shown} belongs to another caller; "
                       "write only as the agent you joined", {"agent": shown})
    return None


@attrs.frozen
class Rejoined:
    """A join answered with the caller's agent that died today (nothing is stored)."""

    agent: str


def machine_digest(machine_id: str) -> str:
    """What a join stores of a machine id: a digest (spectators read join events)."""
    if not machine_id:
        return ""
    return hashlib.sha256(f"petridish-machine:{machine_id}".encode()).hexdigest()[:24]


def decide_join(w: Live, a: ops.JoinArgs, ctx: Ctx) -> list[Joined | Rejoined] | Refusal:
    """Seat a new agent (the caller may write for it from now on), or give back the agent
    of this user or machine that died today: death is for the day."""
    if (r := unready(w)) is not None:
        return r
    kept = ops.MAX_NAME
    user, machine = utf16_clip(a.user or ctx.caller.name, kept), machine_digest(a.machine_id)
    dead = referee.dead_agent(w.state, user, machine)
    if dead is not None:
        return [Rejoined(dead)]
    ev = referee.join(w.state, ctx.rng, name=a.name, model=utf16_clip(a.model, kept), user=user,
                      harness=utf16_clip(a.harness, kept), t=ctx.t, machine=machine)
    return ev if isinstance(ev, Refusal) else [Joined(ev, ctx.caller.name)]


def _writer(w: Live, agent: str | None, ctx: Ctx, expected: int
            ) -> tuple[str, list[Event], State, int] | Refusal:
    """Who writes and on which state: the named agent, or the implicit a0 (joined by its
    first write, before the write itself). As the seed's referee: the revision is checked
    first, then a dead agent hears `dead` before any other check, whoever asks (its state
    is public)."""
    if (r := unready(w)) is not None:
        return r
    s = w.state
    if expected != s.revision:
        return referee.stale(s, expected)
    name = IMPLICIT_AGENT if agent is None else agent
    i = s.agent_index(name)
    if i is not None and s.stats[i].health.died_at is not None:
        return Refusal(FieldCode.DEAD, dead_message(name, s.stats[i].health.died_at),
                       {"died_at": s.stats[i].health.died_at})
    if (r := _owned(w, name, ctx.caller.name)) is not None:
        return r
    if agent is None and i is None:
        ev = referee.implicit_join(s, ctx.t)
        if isinstance(ev, Refusal):
            return ev
        return name, [ev], apply_event(s, ev), s.revision + 1
    return name, [], s, expected


def decide_reveal(w: Live, a: ops.RevealArgs, ctx: Ctx) -> list[Event] | Refusal:
    """Reveal a tile on the agent's frontier."""
    writer = _writer(w, a.agent, ctx, a.expected_revision)
    if isinstance(writer, Refusal):
        return writer
    agent, pre, s, expected = writer
    ev = referee.reveal(s, w.truth, agent=agent, tile=a.tile, t=ctx.t,
                        expected_revision=expected, intent=a.intent)
    return ev if isinstance(ev, Refusal) else [*pre, ev]


def decide_commit(w: Live, a: ops.CommitArgs, ctx: Ctx) -> list[Event] | Refusal:
    """Judge a batch of cells (a batch that changes nothing is a no-op, not stored)."""
    writer = _writer(w, a.agent, ctx, a.expected_revision)
    if isinstance(writer, Refusal):
        return writer
    agent, pre, s, expected = writer
    ev = referee.commit(s, w.truth, agent=agent, cells=a.cells, intent=a.intent, t=ctx.t,
                        expected_revision=expected)
    return ev if isinstance(ev, Refusal) else [*pre, ev]


def decide_retract(w: Live, a: ops.RetractArgs, ctx: Ctx) -> list[Event] | Refusal:
    """Take back the agent's own accepted cells."""
    writer = _writer(w, a.agent, ctx, a.expected_revision)
    if isinstance(writer, Refusal):
        return writer
    agent, pre, s, expected = writer
    ev = referee.retract(s, agent=agent, cells=a.cells, t=ctx.t, expected_revision=expected,
                         intent=a.intent)
    return ev if isinstance(ev, Refusal) else [*pre, ev]


# ---- results and reads ----------------------------------------------------------------------

def joined(w: Live, events: list[Joined | Rejoined], _a: Any) -> ops.JoinResult:
    """The agent id and seat of a join (with its health when it was a dead agent's)."""
    ev = events[0]
    s = w.state
    if isinstance(ev, Rejoined):
        i = s.agent_index(ev.agent)
        h = health_of(s.stats[i].health)
        return ops.JoinResult(ev.agent, s.agents[i].seed_tile, s.revision, h.to_json(),
                              health_note(h))
    return ops.JoinResult(ev.event.agent, ev.event.seed_tile, s.revision)


def revealed(w: Live, events: list[Event], _a: Any) -> ops.RevealResult:
    """The givens revealed, tiles solved and meets."""
    ev = events[-1]
    j = event_to_json(ev)
    return ops.RevealResult(w.state.revision, ev.tile, j["givens"], j["solved"], j["meets"])


def committed(w: Live, events: list[Event], _a: Any) -> ops.CommitResult:
    """The verdicts, read off the state after the commit (or unchanged, for a no-op)."""
    return ops.CommitResult(**referee.commit_result(w.state, events[-1]))


def retracted(w: Live, events: list[Event], _a: Any) -> ops.RetractResult:
    """The cells taken back and those ignored."""
    j = event_to_json(events[-1])
    return ops.RetractResult(w.state.revision, j["retracted"], j["ignored"])


def read_observe(w: Live, a: ops.ObserveArgs, _ctx: Ctx) -> ops.ObserveResult | Refusal:
    """Tiles, known cells and agents around an agent or in a rectangle."""
    if (r := unready(w)) is not None:
        return r
    out = observe(w.state, a.agent, a.rect)
    return out if isinstance(out, Refusal) else ops.ObserveResult(**out)


def read_rules(w: Live, _a: Any, _ctx: Ctx) -> ops.RulesResult | Refusal:
    """The rules text and this game's settings."""
    if (r := unready(w)) is not None:
        return r
    rules = w.state.rules
    grow = None if w.grow_every is None else ops.GrowPolicy(w.grow_every)
    return ops.RulesResult(RULES_TEXT, rules.guess, rules.depth, rules.fog, grow)


def read_history(w: Live, a: ops.HistoryArgs, _ctx: Ctx) -> ops.FieldView | Refusal:
    """The spectator view at an earlier revision, off the events the history holds (the
    actor's `field.history` effect folds the stored ones for the others)."""
    if (r := unready(w)) is not None:
        return r
    rev = w.state.revision
    if not 1 <= a.revision <= rev:
        return Refusal(ErrorCode.BAD_REQUEST, f"args.revision: must be between 1 and {rev}, "
                       "the field's revision now",
                       {"path": "args.revision", "revision": rev})
    return history_view(w, w.history, a.revision)


def history_view(w: Live, history: live.History, revision: int) -> ops.FieldView:
    """The spectator view of field `w` at `revision`, read off `history`."""
    return past_view(w.game, history.state_at(revision))


def past_view(game: str, state: State) -> ops.FieldView:
    """The spectator view of `state`, a past state of field `game`."""
    return ops.FieldView(live.view_of(state, game, "ready"))


def view(w: Live) -> dict[str, Any]:
    """The spectator view (a snapshot push); while generating, its progress."""
    out = live.view_of(w.state, w.game, w.status)
    if w.progress is not None and w.generating and w.state.manifest is None:
        out["progress"] = w.progress.to_json()
    return out


def summary(w: Live) -> dict[str, Any]:
    """What the lobby lists of a field: its state (generating, live, ended), agents,
    tiles solved of all, the canvas side, its day if daily, and generation progress."""
    s = w.state
    day = live.daily_date(w.game)
    out: dict[str, Any] = {"day": day.isoformat() if day else None}
    if s.manifest is None:
        out["state"] = "generating" if w.generating else "none"
        if w.progress is not None and w.generating:
            out["progress"] = w.progress.to_json()
        return out
    dead = sum(st.health.died_at is not None for st in s.stats)
    out.update(state="ended" if s.ended else "live", agents=len(s.agents), dead=dead,
               tiles=len(s.geo.tiles), solved=s.totals.solved, G=s.manifest.G,
               grown=len(s.grown))
    return out


WORLD = World(
    kind=KIND,
    initial=initial,
    evolve=evolve,
    codec=Codec(encode, decode),
    view=view,
    ops=ops.OPS,
    moves={
        "field.join": Move(decide_join, joined, purpose=JOIN_PURPOSE),
        "field.reveal": Move(decide_reveal, revealed),
        "field.commit": Move(decide_commit, committed),
        "field.retract": Move(decide_retract, retracted),
    },
    reads={
        "field.observe": Read(read_observe),
        "field.rules": Read(read_rules),
        "field.history": Read(read_history),
    },
    create="field.start",
    create_role="agent",
    seat="field.join",
    declared=declared,
    creatable=creatable,
    codes=FieldCode,
    seed=seed,
    is_noop=_noop,
    push_interval=live.PUSH_INTERVAL,
    fanout_rate=live.FANOUT_RATE,
    tools=TOOLS,
    prompts=PROMPTS,
    snapshot=StateCodec(dump, load),
    summary=summary,
    warm=warm,
)
