"""The run's effects, for what its table (rules.py) cannot express.

- `ecosystem.create` with a model configured (the server's, `ActorContext.model`): the answers
  are checked and the seed drawn at once, the reply is `setting_up`, and the model's
  interpretation runs off the actor's task (`offload(io=True)`: a model call waits behind
  the runtime's I/O threads, never the CPU work's; a call the endpoint answers 429 or 5xx
  is tried again after a wait on trio's clock, `_sleep`); its result (or, should the work
  raise, the deterministic setup labelled with failure `{stage: setup, code: internal}`)
  becomes the setup event, or, blocked by the fidelity review, stays in memory for the
  view. A server restarted meanwhile forgets the create (nothing was stored).
  Without a model the table's deterministic create runs as is.
- The generation timer: while the run plays, one tick per 1/speed seconds on an absolute
  schedule (each tick arms the next at its due time with `after`, so the wake-up latency
  of a timer does not add up over 180 generations the way a fixed `every` interval's does).
  The actor handles its next message only once the last batch is durable, so when an
  append takes longer than a period the next tick is late: it then makes every generation
  due since (at most CATCH_UP) in one batch, and the run keeps its speed.
- The density fields: a fresh `snapshot` (the view, with the fields downsampled and
  quantised) after generations advance, at most every DENSITY_INTERVAL seconds, and only
  while someone subscribes.
- The end: with a model configured, the reflection's facts are phrased once, off the task
  (`phrase.py`), as a `Phrased` event labelled with its source; after a restart an
  unphrased end is phrased again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import trio

from actors.ecosystem import reads, rules
from actors.ecosystem.endpoint import ModelEndpoint
from actors.ecosystem.events import Ended, Phrased
from actors.ecosystem.export import lines_of
from actors.ecosystem.interpret import DeterministicInterpreter, Interpretation, ModelInterpreter
from actors.ecosystem.model_client import ChatClient
from actors.ecosystem.phrase import phrase, unphrased
from actors.ecosystem.state import PendingSetup, Run, unready
from actors.runtime import Call, Timer, WorldActor, refused
from actors.runtime.context import ActorContext
from actors.runtime.host import Effect
from actors.world import Refusal, World
from protocol.ops import ecosystem as ops

DENSITY_INTERVAL = 0.25  # seconds between density snapshots: at most 4 a second
CATCH_UP = 5  # generations one late tick may make at once


@attrs.frozen
class _Tick:
    """Timer: the next generation is due (`timer`: which arming sent it; a tick already
    posted when its timer was stopped or re-armed is ignored)."""

    timer: int


@attrs.frozen
class _DensityDue:
    """Timer: a density snapshot is due."""


@attrs.frozen
class _Interpreted:
    """The model's interpretation of a pending create is back."""

    pending: PendingSetup
    interpretation: Interpretation


@attrs.frozen
class _Phrased:
    """The reflection's phrasing is back (or its labelled failure)."""

    event: Phrased


def _sleep(seconds: float) -> None:
    """A worker thread's wait before a model call is tried again, on trio's clock (the one
    the actor's timers keep). When the actor stopped meanwhile (its offload cancelled, the
    thread abandoned) it raises `trio.Cancelled` at the wait's end (the sleep runs in a
    system task, which the cancel does not reach), so the work makes no further call."""
    trio.from_thread.run(trio.sleep, seconds)
    trio.from_thread.check_cancelled()


def _interpret(endpoint: ModelEndpoint, answers: dict[str, str]) -> Interpretation:
    """The model pipeline over a fresh client (a worker thread runs this)."""
    client = ChatClient(endpoint, _sleep)
    try:
        return ModelInterpreter(client).interpret(answers)
    finally:
        client.close()


def _phrase(endpoint: ModelEndpoint, ended: Ended) -> Phrased:
    """The reflection's phrasing over a fresh client (a worker thread runs this)."""
    client = ChatClient(endpoint, _sleep)
    try:
        return phrase(client, endpoint.model, ended)
    finally:
        client.close()


def _internal_fallback(answers: dict[str, str]) -> Interpretation:
    """The deterministic setup, labelled with the failure of work that raised."""
    return attrs.evolve(DeterministicInterpreter().interpret(answers),
                        failure={"stage": "setup", "code": "internal", "conflicts": []})


