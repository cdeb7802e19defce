"""The field actor, `field:<game id>`: one live mosaic, refereed, stored, published.

Per write: check the caller owns the agent, decide with `referee` (a refusal raises a
ProtocolError and changes nothing), fold the event and hand it to the runtime
(`commit`), which appends every event of the messages waiting in the mailbox in one
durable append, then replies to them, then publishes. Stored events are the fold's JSON events plus `dirty` (the map tiles they
changed, for renderers) and, on joins, `caller` (who may write for the agent).

The secret (the generator's `Field`: solution and givens) never enters the stream; it
is saved as the snapshot of the side stream `fieldtruth:<game id>` before the event
that needs it (manifest or grow) is appended, so a restart finds it. Generation (the
first field, and each growth ring) runs in a worker thread and comes back as a message.

Spectators get a snapshot (`live.view_of`), then the stored events; the runtime
coalesces them to one push per `push_interval` (`live.PUSH_INTERVAL`: at most 20 a
second), and no event is lost. The daily field
`field:day-YYYY-MM-DD` (UTC) is not generated ahead of time: it starts itself the first
time anything asks for it on its day (the first ask answers `generating`), and then
merges yesterday's board into the all-time board (the snapshot of `fieldboard:alltime`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import attrs
import numpy as np
import trio

from actors.directory import Directory
from actors.field import live, referee
from actors.field.analysis import tallies
from actors.field.events import (
    Event,
    GrowEvent,
    ManifestEvent,
    event_from_json,
    event_to_json,
    is_noop,
)
from actors.field.fold import State, apply_event, new_state
from actors.field.generate import Field, generate_chunks, generate_scatter, grow
from actors.field.leaderboard import Boards, boards_of
from actors.field.observe import observe
from actors.field.rules_text import RULES_TEXT
from actors.runtime import Actor, Call
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops import field as ops
from protocol.ops.field import FieldCode

KIND = "field"
ALLTIME = "fieldboard:alltime"
JOIN_KEY = 11  # SeedSequence spawn key of the join seating generator

log = logging.getLogger("petridish.field")


def _now_ms() -> int:
    return int(time.time() * 1000)


def _today() -> Any:
    return datetime.now(UTC).date()


@attrs.frozen
class _Generated:
    """A worker thread finished generating: the field (None: a growth found no room)."""

    field: Field | None
    plan: live.StartPlan | None  # set for the first field, None for a growth ring


@attrs.frozen
class _GenerationFailed:
    """A worker thread's generation raised (logged there): the field may try again."""


@attrs.frozen
class _GrowTick:
    """Timer: time for a timed growth."""


@attrs.frozen
class _MergeYesterday:
    """Sent once by today's daily field: fold yesterday's board into the all-time board."""


def _refused(r: referee.Refusal) -> ProtocolError:
    """A referee refusal as the wire error (its code: a protocol code or a FieldCode)."""
    return ProtocolError(r.code, r.message, r.detail)


