"""An actor's life around its messages: loading its state, the supervisor that restarts it
after a crash, unloading it when idle or to make room, and stopping it.

When a handler raises anything but a ProtocolError, the supervisor answers that ask with
`actor_restarted` and rebuilds the state from the store plus the events of the batch's
earlier messages: a crashed handler changes nothing, the others are unharmed. Too many
crashes in a short window stop the actor for good; an actor left idle (no message, no
subscriber) for `idle_timeout` unloads itself, and the directory unloads one to make room
(`unload`, `footprint`). `Directory` (actors/runtime/directory.py) maps `kind:name` ids to
live actors and loads them again on demand.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from actors.runtime.load import load
from actors.runtime.mailbox import ActorStopped, IdleCheck
from actors.store import Event
from protocol.errors import ErrorCode, ProtocolError

if TYPE_CHECKING:
    from collections.abc import Callable

    from actors.runtime.base import Actor

log = logging.getLogger("petridish.actors")


class Lifecycle:
    """The part of `Actor` (actors/runtime/base.py) that loads, restarts, unloads and stops
    it: a mixin over the actor's own state, which `Actor.__init__` sets."""

    def unload(self: Actor, followed: bool = False) -> bool:
        """Unload now, as an idle actor does, if nothing holds it (True if it did: the
        directory makes room so): a message handled since it loaded (not one loaded for a
        message not yet posted), none waiting, no answer owed (`defer`), no offloaded work
        running, no subscriber unless `followed` (they get `resync` `actor_stopped`)."""
        if not self._handled or not self._waiting or self._deferred or not self._idle(followed):
            return False
        log.debug("%s unloaded to make room", self.actor_id)
        self._topic.unloaded = True
        return True

    def footprint(self: Actor, above: int | None = None) -> int | None:
        """Its subscribers' least footprint, if they let it go (`Topic.footprint`)."""
        return self._topic.footprint(above)

    def _arm_idle_check(self: Actor, delay: float | None) -> None:
        if delay is not None:
            self.after(delay, IdleCheck())

    def _idle_check(self: Actor, now: float) -> bool:
        """True when it unloaded itself (idle, unwatched, nothing waiting); else re-armed."""
        idle = self.context.config.idle_timeout
        assert idle is not None  # only then is the check armed
        quiet = now - self._active_at
        if quiet >= idle and self._idle():
            log.debug("%s unloaded after %g s idle", self.actor_id, idle)
            return True
        self._arm_idle_check(idle - quiet if quiet < idle else idle)
        return False

    def _idle(self: Actor, followed: bool = False) -> bool:
        """Stop for want of work: no message waiting, no offloaded work running (its result
        would be lost) and nobody subscribed (unless `followed`)."""
        if self._offloads or (not followed and self._topic.prune()) or self._mailbox.depth:
            return False
        # No checkpoint since the check: nothing can be posted before the mailbox closes.
        self._mailbox.close()
        return True

    def _restarted(self: Actor) -> ProtocolError:
        return ProtocolError(
            ErrorCode.ACTOR_RESTARTED,
            f"{self.actor_id} crashed handling this request and was restarted from its "
            "stored state; the request may be retried", {"actor": self.actor_id})

    async def _restart(self: Actor, kept: list[Event],
                       acts: list[Callable[[], None]] | None = None) -> bool:
        """Rebuild the state from the store plus `kept` (the batch's earlier, sound events),
        whose `once_durable` acts (`acts`) then run after the next append.

        False when the crash budget is spent or the store cannot be read: the batch's
        answers are then refused and the actor stops.
        """
        now = trio.current_time()
        window = self.context.config.restart_window
        self._crashes.append(now)
        while self._crashes and self._crashes[0] < now - window:
            self._crashes.popleft()
        if len(self._crashes) > self.context.config.max_restarts:
            log.error("%s crashed %d times in %g s; stopping it", self.actor_id,
                      len(self._crashes), window)
            return False
        self._timers.cancel_all()
        self._push_armed = False
        self._after_append = list(acts or [])
        kept_receipts = [r for r in self._receipts.staged
                         if r.rev <= self._durable_rev + len(kept)]
        try:
            await self._load()
            for event in kept:
                self.apply(event)
            self._unflushed, self._rev = list(kept), self._rev + len(kept)
            for receipt in kept_receipts:  # stored afresh with the kept events
                self._receipts.keep(receipt)
            await self.on_start()
            self._arm_idle_check(self.context.config.idle_timeout)
        except ActorStopped:
            return False  # stopped while loading again: nothing failed
        except Exception:
            log.exception("%s could not be restarted from the store", self.actor_id)
            return False
        self._restarts += 1
        return True

    async def _load(self: Actor) -> None:
        self.loaded = False
        loaded = await load(self)  # (a load that raises stops the actor)
        self._snapshot_rev = loaded.snapshot_rev
        self._topic.reset_history((stored.rev, stored.data) for stored in loaded.history)
        self._rev = self._durable_rev = loaded.rev
        self._unflushed = []
        self._receipts.reset(loaded.receipts)
        self.loaded = True

    def _stop(self: Actor) -> None:
        self._mailbox.close()
        # Answers not yet made durable are refused: their events were never written.
        error = ActorStopped(self.actor_id)
        for pending, _, _ in self._answers:
            pending.fail(error)
        for deferred in self._deferred:
            deferred._answer.fail(error)
        self._answers, self._deferred = [], set()
        self._topic.close(self._durable_rev)
