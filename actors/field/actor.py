"""The field's effects, for what its table (rules.py) cannot express.

- `field.start` (the create op) plans the field and generates it off the actor's task
  (`offload`); the result comes back as a message, and the manifest is its first event.
- Growth: a timer (`every`) and the triggers checked after reveals and commits generate
  the next ring the same way.
- The secret (the generator's `Field`: solution and givens) never enters the stream; it is
  saved as the snapshot of the side stream `fieldtruth:<game id>` before the event that
  needs it (manifest or grow) is appended, so a restart finds it.
- History: a field loaded from its store snapshot holds no history before it; the first
  `field.history` ask for an earlier revision has the stored events up to the snapshot
  folded again off the task (`offload`), and it and the asks after it wait for that. A
  field holds only its latest events (`live.History`): an ask for an older revision folds
  the stored events after its checkpoint off the task, for that ask alone.
- The daily field `field:day-YYYY-MM-DD` (UTC) is declared by its kind on its day: it is
  not generated ahead of time but starts itself the first time anything asks for it (the
  first ask answers `generating`), then merges yesterday's board into the all-time board
  (the snapshot of `fieldboard:alltime`), which `field.leaderboard {merged}` reads a page
  of. A field keeps the all-time board it read for ALLTIME_EVERY seconds (it changes once
  a day): a page then costs the page and this field's board, not every row of every day.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import trio

from actors.field import live, rules
from actors.field.analysis import tallies
from actors.field.events import GrowEvent, ManifestEvent
from actors.field.generate import Field, generate_chunks, generate_scatter, grow
from actors.field.leaderboard import Boards, boards_of
from actors.lobby.actor import Seen
from actors.runtime import Call, Directory, Timer, WorldActor, refused
from actors.runtime.deferred import Deferred
from actors.runtime.host import Effect
from actors.runtime.offload import thread_timed
from actors.store import EventStore, decoded
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops import field as ops
from protocol.ops.lobby import LOBBY_ID

ALLTIME = "fieldboard:alltime"
PROGRESS_EVERY = 0.2  # seconds between progress pushes to spectators
LOBBY_EVERY = 2.0  # seconds between summaries told the lobby while only the figures move
ALLTIME_EVERY = 300.0  # seconds a field answers from the all-time board it read


def _what(summary: Any) -> Any:
    """What a field is, in its summary (a change of it is told the lobby at once)."""
    return None if summary is None else (summary.get("state"), summary.get("agents"),
                                         summary.get("dead"))

log = logging.getLogger("petridish.field")


@attrs.frozen
class _Generated:
    """Generation finished: the field (None: a growth found no room)."""

    field: Field | None
    plan: live.StartPlan | None  # set for the first field, None for a growth ring


@attrs.frozen
class _GenerationFailed:
    """Generation raised (logged by the runtime): the field may try again."""


@attrs.frozen
class _Progressed:
    """How far the generation running got (posted from its worker thread)."""

    progress: live.Progress


@attrs.frozen
class _GrowTick:
    """Timer: time for a timed growth."""


@attrs.frozen
class _TellLobby:
    """Timer: a summary held back by LOBBY_EVERY is due."""


@attrs.frozen
class _MergeYesterday:
    """Sent once by today's daily field: fold yesterday's board into the all-time board."""


@attrs.define
class _Earlier:
    """The history before the snapshot the field was loaded from, being folded again from
    the stored events (off the task) for the `field.history` asks waiting on it."""

    history: live.History  # the history it completes
    waiting: list[tuple[Deferred, int]] = attrs.field(factory=list)  # (answer, revision)


@attrs.frozen
class _EarlierFolded:
    """The stored events before the snapshot were folded (None: that failed, logged)."""

    earlier: _Earlier
    history: live.History | None
    seconds: float = 0.0  # of the worker thread's CPU the fold took


@attrs.frozen
class _Replayed:
    """A past view folded from the stored events for an ask (None: that failed, logged)."""

    answer: Deferred
    revision: int
    view: ops.FieldView | None
    seconds: float = 0.0  # of the worker thread's CPU the fold took


# Asks for revisions whose events are not held, read from the store and folded at once per
# field (each holds up to a checkpoint spacing of rows until its fold runs): more are
# refused `overloaded`, so a spectator asking many cannot queue reads and folds without end.
MAX_REPLAYS = 4


def truth_stream(game: str) -> str:
    """The side stream whose snapshot holds a field's secret."""
    return f"fieldtruth:{game}"