class EcosystemActor(WorldActor):
    """One run: the table's ops, plus the model setup, the timer, densities, phrasing."""

    state: Run
    @property
    def model(self) -> ModelEndpoint | None:
        """The server's endpoint runs are set up through (None: deterministic setup)."""
        return self.context.model

    def __init__(self, actor_id: str, context: ActorContext, world: World) -> None:
        super().__init__(actor_id, context, world)
        self._timer: Timer | None = None
        self._armed = 0  # the arming whose ticks count
        self._period = 0.0  # seconds between the armed timer's ticks
        self._due = 0.0  # trio time the armed tick is due
        self._density_timer: Timer | None = None
        self._density_at = -math.inf  # trio time of the last density snapshot
        self._density_generation = -1
        self._pending: PendingSetup | None = None  # survives a crash-restart
        self._phrasing = False

    # ---- start and restart ------------------------------------------------------------

    async def on_start(self) -> None:
        """After a (re)load: the timers were cancelled; a playing run plays on, a pending
        model setup is shown again, an unphrased end is phrased."""
        self._timer = self._density_timer = None
        self._phrasing = False
        if self._pending is not None and self.state.setup is None:
            self.state = attrs.evolve(self.state, setting_up=self._pending)
        self._follow()
        self._maybe_phrase()

    # ---- effects ------------------------------------------------------------------------

    async def _create(self, call: Call) -> Any:
        """Deterministic setup at once, or the model's off the task (answers `setting_up`)."""
        if self.model is None:
            result = self.play(self.world.moves[call.op], call)
            self._densities()
            return result
        pending = rules.prepare_create(self.state, call.args, self.ctx(call, rules.SEED_PURPOSE))
        if isinstance(pending, Refusal):
            raise refused(pending)
        self._pending = pending
        self.state = attrs.evolve(self.state, setting_up=pending, blocked=None)
        endpoint = self.model
        self.offload(lambda: _interpret(endpoint, pending.answers),
                     lambda interpretation: _Interpreted(pending, interpretation),
                     lambda: _Interpreted(pending, _internal_fallback(pending.answers)),
                     io=True)  # model calls: they wait behind the I/O threads, not the CPU's
        return reads.pending_info(pending)

    async def _control(self, call: Call) -> Any:
        """The table's control, then the timer follows the run's new controls."""
        generation = self.state.generation
        result = self.play(self.world.moves[call.op], call)
        self._follow()
        if self.state.generation != generation:
            self._after_generation()
        return result

    async def _export(self, call: Call) -> ops.Export:
        """The run's stored events as JSON lines, read back from the store."""
        if (refusal := unready(self.state)) is not None:
            raise refused(refusal)
        stored = await self.context.store.read(self.actor_id)
        return ops.Export(lines_of(e.data for e in stored), len(stored),
                          stored[-1].rev if stored else 0)

    effects: ClassVar[Mapping[str, Effect]] = {"ecosystem.create": _create,
                                                "ecosystem.control": _control,
                                                "ecosystem.export": _export}
    effect_reads: ClassVar[frozenset[str]] = frozenset({"ecosystem.export"})

    # ---- messages -----------------------------------------------------------------------

    async def on_message(self, message: Any) -> None:
        """Ticks, density snapshots, interpretations and phrasings."""
        if isinstance(message, _Tick):
            if message.timer == self._armed:
                self._tick()
        elif isinstance(message, _DensityDue):
            self._density_timer = None
            self._densities()
        elif isinstance(message, _Interpreted):
            self._interpreted(message)
        elif isinstance(message, _Phrased):
            self._phrasing = False
            if self.state.ended is not None and self.state.phrasing is None:
                self.fold([message.event])

    def _interpreted(self, message: _Interpreted) -> None:
        if message.pending is not self._pending or self.state.setup is not None:
            return  # a create this actor no longer waits for
        self._pending = None
        p = message.pending
        events = rules.setup_events(p.answers, message.interpretation, p.owner, p.seed, p.size,
                                    self.now())
        if isinstance(events, Refusal):  # blocked: shown, never stored; may be created again
            self.state = attrs.evolve(self.state, setting_up=None, blocked={
                "message": events.message, **events.detail})
            self.publish_view()
            return
        self.fold(events)
        self._densities()

    # ---- the generation timer -----------------------------------------------------------

    def _playing(self) -> bool:
        s = self.state
        return s.setup is not None and s.playing and s.ended is None

    def _follow(self) -> None:
        """Keep the timer of a run that plays at its speed (armed anew when it changed),
        stop it otherwise. Its ticks are the run's progress (stored generations), so a
        playing run is never idle: it stays loaded until it ends or pauses."""
        period = 1.0 / self.state.speed
        if self._timer is not None:
            if self._playing() and period == self._period:
                return
            self._timer.cancel()
            self._timer = None
        self._armed += 1  # a tick of an earlier arming, already posted, is stale now
        if self._playing():
            self._period = period
            self._due = trio.current_time() + period
            self._timer = self.after(period, _Tick(self._armed))

    def _tick(self) -> None:
        """Make the generations due: one, or, when the tick is late (the last batch's append
        took longer than a period), those due since, at most CATCH_UP at once, in one batch
        and so one append. A stall of more than a second is not made up."""
        self._timer = None
        if not self._playing():
            return
        now = trio.current_time()
        due = 1 + max(0, int((now - self._due) / self._period))
        t, made = self.now(), 0
        while made < min(due, CATCH_UP) and self._playing():
            self.fold(rules.advance(self.state, t))
            made += 1
        self._after_generation()
        if self._playing():
            self._due = max(self._due + made * self._period, now - 1.0)
            self._timer = self.after(max(0.0, self._due - trio.current_time()),
                                     _Tick(self._armed))

    def _after_generation(self) -> None:
        """A generation was folded: density snapshot due; at the end, the phrasing."""
        self._densities()
        self._maybe_phrase()

    # ---- density snapshots and phrasing --------------------------------------------------

    def _densities(self) -> None:
        """A snapshot of the view (with the density fields) now, or when the interval has
        passed; nothing for nobody, or when no generation came since the last one."""
        if self._density_timer is not None or self.state.generation == self._density_generation:
            return
        if not self.statistics().subscribers:
            return
        now = trio.current_time()
        wait = self._density_at + DENSITY_INTERVAL - now
        if wait > 0:
            self._density_timer = self.after(wait, _DensityDue())
            return
        self._density_at = now
        self._density_generation = self.state.generation
        self.publish_view()

    def _maybe_phrase(self) -> None:
        """Phrase a finished run's reflection once, with a model configured."""
        s = self.state
        if self.model is None or s.ended is None or s.phrasing is not None or self._phrasing:
            return
        self._phrasing = True
        endpoint, ended = self.model, s.ended
        self.offload(lambda: _phrase(endpoint, ended), _Phrased,
                     lambda: _Phrased(unphrased("internal")), io=True)


WORLD = attrs.evolve(rules.WORLD, actor=EcosystemActor)