class FieldActor(Actor):
    """One field."""

    kind = KIND
    # The runtime coalesces pushes to one per interval: at most 20 a second per field,
    # every event kept (a push carries all since the last).
    push_interval = live.PUSH_INTERVAL
    fanout_rate = live.FANOUT_RATE

    # ---- state ----------------------------------------------------------------------

    def reset(self) -> None:
        """No field yet."""
        self.game = live.game_of(self.actor_id)
        self.state: State = new_state()
        self.history = live.History()
        self.callers: dict[str, str] = {}  # agent id -> the caller that joined it
        self.truth: Field | None = None
        self.generating = False
        self.grow_every: float | None = None
        self._folded: tuple[dict[str, Any], State] | None = None

    def apply(self, event: dict[str, Any]) -> None:
        """Fold one stored event (reusing the fold the handler already made)."""
        ev = event_from_json({k: v for k, v in event.items() if k not in ("dirty", "caller")})
        if self._folded is not None and self._folded[0] is event:
            after = self._folded[1]
        else:
            after = apply_event(self.state, ev)
        self._folded = None
        self.state = after
        self.history.add(ev, after)
        if "caller" in event:
            self.callers[event["agent"]] = event["caller"]
        if isinstance(ev, ManifestEvent):
            every = dict(ev.manifest.params).get("grow_every")
            self.grow_every = float(every) if every else None

    def view(self) -> dict[str, Any]:
        """The spectator view (a snapshot push)."""
        return live.view_of(self.state, self.game, self._status())

    def _status(self) -> str:
        if self.state.manifest is not None:
            return "ready"
        return "generating" if self.generating else "none"

    # ---- start and restart ----------------------------------------------------------

    async def on_start(self) -> None:
        """Load the secret, arm the growth timer; a daily field of today starts itself."""
        self.generating = False
        if self.state.manifest is not None:
            snap = await self.context.store.load_snapshot(self._truth_stream)
            if snap is None:
                raise RuntimeError(f"{self.actor_id}: the stored field has no secret")
            self.truth = Field.from_dict(snap.data)
            if self.grow_every is not None and not self.state.ended:
                self.every(self.grow_every, _GrowTick())
            return
        day = live.daily_date(self.game)
        if day is not None and day == _today():
            self._generate(live.daily_plan(day))
            self.after(0, _MergeYesterday())

    def creation_events(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Fields are created by `field.start`, not through the lobby."""
        raise ProtocolError(ErrorCode.BAD_REQUEST, "a field is created with field.start "
                            "(to: field:<game id>)", {"path": "args.kind"})

    @property
    def _truth_stream(self) -> str:
        return f"fieldtruth:{self.game}"

    def _generate(self, plan: live.StartPlan | None) -> None:
        """Generate the first field (plan) or the next ring (None) in a worker thread."""
        self.generating = True
        truth = self.truth
        if plan is None:
            assert truth is not None
            geo = self.state.geo
            if len(truth.manifest.tiles) > len(geo.tiles):
                # A crash fell between saving a ring's secret and appending its grow
                # event: that ring is the next growth.
                def work() -> Field | None:
                    return truth
            else:
                def work() -> Field | None:
                    return grow(truth, geo)
        elif plan.layout == "scatter":
            def work() -> Field | None:
                return generate_scatter(plan.seed, plan.size)
        else:
            def work() -> Field | None:
                return generate_chunks(plan.seed, plan.size, plan.chunks, plan.chunk)
        _off_task(work, lambda f: _Generated(f, plan), self)

    async def on_message(self, message: Any) -> None:
        """Generation results, growth ticks and the daily merge."""
        if isinstance(message, _Generated):
            await self._generated(message)
        elif isinstance(message, _GenerationFailed):
            self.generating = False
        elif isinstance(message, _GrowTick):
            self._maybe_grow(timed=True)
        elif isinstance(message, _MergeYesterday):
            await merge_yesterday(self.context.directory, live.daily_date(self.game))

    async def _generated(self, msg: _Generated) -> None:
        self.generating = False
        t = _now_ms()
        if msg.plan is not None:
            if self.state.manifest is not None:
                return  # a restart generated it twice; the first one stands
            field = msg.field
            assert field is not None
            params = dict(field.manifest.params)
            if msg.plan.grow_every is not None:
                params["grow_every"] = msg.plan.grow_every
            manifest = attrs.evolve(field.manifest, params=tuple(sorted(params.items())))
            field = attrs.evolve(field, manifest=manifest)
            await self.context.store.save_snapshot(self._truth_stream, 0, field.to_dict())
            self.truth = field
            await self._append(ManifestEvent(rev=1, t=t, manifest=manifest,
                                             rules=msg.plan.rules))
            if msg.plan.grow_every is not None:
                self.every(msg.plan.grow_every, _GrowTick())
            return
        s = self.state
        if msg.field is None:
            await self._append(GrowEvent(rev=s.revision + 1, t=t, tiles=(), seed_ring=()))
            return
        have = len(s.geo.tiles)
        tiles = msg.field.manifest.tiles[have:]
        rings = msg.field.manifest.seed_rings
        ring = rings[-1] if len(rings) > len(s.manifest.seed_rings) else ()
        await self.context.store.save_snapshot(self._truth_stream, s.revision + 1,
                                               msg.field.to_dict())
        self.truth = msg.field
        await self._append(GrowEvent(rev=s.revision + 1, t=t, tiles=tiles, seed_ring=ring))

    def _maybe_grow(self, *, timed: bool = False) -> None:
        if (self.grow_every is None or self.generating or self.state.ended
                or self.truth is None):
            return
        if timed or live.growth_due(self.state) is not None:
            self._generate(None)

    # ---- writing --------------------------------------------------------------------

    async def _append(self, ev: Event, caller: str | None = None) -> State:
        """Fold `ev`, append it durably with its dirty map tiles, return the new state."""
        after = apply_event(self.state, ev)
        record = {**event_to_json(ev), "dirty": sorted(after.dirty)}
        if caller is not None:
            record["caller"] = caller
        self._folded = (record, after)
        await self.commit([record])
        return after

    def _decided(self, decision: Any) -> Event:
        if isinstance(decision, referee.Refusal):
            raise _refused(decision)
        return decision

    def _ready(self) -> None:
        if self.state.manifest is not None:
            return
        if self.generating:
            raise ProtocolError(FieldCode.GENERATING, f"{self.actor_id} is being generated; "
                             "retry in a moment", {"retry_after": 1.0})
        raise ProtocolError(ErrorCode.UNKNOWN_ACTOR, f"there is no field {self.game!r}; "
                            "field.start creates it", {"actor": self.actor_id})

    def _check_owner(self, agent: str, caller: str) -> None:
        owner = self.callers.get(agent)
        if owner is not None and owner != caller:
            raise ProtocolError(ErrorCode.FORBIDDEN, f"agent {agent[:80]} belongs to another "
                                "caller; write only as the agent you joined",
                                {"agent": agent[:80]})

    # ---- ops ------------------------------------------------------------------------

    async def handle(self, call: Call) -> Any:
        """Dispatch one field op."""
        if call.op == "field.start":
            return self._start(call.args)
        self._ready()
        handler: Callable[[Call], Any] = getattr(self, "_op_" + call.op.partition(".")[2])
        return await handler(call)

    def _start(self, a: ops.StartArgs) -> ops.StartResult:
        if self.state.manifest is not None:
            raise ProtocolError(ErrorCode.ALREADY_EXISTS, f"the field {self.game!r} exists",
                                {"actor": self.actor_id, "revision": self.state.revision})
        if not live.GAME_ID_RE.match(self.game) or live.daily_date(self.game) is not None:
            raise ProtocolError(ErrorCode.BAD_REQUEST, "to: a started game id is 1-80 of "
                                "[a-zA-Z0-9_-] and not a daily name", {"path": "to"})
        if not self.generating:
            try:
                plan = live.plan_start(a.seed, a.size, a.canvas, a.chunks, a.chunk, a.guess,
                                       a.depth, a.grow.every_s if a.grow else None, a.fog)
            except live.StartError as exc:
                raise ProtocolError(ErrorCode.BAD_REQUEST, str(exc), {"path": exc.path}) from None
            self._generate(plan)
        return ops.StartResult(self.game, "generating", self.state.revision)

    async def _op_join(self, call: Call) -> ops.JoinResult:
        a: ops.JoinArgs = call.args
        s = self.state
        rng = np.random.default_rng(np.random.SeedSequence(
            dict(s.manifest.params).get("seed", 0), spawn_key=(JOIN_KEY, s.revision)))
        ev = self._decided(referee.join(s, rng, name=a.name, model=a.model[:80],
                                        user=(a.user or call.caller)[:80],
                                        harness=a.harness[:80], t=_now_ms()))
        await self._append(ev, caller=call.caller)
        return ops.JoinResult(ev.agent, ev.seed_tile, self.state.revision)

    async def _op_observe(self, call: Call) -> ops.ObserveResult:
        a: ops.ObserveArgs = call.args
        out = observe(self.state, a.agent, a.rect)
        if isinstance(out, referee.Refusal):
            raise _refused(out)
        return ops.ObserveResult(**out)

    async def _op_reveal(self, call: Call) -> ops.RevealResult:
        a: ops.RevealArgs = call.args
        self._check_owner(a.agent, call.caller)
        ev = self._decided(referee.reveal(self.state, self.truth, agent=a.agent, tile=a.tile,
                                          t=_now_ms(), expected_revision=a.expected_revision))
        await self._append(ev)
        self._maybe_grow()
        j = event_to_json(ev)
        return ops.RevealResult(self.state.revision, ev.tile, j["givens"], j["solved"],
                                j["meets"])

    async def _op_commit(self, call: Call) -> ops.CommitResult:
        a: ops.CommitArgs = call.args
        self._check_owner(a.agent, call.caller)
        ev = self._decided(referee.commit(self.state, self.truth, agent=a.agent, cells=a.cells,
                                          intent=a.intent, t=_now_ms(),
                                          expected_revision=a.expected_revision))
        if not is_noop(ev):
            await self._append(ev)
            self._maybe_grow()
        return ops.CommitResult(**referee.commit_result(self.state, ev))

    async def _op_retract(self, call: Call) -> ops.RetractResult:
        a: ops.RetractArgs = call.args
        self._check_owner(a.agent, call.caller)
        ev = self._decided(referee.retract(self.state, agent=a.agent, cells=a.cells,
                                           t=_now_ms(), expected_revision=a.expected_revision))
        if not is_noop(ev):
            await self._append(ev)
        j = event_to_json(ev)
        return ops.RetractResult(self.state.revision, j["retracted"], j["ignored"])

    async def _op_rules(self, call: Call) -> ops.RulesResult:
        r = self.state.rules
        grow_policy = None if self.grow_every is None else ops.GrowPolicy(self.grow_every)
        return ops.RulesResult(RULES_TEXT, r.guess, r.depth, r.fog, grow_policy)

    def board(self) -> Boards:
        """This field's board per user and per model."""
        return boards_of(tallies(self.state))

    async def _op_leaderboard(self, call: Call) -> ops.LeaderboardResult:
        board = self.board()
        day = live.daily_date(self.game)
        if not call.args.merged:
            days = [day.isoformat()] if day else []
            return ops.LeaderboardResult(**board.to_json(), days=days)
        alltime = await load_alltime(self.context.store)
        merged, days = live.with_today(alltime, day.isoformat() if day else None, board)
        return ops.LeaderboardResult(**merged.to_json(), days=days)

    async def _op_history(self, call: Call) -> ops.FieldView:
        rev = call.args.revision
        if not 1 <= rev <= self.state.revision:
            raise ProtocolError(ErrorCode.BAD_REQUEST, f"args.revision: 1..{self.state.revision}",
                                {"path": "args.revision", "revision": self.state.revision})
        return ops.FieldView(live.view_of(self.history.state_at(rev), self.game, "ready"))


def _off_task(work: Callable[[], Field | None], wrap: Callable[[Field | None], Any],
              actor: Actor) -> None:
    """Run `work` in a worker thread and tell `actor` `wrap(result)` when it is done."""
    token = trio.lowlevel.current_trio_token()

    async def deliver(message: Any) -> None:
        while True:
            try:
                actor.tell(message)
                return
            except ProtocolError as error:
                if error.code != ErrorCode.OVERLOADED:
                    return  # the actor stopped: nobody to tell
                await trio.sleep(0.05)

    def run() -> None:
        try:
            message = wrap(work())
        except Exception:  # logged here; the actor hears of it and may try again
            log.exception("%s: generation failed", actor.actor_id)
            message = _GenerationFailed()
        try:
            trio.from_thread.run(deliver, message, trio_token=token)
        except trio.RunFinishedError:
            pass  # the server stopped meanwhile

    threading.Thread(target=run, name=f"generate {actor.actor_id}", daemon=True).start()


# ---- the all-time board and the daily field ---------------------------------------------


async def load_alltime(store: Any) -> live.AllTime:
    """The all-time board as stored (empty before the first merged day)."""
    snap = await store.load_snapshot(ALLTIME)
    return live.AllTime() if snap is None else live.AllTime.from_json(snap.data)


async def merge_yesterday(directory: Directory, today: Any) -> bool:
    """Merge yesterday's daily board into the all-time board once; True when it merged."""
    day = live.yesterday(today)
    actor_id = f"{KIND}:{live.daily_id(day)}"
    store = directory.store
    alltime = await load_alltime(store)
    if day.isoformat() in alltime.days or await store.revision(actor_id) == 0:
        return False
    actor = await directory.get(actor_id)
    result = await actor.ask(Call("field.leaderboard", ops.LeaderboardArgs(), "owner", "daily"))
    board = Boards.from_json({"users": result.users, "models": result.models})
    merged = live.merge_day(alltime, day.isoformat(), board)
    await store.save_snapshot(ALLTIME, len(merged.days), merged.to_json())
    return True
