"""The lab's effects, for what its table (rules.py) cannot express.

- `lab.birth` and `lab.cross`: the offer is decided on the actor's task (`offers.py`),
  then `validate`, whose compile step is a glslang subprocess, runs off it (`offload`);
  its verdict comes back as a message and the outcome (`Born`, or a logged `Rejected`)
  is folded then. The reply says `validating` with the candidate's id; `lab.status {id}`
  tells the outcome. A duplicate is refused at once, and so is a candidate beyond the
  lab's validations in flight (`overloaded`). The seconds a validation held its worker
  are charged to whoever offered it (a visitor's cross: its CPU budget).
- The birth loop: a timer every `birth_tick` seconds breeds, for each track whose unproven
  backlog is under the lab's cap (`lab.create {backlog}`, 16 for `lab:main`), one candidate
  at a time: a grammar child of parents chosen by the seed's rule, or, when the server has
  a model endpoint (the server's, `ActorContext.model`), a model birth answering one of the track's directives
  (the loop explores one when the track has none). Every candidate goes through
  `validate` off the task; a failure is logged as a rejection, and a validator that
  raises abandons the candidate. A model call starts once the batch that chose its
  directive is durable (`once_durable`: an explored directive is stored before the model
  hears of it). It waits on a network peer: it runs behind the
  runtime's I/O threads (`offload(io=True)`), never in the CPU work's slot. Every model
  birth that bears nothing (the model erred, which is not a rejection and is only logged;
  its reply broke the format or failed validation, a logged rejection; the validator
  raised on its code) makes the loop wait before it asks again, doubling from 5 seconds
  up to 5 minutes on the lab's clock: each call is paid for, and a model that keeps
  answering junk would otherwise be asked a few times a second. A birth ends the wait.
  A model error `unavailable` whose answer named a Retry-After makes that wait at least as
  long (at most `chat_completions.MAX_RETRY_AFTER`, where the header is parsed): the loop's
  timer is the retry; the call itself is made once.
- `lab.create`: the move, then the loop's timer (`handle` arms it after any op that
  changed the lab).
- The loop's timer runs only while it has work (`_arm`): a lab whose backlog is full
  idles and unloads like any world nobody asks. What it stored stays; the seed's
  in-memory records (strikes, benching, pairs dealt) go with the unload, as with a
  restart.
- Nobody follows a lab's stream (`World.followable` is False: the directory refuses
  every `subscribe`, here and through a cluster): its records carry the code of
  unproven organisms, which the seed confines to the owner's arena, and a subscription
  does not say who follows. Pages read `lab.info` instead.

`lab:main` is declared: it loads (and starts breeding) the first time anything asks it.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs

from actors.lab import rules
from actors.lab.births import Candidate, backlogs, birth_directive, grammar_candidate
from actors.lab.contract import TRACKS
from actors.lab.events import Abandoned, Born, Rejected
from actors.lab.model_breeder import Birth as ModelBirth
from actors.lab.model_breeder import ModelBreeder
from actors.lab.offers import OFFERS, decide_offer, decide_validated, offered
from actors.lab.organism import organism_id
from actors.lab.seeding import rng_for
from actors.lab.state import Lab
from actors.lab.validation import validate
from actors.lab.views import shown_birth
from actors.runtime import Call, Timer, WorldActor, refused
from actors.runtime.deferred import Deferred
from actors.runtime.host import Effect
from actors.runtime.offload import thread_timed
from actors.world import Refusal
from protocol.errors import ProtocolError
from protocol.ops import lab as ops

log = logging.getLogger("petridish.lab")

MODEL_BACKOFF_MS = (5_000, 300_000)  # first and longest wait after a barren model birth


@attrs.frozen
class _BirthTick:
    """Timer: time to look at the backlog."""


@attrs.frozen
class _Validated:
    """The validator's verdict on a candidate (`loop`: the birth loop offered it), the
    seconds it held its worker and who pays for them (the offer's answer slot, if any)."""

    candidate: Candidate
    reason: str | None
    loop: bool
    seconds: float = 0.0
    payer: Deferred | None = None


@attrs.frozen
class _ValidationFailed:
    """The validator raised (logged by the runtime): the candidate is abandoned."""

    candidate: Candidate
    loop: bool


@attrs.frozen
class _ModelReplied:
    """A model birth came back: its code still to be validated, unless its reason says
    the reply broke the format or the model erred."""

    track: str
    directive: str
    birth: ModelBirth


@attrs.frozen
class _ModelFailed:
    """The model breeder raised (logged by the runtime)."""

    track: str


class LabActor(WorldActor):
    """One lab: the table's ops, the birth ops off the task, and the birth loop."""

    state: Lab
    birth_tick: ClassVar[float] = 0.5  # seconds between looks at the backlog
    @property
    def model(self) -> Any:
        """The server's model endpoint (base_url, model, api_key, timeout), or None."""
        return self.context.model

    def breeder(self) -> ModelBreeder:
        """The model breeder of the server's endpoint (one HTTP client for every lab)."""
        return _breeder(self.model)

    # ---- the birth loop -----------------------------------------------------------------

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Tracks whose loop birth runs off the task (a model call, a validation): a restart
        # does not stop it, and its outcome comes back as a message all the same.
        self._loop_running: set[str] = set()

    async def on_start(self) -> None:
        """Arm the birth loop of a lab that exists and breeds."""
        self._ticker: Timer | None = None
        # Tracks with a loop birth in flight: running, or chosen in this batch and started
        # once it is durable (a restart drops those that are not kept: `once_durable`).
        self._loop_busy: set[str] = set(self._loop_running)
        self._model_quiet_until = 0  # ms: no model birth before this, after a barren one
        self._model_backoff = MODEL_BACKOFF_MS[0]
        self._arm()

    def _breeds(self) -> bool:
        s = self.state
        return s.backlog > 0 and (s.created or self.world.declared(self.name, self.now()))

    def _arm(self) -> None:
        """Tick while the loop has work, a track under its cap with no loop birth in flight
        (a birth's outcome and an op that lowers the backlog arm it again), else stop: a lab
        whose backlog is full changes nothing on a tick, so it idles and unloads as any idle
        world does, and its next message loads it and arms the loop again."""
        wanted = self._breeds() and bool(self._open_tracks())
        if wanted and self._ticker is None:
            self._ticker = self.every(self.birth_tick, _BirthTick())
        elif not wanted and self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None

    def _open_tracks(self) -> list[tuple[int, str]]:
        """The tracks (with their index) the loop would breed now: under the cap, with no
        loop birth in flight (one pass over the pool, however many tracks)."""
        waiting = backlogs(self.state.organisms.values(), self.now())
        return [(index, track) for index, track in enumerate(TRACKS)
                if track not in self._loop_busy and waiting[track] < self.state.backlog]

    def _breed(self) -> None:
        """One look at the backlog: a birth for each track under the cap."""
        open_tracks = self._open_tracks()
        pool = list(self.state.organisms.values()) if open_tracks else []
        for index, track in open_tracks:
            if self.model is None:
                rng = rng_for(self.state.seed, "loop", 2 * self.rev + index)
                self._offer(grammar_candidate(pool, track, rng), loop=True)
            elif self.now() >= self._model_quiet_until:
                self._model_birth(track)

    def _model_birth(self, track: str) -> None:
        """Ask the model for a child answering one of the track's directives."""
        directives = [d for d in self.state.directives.values() if d.track == track]
        if not directives:
            explore = Call("lab.directive_explore", ops.DirectiveExploreArgs(track), "owner",
                           "birth-loop")
            try:
                self.play(self.world.moves[explore.op], explore)
            except ProtocolError as error:  # the lexicon found nothing new: wait
                log.warning("%s: no directive to breed %s from: %s", self.actor_id, track,
                            error.message)
                return
            directives = [d for d in self.state.directives.values() if d.track == track]
        rng = rng_for(self.state.seed, "loop", 2 * self.rev + TRACKS.index(track))
        directive = birth_directive(directives, track, rng)
        assert directive is not None
        breeder = self.breeder()

        def call() -> None:
            # Busy again: a crash later in the batch restarts the lab (`on_start` frees the
            # tracks not running) yet keeps this act, which then runs after the next append;
            # a tick after the restart may have chosen the track again meanwhile.
            if track in self._loop_running:
                return
            self._loop_busy.add(track)
            self._loop_running.add(track)
            self.offload(lambda: breeder.breed(track, directive.text),
                         lambda birth: _ModelReplied(track, directive.id, birth),
                         lambda: _ModelFailed(track), io=True)

        self._loop_busy.add(track)
        # The directive may be this batch's (explored above, or added by an op before the
        # tick): the model hears of it once it is durable, never if its append fails (the
        # restart then frees the track).
        self.once_durable(call)

    def _loop_done(self, track: str) -> None:
        """The track's loop birth is over: the loop may breed it again."""
        self._loop_busy.discard(track)
        self._loop_running.discard(track)

    def _model_replied(self, msg: _ModelReplied) -> None:
        b = msg.birth
        if b.reason is not None and b.reason.startswith("model error"):
            self._loop_done(msg.track)
            self._model_barren(b.reason, b.retry_after)
            return
        candidate = Candidate(msg.track, b.code, b.title, directive=msg.directive,
                              prompt=b.prompt, source="model")
        if b.reason is None:  # the format holds: validated as every candidate is
            self._validate(candidate, loop=True)
            return
        self._loop_done(msg.track)
        self._model_outcome(candidate, b.reason)

    def _model_outcome(self, candidate: Candidate, reason: str | None) -> None:
        """Fold a model candidate's verdict: a birth ends the loop's wait, a rejection
        (the format's, the validator's, a duplicate's) makes it wait longer."""
        events = decide_validated(self.state, candidate, reason, self.now())
        self.fold(events)
        if any(isinstance(e, Born) for e in events):
            self._model_backoff = MODEL_BACKOFF_MS[0]
        else:
            self._model_barren(f"model birth rejected ({events[0].reason})"
                               if events and isinstance(events[0], Rejected)
                               else "model birth rejected")

    def _model_barren(self, reason: str, retry_after: float | None = None) -> None:
        """A model birth bore nothing: no model birth for the current wait, or for the
        endpoint's `retry_after` seconds (already capped) if that is longer, and
        the next wait is twice as long (up to MODEL_BACKOFF_MS[1])."""
        wait = self._model_backoff
        if retry_after is not None:
            wait = max(wait, math.ceil(retry_after * 1000))
        log.warning("%s: %s; no model birth for %g s", self.actor_id, reason, wait / 1000)
        self._model_quiet_until = self.now() + wait
        self._model_backoff = min(2 * self._model_backoff, MODEL_BACKOFF_MS[1])

    # ---- validation off the task ----------------------------------------------------------

    def _offer(self, candidate: Candidate, *, loop: bool, payer: Deferred | None = None
               ) -> ops.Birth:
        """Record the offer and start its validation (its time charged to `payer`); the
        reply as it stands now."""
        events = decide_offer(self.state, candidate, self.now())
        if isinstance(events, Refusal):
            raise refused(events)
        self.fold(events)
        reply = offered(candidate, events)
        if events and reply.status == "validating":
            if loop:
                self._loop_busy.add(candidate.track)
            self._validate(candidate, loop, payer)
        return reply

    def _validate(self, candidate: Candidate, loop: bool, payer: Deferred | None = None
                  ) -> None:
        """Run `validate` off the task; the verdict, or the validator's failure (the
        candidate is then abandoned, whoever offered it), comes back as a message. The
        seconds it held its worker (the compile's subprocess included) are `payer`'s."""
        if loop:
            self._loop_running.add(candidate.track)
        self.offload(thread_timed(lambda: validate(candidate.track, candidate.code), held=True),
                     lambda done: _Validated(candidate, done[0], loop, done[1], payer),
                     lambda: _ValidationFailed(candidate, loop))

    async def on_message(self, message: Any) -> None:
        """Ticks of the loop, verdicts of the validator, replies of the model."""
        if isinstance(message, _BirthTick):
            try:
                self._breed()
            except ProtocolError as error:  # overloaded: the next tick tries again
                log.debug("%s: birth loop waits: %s", self.actor_id, error.message)
        elif isinstance(message, _Validated):
            c = message.candidate
            if message.payer is not None:
                message.payer.charge(message.seconds)
            if message.loop:
                self._loop_done(c.track)
            if message.loop and c.source == "model":
                self._model_outcome(c, message.reason)
            else:
                self.fold(decide_validated(self.state, c, message.reason, self.now()))
        elif isinstance(message, _ValidationFailed):
            c = message.candidate
            if message.loop:
                self._loop_done(c.track)
            self.fold([Abandoned(organism_id(c.track, c.code))])
            if message.loop and c.source == "model":
                self._model_barren("the validator failed on a model birth")
        elif isinstance(message, _ModelReplied):
            self._model_replied(message)
        elif isinstance(message, _ModelFailed):
            self._loop_done(message.track)
            self._model_barren("model breeder failed")
        self._arm()

    async def handle(self, call: Call) -> Any:
        """An op, then, if it changed the lab, the loop armed if it has work now (a proof or
        a death lowers the backlog; `lab.create` starts it)."""
        before = self.rev
        result = await super().handle(call)
        if self.rev > before and self._ticker is None:  # (a running one's tick re-checks)
            self._arm()
        return result

    # ---- effects --------------------------------------------------------------------------

    async def _birth_op(self, call: Call) -> ops.Birth:
        """`lab.birth` / `lab.cross`: the candidate, then its validation off the task. The
        caller is answered now and pays for the validation once it is over (a visitor's
        cross its CPU budget), so the answer slot is kept (`defer`) to charge it; the
        reply is returned too, for the receipt of a retried request."""
        make, purpose = OFFERS[call.op]
        ctx = self.ctx(call, purpose)
        candidate = make(self.state, call.args, ctx)
        if isinstance(candidate, Refusal):
            raise refused(candidate)
        payer = self.defer()
        reply = shown_birth(self.state, self._offer(candidate, loop=False, payer=payer), ctx,
                            candidate.client)
        payer.succeed(reply)
        return reply

    effects: ClassVar[Mapping[str, Effect]] = {"lab.birth": _birth_op, "lab.cross": _birth_op}


WORLD = attrs.evolve(rules.WORLD, actor=LabActor)


@functools.cache
def _breeder(endpoint: Any) -> ModelBreeder:
    return ModelBreeder(endpoint.base_url, endpoint.model, api_key=endpoint.api_key,
                        timeout=endpoint.timeout)