class FieldActor(WorldActor):
    """One field: the table's ops, plus generation, growth and the daily board; it tells
    the lobby its summary whenever that changes."""

    state: rules.Live
    _told: Any = None  # the summary the lobby heard last
    _told_at = -1e9  # trio time it heard it
    _tell_armed = False  # a _TellLobby is on its way for a summary held back
    _progress_at = -1e9  # trio time of the last progress push
    _alltime: tuple[float, live.AllTimeRows] | None = None  # (trio time read, the board)
    _earlier: _Earlier | None = None  # the fold of the history before the snapshot, running
    _replays = 0  # asks of revisions not held being read and folded (MAX_REPLAYS)
    _grow_timer: Timer | None = None  # the timed growth's, armed until the field ends

    # ---- start and restart ----------------------------------------------------------

    async def handle(self, call: Call) -> Any:
        """Any op, then the lobby hears of a change of the field's summary."""
        try:
            return await super().handle(call)
        finally:
            self._tell_lobby()

    def _tell_lobby(self) -> None:
        """Tell the lobby a new summary: at once when what the field is changed (its state,
        its agents, its dead), else at most every LOBBY_EVERY seconds (solved tiles,
        growths, progress move with play). A summary held back is told when its time comes,
        even if no other message arrives by then."""
        summary = rules.summary(self.state)
        if summary == self._told or summary["state"] == "none":  # "none": nothing exists
            return
        now = trio.current_time()
        if _what(summary) == _what(self._told) and now - self._told_at < LOBBY_EVERY:
            if not self._tell_armed:
                self._tell_armed = True
                self.after(LOBBY_EVERY - (now - self._told_at), _TellLobby())
            return
        self._told, self._told_at = summary, now
        self.tell_when_durable(LOBBY_ID, Seen(self.actor_id, dict(summary)))

    async def on_start(self) -> None:
        """Load the secret, arm the growth timer; a daily field of today starts itself."""
        await self._start_up()
        self._tell_lobby()

    async def _start_up(self) -> None:
        w = self.state
        if w.state.manifest is not None:
            snap = await self.load_side(truth_stream(w.game))
            if snap is None:
                raise RuntimeError(f"{self.actor_id}: the stored field has no secret")
            self.state = attrs.evolve(w, truth=Field.from_dict(snap.data))
            if w.grow_every is not None and not w.state.ended:
                # (timed growth is stored progress: it holds the field loaded until the
                # field ends, which cancels it; an ended field idles and unloads)
                self._grow_timer = self.every(w.grow_every, _GrowTick())
            return
        day = live.daily_date(w.game)
        if day is not None and day == rules.utc_day(self.now()):
            self._generate(live.daily_plan(day))
            self.after(0, _MergeYesterday())

    def _generate(self, plan: live.StartPlan | None) -> None:
        """Generate the first field (plan) or the next ring (None) off the actor's task;
        its progress comes back as messages too."""
        w = self.state
        self.state = attrs.evolve(w, generating=True, progress=None, failed=False)
        truth = w.truth
        token = trio.lowlevel.current_trio_token()

        def progress(stage: str, done: int, planned: int) -> None:  # in the worker thread
            try:
                token.run_sync_soon(self._post, _Progressed(live.Progress(stage, done, planned)))
            except trio.RunFinishedError:
                pass
        if plan is None:
            assert truth is not None
            geo = w.state.geo
            if len(truth.manifest.tiles) > len(geo.tiles):
                # A crash fell between saving a ring's secret and appending its grow
                # event: that ring is the next growth.
                def work() -> Field | None:
                    return truth
            else:
                def work() -> Field | None:
                    return grow(truth, geo, progress)
        elif plan.layout == "scatter":
            def work() -> Field | None:
                return generate_scatter(plan.seed, plan.size, progress)
        else:
            def work() -> Field | None:
                return generate_chunks(plan.seed, plan.size, plan.chunks, plan.chunk, progress)
        self.offload(work, lambda f: _Generated(f, plan), _GenerationFailed)

    def _post(self, message: Any) -> None:
        """Post a message to ourselves from the trio thread (dropped when full or stopped)."""
        try:
            self.tell(message)
        except ProtocolError:
            pass

    async def _progressed(self, msg: _Progressed) -> None:
        """Keep the progress; push it to spectators and the lobby every PROGRESS_EVERY."""
        if not self.state.generating:
            return
        self.state = attrs.evolve(self.state, progress=msg.progress)
        now = trio.current_time()
        last = msg.progress.stage == "givens" and msg.progress.done == msg.progress.planned
        if last or now - self._progress_at >= PROGRESS_EVERY:
            self._progress_at = now
            if self.state.state.manifest is None:
                self.publish_view()  # the first generation: a snapshot with the progress
            self._tell_lobby()

    async def on_message(self, message: Any) -> None:
        """Generation results and progress, growth ticks and the daily merge."""
        if isinstance(message, _Progressed):
            await self._progressed(message)
            return
        if isinstance(message, _EarlierFolded):
            await self._earlier_folded(message)
            return
        if isinstance(message, _Replayed):
            self._replayed(message)
            return
        if isinstance(message, _Generated):
            await self._generated(message)
        elif isinstance(message, _GenerationFailed):
            self.state = attrs.evolve(self.state, generating=False, progress=None,
                                      failed=self.state.state.manifest is None)
        elif isinstance(message, _TellLobby):
            self._tell_armed = False
        elif isinstance(message, _GrowTick):
            self._maybe_grow(timed=True)
        elif isinstance(message, _MergeYesterday) and await merge_yesterday(
                self.context.directory, live.daily_date(self.state.game)):
            self._alltime = None
        self._tell_lobby()

    async def _generated(self, msg: _Generated) -> None:
        """Store what was generated and fold its event. The field is `generating` until
        then: its summary, read from outside while the truth is saved, never says `none`."""
        try:
            await self._store_generated(msg)
        finally:
            self.state = attrs.evolve(self.state, generating=False, progress=None)

    async def _store_generated(self, msg: _Generated) -> None:
        s = self.state.state
        t = self.now()
        stream = truth_stream(self.state.game)
        if msg.plan is not None:
            if s.manifest is not None:
                return  # a restart generated it twice; the first one stands
            field = msg.field
            assert field is not None
            params = dict(field.manifest.params)
            if msg.plan.grow_every is not None:
                params["grow_every"] = msg.plan.grow_every
            manifest = attrs.evolve(field.manifest, params=tuple(sorted(params.items())))
            field = attrs.evolve(field, manifest=manifest)
            await self.save_side(stream, 0, field.to_dict())
            self.state = attrs.evolve(self.state, truth=field)
            self.fold([ManifestEvent(rev=1, t=t, manifest=manifest, rules=msg.plan.rules)])
            if msg.plan.grow_every is not None:
                self._grow_timer = self.every(msg.plan.grow_every, _GrowTick())
            return
        if msg.field is None:  # no room: the field ends, and its growth timer with it (a
            # tick would be a message with nothing to do, keeping the ended field loaded)
            self.fold([GrowEvent(rev=s.revision + 1, t=t, tiles=(), seed_ring=())])
            if self._grow_timer is not None:  # (a field grows only while it is armed)
                self._grow_timer.cancel()
            return
        tiles = msg.field.manifest.tiles[len(s.geo.tiles):]
        if not tiles:
            return  # a restart grew it twice from the same field; the first stands
        rings = msg.field.manifest.seed_rings
        ring = rings[-1] if len(rings) > len(s.manifest.seed_rings) else ()
        await self.save_side(stream, s.revision + 1, msg.field.to_dict())
        self.state = attrs.evolve(self.state, truth=msg.field)
        self.fold([GrowEvent(rev=s.revision + 1, t=t, tiles=tiles, seed_ring=ring)])

    def _maybe_grow(self, *, timed: bool = False) -> None:
        w = self.state
        if w.grow_every is None or w.generating or w.state.ended or w.truth is None:
            return
        if timed or live.growth_due(w.state) is not None:
            self._generate(None)

    # ---- effects ----------------------------------------------------------------------

    async def _start(self, call: Call) -> ops.StartResult:
        """Create this field: plan it and start generating (answers at once)."""
        a: ops.StartArgs = call.args
        w = self.state
        if w.state.manifest is not None:
            raise self.refuse(ErrorCode.ALREADY_EXISTS, f"the field {w.game!r} exists",
                              actor=self.actor_id, revision=w.state.revision)
        if not rules.creatable(w.game):
            raise self.refuse(ErrorCode.BAD_REQUEST, "to: a started game id is 1-80 of "
                              "[a-zA-Z0-9_-] and not a daily name", path="to")
        if not w.generating:
            try:
                plan = live.plan_start(a.seed, a.size, a.canvas, a.chunks, a.chunk, a.guess,
                                       a.depth, a.grow.every_s if a.grow else None, a.fog,
                                       a.kind)
            except live.StartError as exc:
                raise self.refuse(ErrorCode.BAD_REQUEST, str(exc), path=exc.path) from None
            self._generate(plan)
        return ops.StartResult(w.game, "generating", w.state.revision)

    async def _play_then_grow(self, call: Call) -> Any:
        """A reveal or commit, then a growth if it triggered one."""
        result = self.play(self.world.moves[call.op], call)
        self._maybe_grow()
        return result

    async def _history(self, call: Call) -> ops.FieldView | None:
        """`field.history`. A field loaded from a snapshot holds no history before it: an
        ask for an earlier revision waits while the stored events up to the snapshot are
        decoded and folded again off the task (once per load; nothing else waits for it).
        An ask for a revision whose events are no longer held waits for the fold of the
        stored events after its checkpoint, off the task too."""
        a: ops.HistoryArgs = call.args
        w = self.state
        first = w.history.first
        if not 1 <= a.revision < first:
            if 1 <= a.revision <= w.state.revision and not w.history.held(a.revision):
                await self._answer(self.defer(), w.history, a.revision)
                return None
            return self.read(call)
        if self._earlier is None or self._earlier.history is not w.history:
            rows = await self._rows(0, first)
            if rows is None:
                raise self._unreadable(f"before revision {first}")
            earlier = self._earlier = _Earlier(w.history)
            self.offload(thread_timed(lambda: rules.replayed(w.game, decoded(rows)).history),
                         lambda done: _EarlierFolded(earlier, *done),
                         lambda: _EarlierFolded(earlier, None))
        self._earlier.waiting.append((self.defer(), a.revision))
        return None

    async def _earlier_folded(self, msg: _EarlierFolded) -> None:
        """Complete the history (unless the field was loaded again meanwhile) and answer
        the asks that waited for it."""
        earlier, history = msg.earlier, msg.history
        if self._earlier is earlier:
            self._earlier = None
        if earlier.waiting:  # the ask that set the fold off pays for it
            earlier.waiting[0][0].charge(msg.seconds)
        if history is None:
            error = self._unreadable(f"before revision {earlier.history.first}")
            for answer, _ in earlier.waiting:
                answer.fail(error)
            return
        if earlier.history is self.state.history:
            earlier.history.prepend(history)
        for answer, revision in earlier.waiting:
            await self._answer(answer, history, revision)

    async def _answer(self, answer: Deferred, history: live.History, revision: int) -> None:
        """Answer a `field.history` ask at `revision` (in `history`) from the events
        `history` holds, or else from the stored events after its nearest checkpoint (at
        most one checkpoint spacing), folded off the task and kept nowhere."""
        if history.held(revision):
            answer.succeed(rules.history_view(self.state, history, revision))
            return
        if self._replays >= MAX_REPLAYS:
            answer.fail(self.refuse(ErrorCode.OVERLOADED, f"{MAX_REPLAYS} older revisions "
                                    "are being read; retry in a moment"))
            return
        base = history.base(revision)
        start, game = history.checkpoints[base], self.state.game
        self._replays += 1
        rows = await self._rows(base, revision)
        if rows is None:
            self._replays -= 1
            answer.fail(self._unreadable(f"at revision {revision}"))
            return
        self.offload(thread_timed(lambda: rules.past_view(
            game, rules.folded(start, decoded(rows), revision))),
            lambda done: _Replayed(answer, revision, *done),
            lambda: _Replayed(answer, revision, None))

    def _replayed(self, msg: _Replayed) -> None:
        """Answer the ask whose revision was folded from the stored events; it pays."""
        self._replays -= 1
        msg.answer.charge(msg.seconds)
        if msg.view is None:
            msg.answer.fail(self._unreadable(f"at revision {msg.revision}"))
        else:
            msg.answer.succeed(msg.view)

    async def _rows(self, after: int, upto: int) -> list[tuple[int, str]] | None:
        """The stored rows of revisions after + 1 .. upto (None: the read failed, logged)."""
        try:
            return await self.context.store.read_rows(self.actor_id, after=after, upto=upto)
        except Exception:
            log.exception("%s: could not read revisions %d..%d", self.actor_id, after + 1,
                          upto)
            return None

    def _unreadable(self, where: str) -> ProtocolError:
        return self.refuse(ErrorCode.UNAVAILABLE, f"the history {where} could not be read; "
                           "retry")

    def board(self) -> Boards:
        """This field's board per user and per model."""
        return boards_of(tallies(self.state.state))

    async def _leaderboard(self, call: Call) -> ops.LeaderboardResult:
        """This field's board, or a page of the all-time board merged with it."""
        a: ops.LeaderboardArgs = call.args
        if (r := rules.unready(self.state)) is not None:
            raise refused(r)
        board = self.board()
        day = live.daily_date(self.state.game)
        if not a.merged:
            days = [day.isoformat()] if day else []
            return ops.LeaderboardResult(**board.to_json(), days=days,
                                         users_total=len(board.users),
                                         models_total=len(board.models))
        now = trio.current_time()
        if self._alltime is None or now - self._alltime[0] >= ALLTIME_EVERY:
            self._alltime = now, live.AllTimeRows(await load_alltime(self.context.store))
        page, (users, models), days = self._alltime[1].with_today(
            day.isoformat() if day else None, board, a.offset, a.limit)
        return ops.LeaderboardResult(**page.to_json(), days=days, users_total=users,
                                     models_total=models)

    effects: ClassVar[Mapping[str, Effect]] = {"field.start": _start, "field.reveal": _play_then_grow,
               "field.commit": _play_then_grow, "field.leaderboard": _leaderboard,
               "field.history": _history}
    effect_reads: ClassVar[frozenset[str]] = frozenset({"field.leaderboard"})


WORLD = attrs.evolve(rules.WORLD, actor=FieldActor)


# ---- the all-time board and the daily field -----------------------------------------------

async def load_alltime(store: EventStore) -> live.AllTime:
    """The all-time board as stored (empty before the first merged day)."""
    snap = await store.load_snapshot(ALLTIME)
    return live.AllTime() if snap is None else live.AllTime.from_json(snap.data)


async def merge_yesterday(directory: Directory, today: Any) -> bool:
    """Merge yesterday's daily board into the all-time board once; True when it merged."""
    day = live.yesterday(today)
    actor_id = f"{rules.KIND}:{live.daily_id(day)}"
    store = directory.store
    alltime = await load_alltime(store)
    if day.isoformat() in alltime.days or await store.revision(actor_id) == 0:
        return False
    result = await directory.ask(actor_id, Call("field.leaderboard", ops.LeaderboardArgs(),
                                                "owner", "daily"))
    board = Boards.from_json({"users": result.users, "models": result.models})
    merged = live.merge_day(alltime, day.isoformat(), board)
    await store.save_snapshot(ALLTIME, len(merged.days), merged.to_json())
    return True
