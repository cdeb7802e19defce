"""The low-level `Actor`: one trio task per actor, a bounded mailbox, one message at a time.

Worlds do not subclass it directly: `WorldActor` (actors/runtime/host.py) runs any `World`
value on top of it. It stays the base for the host and for runtime tests.

An `Actor` owns its state; only its own task touches it. Other tasks reach it through `ask`
(wait for the answer, with a timeout) and `tell` (fire and forget); timers post to its mailbox.

A handler validates, decides events and `commit`s them: they are folded into the state
at once. The runtime handles every message already waiting in the mailbox the same way
(a batch, up to `max_batch` or `batch_seconds` of handling, after which the actor yields
to the other tasks), then appends all the batch's events in ONE durable append,
then delivers the batch's answers, then publishes the events. So nothing is answered or
published before it is durable, and a busy world pays one fsync per batch rather than
one per message. An ask's answer that has a `stored(bytes)` method is told, before it is
given, what its handler's events took in the store (the append's own sizes): the server
charges a client's to its `stored_per_hour` (server/stored.py).

A handler may also `defer()` its answer (work off the task, answered from a later message):
the answer then goes out with the batch that gives it, once durable like any other.

When a handler raises anything but a ProtocolError, the supervisor answers that ask with
`actor_restarted` and rebuilds the state from the store; an actor left idle unloads itself
(loading, restarts, unloading and stopping: actors/runtime/lifecycle.py).
"""

from __future__ import annotations

import logging
import math
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, ClassVar, TypeVar

import trio

from actors.runtime.context import ActorContext, ActorStatistics
from actors.runtime.deferred import Deferred, charge_sender, told
from actors.runtime.lifecycle import Lifecycle
from actors.runtime.mailbox import (
    ActorStopped,
    Answer,
    Ask,
    Call,
    IdleCheck,
    Mailbox,
    Pending,
    PushDue,
    SubscribeMsg,
    Tell,
    Timer,
    Timers,
    UnsubscribeMsg,
    ViewMsg,
)
from actors.runtime.offload import run_offloaded
from actors.runtime.receipts import Receipts
from actors.runtime.subscriber import SubscriberQueue
from actors.runtime.topic import Topic
from actors.store import Event, FencedError, Receipt, StoreUnavailable
from protocol.errors import ErrorCode, ProtocolError

log = logging.getLogger("petridish.actors")
T = TypeVar("T")

# ---- the actor ------------------------------------------------------------------------------

class Actor(Lifecycle, ABC):
    """Base of every world actor. Subclasses fill in the hooks marked abstract.

    State lives in attributes the subclass sets in `reset`/`restore` and changes only in
    `apply`. The stream of actor `kind:name` in the store is its whole durable history.
    """

    kind: ClassVar[str]
    # Seconds between event pushes to subscribers (0: after every batch). A world with many
    # small changes sets it (e.g. 0.05) to coalesce them: none lost, resume unaffected.
    push_interval: ClassVar[float] = 0.0
    # Frames a second the topic may push to all its subscribers together: a crowded
    # topic stretches the interval to subscribers / fanout_rate, so the fan-out's share
    # of the server's one thread stays bounded however many watch.
    fanout_rate: ClassVar[float] = math.inf

    def __init__(self, actor_id: str, context: ActorContext) -> None:
        self.actor_id = actor_id
        self.context = context
        cfg = context.config
        self._mailbox = Mailbox(actor_id, cfg.mailbox_size)
        self._rev = 0  # of the state in memory
        self._durable_rev = 0  # of the store
        self._unflushed: list[Event] = []  # folded, not yet durable: revs _durable_rev+1.._rev
        self._answers: list[tuple[Answer, Any, ProtocolError | None]] = []  # held until durable
        self._after_append: list[Callable[[], None]] = []  # `once_durable`'s, held until then
        # The batch's asks whose events a caller's budget counts: (their answer's `stored`,
        # the first and past-last index of their events in `_unflushed`).
        self._writers: list[tuple[Callable[[int], None], int, int]] = []
        self._receipts = Receipts(cfg.receipt_window)  # recent writes' request ids
        self._asked: Answer | None = None  # the answer slot of the ask being handled
        self._deferred: set[Deferred] = set()  # answers a handler promised to give later
        self._view_due = False
        self._last_push = -math.inf
        self._push_armed = False
        self._snapshot_rev = 0
        self._topic = Topic(  # no closure over self: an unloaded actor is freed at once
            actor_id, cfg.history_size, partial(context.observer.dropped, self.kind))
        self._timers = Timers(self._mailbox)
        self._nursery: trio.Nursery | None = None
        self._crashes: deque[float] = deque()
        self._active_at = 0.0  # when the last message other than an IdleCheck arrived
        self._waiting = False  # awaiting its next message: no batch, no handler running
        self._offloads = 0  # offloaded works whose result is not yet in the mailbox
        self._handled = self._restarts = 0
        # Being created: invisible to others until its create is accepted (directory.py).
        self.provisional = False
        # False while its state is set from the store (actors/runtime/load.py; again after
        # a crash): other tasks run meanwhile, and none may read the state until it ends.
        self.loaded = False
        self.ended = trio.Event()  # set once its task ended: it appends nothing more

    # ---- hooks for worlds ---------------------------------------------------------------

    @abstractmethod
    def reset(self) -> None:
        """Set the state of an empty stream (revision 0)."""

    @abstractmethod
    def apply(self, event: Event) -> None:
        """Fold one event into the state. Must not fail for an event `commit` was given."""

    @abstractmethod
    def view(self) -> Any:
        """The JSON value a subscriber receives in a `snapshot` push."""

    @abstractmethod
    async def handle(self, call: Call) -> Any:
        """Answer one protocol call (raise ProtocolError to refuse; nothing may change then)."""

    def snapshot(self) -> Any | None:
        """The state as JSON for a store snapshot, or None for a world that never snapshots."""
        return None

    def restore(self, data: Any) -> None:
        """Set the state from a value `snapshot` returned (raise if unreadable: replay all)."""
        raise NotImplementedError(f"{type(self).__name__} takes no snapshots")

    async def on_start(self) -> None:
        """Called after every (re)load, before the first message: arm timers here."""

    async def on_message(self, message: Any) -> None:
        """Handle a `tell` or a timer message."""
        raise NotImplementedError(f"{type(self).__name__} takes no messages, got {message!r}")

    # ---- services for handlers ----------------------------------------------------------

    @property
    def snapshot_every(self) -> int:
        """Events between two snapshots (the runtime's; a host's may be fewer)."""
        return self.context.config.snapshot_every

    @property
    def rev(self) -> int:
        """The revision of the state: the number of events committed (durable or about to be)."""
        return self._rev

    async def commit(self, events: Sequence[Event]) -> int:
        """Fold `events` into the state now; the runtime makes them durable before anyone
        hears of them (the handler's answer waits for that, and so do the pushes).

        Returns the new revision. An empty list is a no-op and never enters history. A
        handler that awaits something slow after committing also delays the answers of
        the messages handled before it in the same batch."""
        for event in events:
            self.apply(event)
        return self._stage(events)

    async def durable(self) -> None:
        """Make what was committed so far durable now, for a handler that acts outside its
        state (a file, the directory) only once the store keeps the record of it; the
        batch's earlier answers go out with it. When the store cannot keep it, raises the
        refusal the batch got (`unavailable` with the store down: the actor then stops,
        as after any batch whose append failed). A write whose handler calls it keeps no
        receipt (one is stored with its write's events, before the reply is known): sent
        again with its request id, it is decided again."""
        probe = Pending()
        self._answers.append((probe, None, None))
        if not await self._flush():
            self.stop()
        if probe.error is not None:
            raise probe.error
        if not probe.done.is_set():  # (a restart that failed: stopping refuses it)
            raise ActorStopped(self.actor_id)

    def once_durable(self, act: Callable[[], None]) -> None:
        """Run `act` (telling another world of this one, or a peer outside the server such as
        a model) once what was committed so far is durable: now when nothing waits for the
        store, else after the batch's append. It is
        dropped if that append fails, or if the actor restarts without the change (a crash
        keeps the batch's earlier messages' events, and their acts, for the next append):
        nobody hears of a change the store may not keep."""
        if self._unflushed:
            self._after_append.append(act)
        else:
            act()

    def tell_when_durable(self, to: str, message: Any) -> None:
        """Tell world `to` `message` once this one's change is durable (`once_durable`)."""
        self.once_durable(partial(self._tell_other, to, message))

    def _tell_other(self, to: str, message: Any) -> None:
        """Tell `to` (loading it if needed, wherever it lives); a world not hosted here or
        whose mailbox is full is logged, not an error of this one's (a full mailbox at
        debug: clients can fill one, and so would fill the log)."""
        try:
            self.context.directory.ref(to).tell(message)
        except ProtocolError as error:
            level = logging.DEBUG if error.code == ErrorCode.OVERLOADED else logging.WARNING
            log.log(level, "%s could not tell %s: %s", self.actor_id, to, error.message)

    def _stage(self, records: Sequence[Event]) -> int:
        """Hand records already folded into the state to the batch's append."""
        self._unflushed.extend(records)
        self._rev += len(records)
        return self._rev

    def receipt(self, caller: str, request_id: str) -> tuple[bool, Any]:
        """`(True, reply)` if `caller`'s write `request_id` is remembered; else `(False, None)`."""
        return self._receipts.seen(caller, request_id)

    def keep_receipt(self, caller: str, request_id: str, result: Any) -> None:
        """Record that `caller`'s write with `request_id`, whose events were just committed
        (up to the current revision), was answered `result` (JSON); the receipt is stored
        in the batch's append, with the events."""
        self._receipts.keep(Receipt(self._rev, caller, request_id, result))

    def publish_view(self) -> None:
        """Push a fresh `snapshot` to every subscriber (for state that is not in events);
        it goes out with the current batch, after the batch's events (and is not made
        while nobody subscribes)."""
        self._view_due = True

    @property
    def watched(self) -> bool:
        """True while anyone subscribes to this actor."""
        return bool(len(self._topic))

    def after(self, delay: float, message: Any) -> Timer:
        """Post `message` to this actor's own mailbox after `delay` seconds."""
        return self._start_timer(delay, message, repeat=False)

    def every(self, interval: float, message: Any) -> Timer:
        """Post `message` to this actor's own mailbox every `interval` seconds."""
        return self._start_timer(interval, message, repeat=True)

    def defer(self) -> Deferred:
        """Called by a handler: it will answer this ask later, through the returned slot
        (e.g. from the message an `offload` posts when its work is done); the handler's
        return value is then ignored. A refusal the handler raises after deferring still
        answers at once. If the actor stops first, the ask is refused `unavailable`."""
        assert self._asked is not None, "defer() is for the handler of an ask"
        deferred = Deferred(self, self._asked)
        self._asked = None
        self._deferred.add(deferred)
        return deferred

    def _settle(self, deferred: Deferred, value: Any, error: ProtocolError | None) -> None:
        if deferred in self._deferred:  # the first answer wins
            self._deferred.discard(deferred)
            self._answers.append((deferred._answer, value, error))

    def offload(self, work: Callable[[], T], done: Callable[[T], Any],
                failed: Callable[[], Any], *, process: bool = False, io: bool = False) -> None:
        """Run `work()` in a worker thread (a process with `process=True`; `io=True` for work
        that waits on a network peer: see actors/runtime/offload.py), then post `done(result)`,
        or `failed()` if it raised (logged), to this actor's mailbox; dropped if it stopped."""
        assert self._nursery is not None, "offload starts in on_start or in a handler"
        limiter = self.context.limiter(io=io, process=process)

        async def run() -> None:
            try:
                try:
                    value = await run_offloaded(work, limiter, process)
                except Exception:
                    log.exception("%s: offloaded work failed", self.actor_id)
                    message = failed()
                else:
                    message = done(value)
                await self._mailbox.post_waiting(Tell(message))  # (not if it stopped meanwhile)
            finally:
                self._offloads -= 1

        self._nursery.start_soon(run)
        self._offloads += 1  # it holds the actor live (`_idle`) until its result is posted

    def _start_timer(self, delay: float, message: Any, *, repeat: bool) -> Timer:
        assert self._nursery is not None, "timers start in on_start or in a handler"
        return self._timers.start(self._nursery, delay, message, repeat)

    # ---- the outside: ask, tell, statistics ---------------------------------------------

    def stop(self) -> None:
        """Stop for good after the current message (waiting asks are refused `unavailable`)."""
        self._mailbox.close()

    @property
    def stopped(self) -> bool:
        """True once the actor stopped for good (crashes, idleness, shutdown)."""
        return self._mailbox.closed

    @property
    def active_at(self) -> float:
        """When it last got a message other than its idle check (trio's clock)."""
        return self._active_at

    async def ask(self, message: Any, timeout: float | None = None) -> Any:
        """Send `message` and wait for the handler's answer.

        Raises the handler's ProtocolError, `overloaded` when the mailbox is full,
        `timeout` after `timeout` seconds (default: the runtime's ask_timeout),
        `actor_restarted` when the handler crashed, `unavailable` when the actor stopped.
        """
        limit = self.context.config.ask_timeout if timeout is None else timeout
        return await self._mailbox.ask(message, limit)

    def send(self, message: Any, answer: Answer) -> None:
        """Post `message` without waiting; its answer goes to `answer` once durable (the
        way a connection answers requests without a task per request). Raises
        `overloaded` or `unavailable` at once, like `tell`; no timeout applies here."""
        self._mailbox.post(Ask(message, answer))

    def tell(self, message: Any) -> None:
        """Post `message` without waiting for it to be handled (`overloaded` when full)."""
        self._mailbox.post(Tell(message))

    async def subscribe(self, queue: SubscriberQueue, since: int | None, request_id: int) -> None:
        """Register `queue` on this actor's topic; the reply and first push go into `queue`."""
        await self.ask(SubscribeMsg(queue, since, request_id))

    def unsubscribe(self, queue: SubscriberQueue) -> None:
        """Forget `queue`, after the messages before (a full mailbox takes it too)."""
        self._mailbox.force(UnsubscribeMsg(queue))

    def statistics(self) -> ActorStatistics:
        """Durable revision, mailbox depth and peak, subscribers, handled, restarts, drops."""
        return ActorStatistics(self.actor_id, self.kind, self._durable_rev, self._mailbox.depth,
                               self._mailbox.peak, len(self._topic), self._handled,
                               self._restarts, self._topic.dropped)

    # ---- the supervisor loop ------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Load from the store, report started, then handle messages until cancelled."""
        try:
            await self._load()  # (`ActorStopped` when stopped meanwhile: no on_start)
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._topic.spread)
                await self.on_start()
                self._active_at = trio.current_time()
                self._arm_idle_check(self.context.config.idle_timeout)
                task_status.started()
                await self._loop()
                nursery.cancel_scope.cancel()
        finally:
            self._stop()
            self.ended.set()

    async def _loop(self) -> None:
        max_batch = self.context.config.max_batch
        budget = self.context.config.batch_seconds
        clock = time.perf_counter  # (durations only; trio's clock is the batch's `now`)
        while True:
            # No timeout here (a cancel scope per wait cost a few percent of a busy
            # server): idleness is an IdleCheck timer message.
            item = self._mailbox.receive_nowait()
            if item is None:
                self._waiting = True
                item = await self._mailbox.receive()
                self._waiting = False
                if item is None:
                    return  # stopped
            handled, started, now = 0, clock(), trio.current_time()
            while item is not None:
                if not await self._process(item, now):
                    return
                handled += 1
                item = None
                if handled < max_batch and clock() - started < budget:
                    item = self._mailbox.receive_nowait()
            if not await self._flush():
                return
            if clock() - started >= budget:  # a long batch: the others' turn first
                await trio.lowlevel.checkpoint()

    async def _process(self, item: Any, now: float) -> bool:
        """Handle one message of the batch begun at `now`; False when the actor must stop."""
        clock = time.perf_counter
        started = clock()
        if isinstance(item, Tell) and isinstance(item.message, IdleCheck):
            return not self._idle_check(now)
        self._active_at = now
        unflushed, mark = self._unflushed, len(self._unflushed)
        told = len(self._after_append)  # (`once_durable`'s of the batch's earlier messages)
        try:
            if isinstance(item, Ask):
                message = item.message
                if isinstance(message, SubscribeMsg | ViewMsg):
                    # From durable state: the batch first (not the subscriber's cost).
                    if not await self._flush():
                        item.pending.fail(ActorStopped(self.actor_id))
                        return False
                    started = clock()
                    if isinstance(item.pending, Pending) and item.pending.done.is_set():
                        return True  # its asker gave up (a timeout): subscribe nobody
                    if isinstance(message, ViewMsg):
                        self._topic.relay(message.relay)  # another process's mirror, if any
                        item.pending.succeed((self._durable_rev, self.view()))
                        return True
                    try:
                        self._topic.subscribe(message.queue, message.since,
                                              message.request_id, self._rev, self.view)
                    except ProtocolError as error:
                        item.pending.fail(error)
                    else:
                        item.pending.succeed(None)
                else:
                    self._asked = item.pending
                    try:
                        value = await self.handle(message)
                        if self._asked is not None:  # not deferred
                            self._answers.append((item.pending, value, None))
                        if len(unflushed) > mark and self._unflushed is unflushed:
                            self._wrote(item.pending, mark)
                    except ProtocolError as error:
                        self._drop_deferral(item.pending)
                        self._answers.append((item.pending, None, error))
                    finally:
                        self._asked = None
            elif isinstance(item, UnsubscribeMsg):
                self._topic.unsubscribe(item.queue)
            elif isinstance(item.message, PushDue):  # (a Tell)
                self._push_armed = False  # the flush after this batch pushes
            else:
                try:
                    await self.on_message(item.message)
                except ProtocolError as error:  # nobody waits on a tell: only logged
                    log.warning("%s refused %r: %s", self.actor_id, item.message, error.message)
        except Exception:
            log.exception("%s crashed handling %r", self.actor_id, item)
            self.context.observer.crashed(self.kind, self.actor_id)
            if isinstance(item, Ask):
                self._drop_deferral(item.pending)
                self._answers.append((item.pending, None, self._restarted()))
            # (after its handler's `durable`, the batch's earlier events are stored already)
            kept = self._unflushed[:mark] if self._unflushed is unflushed else []
            return await self._restart(kept=kept, acts=self._after_append[:told] if kept else [])
        finally:
            self._handled += 1
            elapsed = clock() - started
            self.context.observer.handled(self.kind, elapsed)
            if isinstance(item, Ask):
                charge_sender(item, elapsed)
        return True

    def _wrote(self, answer: Answer, mark: int) -> None:
        """The ask of `answer` staged the batch's events from `mark` on: once they are
        durable, its answer hears their size in the store (`stored(bytes)`, if it has it:
        a client's, whose budget counts them; actors/runtime/deferred.py). A handler that
        made its events durable itself (`durable()`: the owner's console, which has no
        budget) is told nothing."""
        stored = told(answer, "stored")
        if stored is not None:
            self._writers.append((stored, mark, len(self._unflushed)))

    def _drop_deferral(self, answer: Answer) -> None:
        """Forget a deferral of `answer` (its handler failed after deferring)."""
        self._deferred = {d for d in self._deferred if d._answer is not answer}

    async def _flush(self) -> bool:
        """Make the batch durable, answer it, publish it; False when the actor must stop."""
        events, self._unflushed = self._unflushed, []
        acts, self._after_append = self._after_append, []
        writers, self._writers = self._writers, []
        receipts = self._receipts.take()
        if events:
            sizes: list[int] | None = [] if writers else None
            try:
                rev = await self.context.store.append(self.actor_id, self._durable_rev, events,
                                                      receipts, sizes)
            except StoreUnavailable as down:
                # The state in memory is ahead of the store, which cannot be read now
                # either: answer the batch and stop; the next request loads the world
                # again once the store is back.
                log.warning("%s stopped: %s", self.actor_id, down.message)
                answers, self._answers = self._answers, []
                for pending, _, error in answers:
                    pending.fail(error or down)
                return False
            except FencedError as fenced:
                # Another process claimed the world: nothing of this batch was written, and
                # this actor must not serve it any longer (actors/runtime/directory.py).
                log.warning("%s stops: %s", self.actor_id, fenced)
                moved = ActorStopped(self.actor_id, "moved to another process")
                answers, self._answers = self._answers, []
                for pending, _, _ in answers:
                    pending.fail(moved)
                return False
            except Exception:
                log.exception("%s could not append %d events", self.actor_id, len(events))
                self._answers = [(p, None, e or self._restarted()) for p, _, e in self._answers]
                if not await self._restart(kept=[]):
                    return False  # stopping refuses them
                answers, self._answers = self._answers, []
                for pending, _, error in answers:  # now: no later batch may come
                    pending.fail(error)
                return True
            self._durable_rev = rev
            self.context.observer.appended(self.kind, len(events))
            self._receipts.durable(rev)
            if sizes is not None:
                for stored, start, end in writers:
                    stored(sum(sizes[start:end]))
        answers, self._answers = self._answers, []
        for pending, value, error in answers:
            if error is None:
                pending.succeed(value)
            else:
                pending.fail(error)
        if events:
            self._topic.publish(self._durable_rev, events)
        for act in acts:
            try:
                act()
            except Exception:  # another world's trouble is not this batch's
                log.exception("%s: telling of a durable change failed", self.actor_id)
        self._push_if_due()
        if self._view_due:
            self._view_due = False
            if self.watched:  # (unwatched, nothing to render: a subscriber's first push is one)
                self._topic.publish_snapshot(self._durable_rev, self.view())
        if self._durable_rev - self._snapshot_rev >= self.snapshot_every:
            await self._tidy_store()
        return True

    async def _tidy_store(self) -> None:
        """Every `snapshot_every` revisions: save a snapshot and forget the stored receipts
        no load reads any more (those past `receipt_window`). Neither may fail the batch."""
        store, rev = self.context.store, self._durable_rev
        try:
            data = self.snapshot()
            if data is not None:
                await store.save_snapshot(self.actor_id, rev, data)
        except Exception:  # a snapshot only shortens loading: without one, replay all
            log.exception("%s could not save a snapshot", self.actor_id)
        receipts = self._receipts
        try:
            if receipts.to_forget and rev > receipts.window:
                await store.forget_receipts(self.actor_id, rev - receipts.window)
                receipts.to_forget = False
        except Exception:  # kept a while longer: the next period forgets them
            log.exception("%s could not forget old receipts", self.actor_id)
        self._snapshot_rev = rev

    def _push_if_due(self) -> None:
        """Push pending events now, or arm one timer for when `push_interval` has passed."""
        if not self._topic.pending:
            return
        if not len(self._topic):
            self._topic.flush()  # nobody to push to: only forget them (history has them)
            return
        now = trio.current_time()
        # A push to a crowded topic also waits twice as long as the last one took to
        # spread: on a loaded server the fan-out then takes at most half its time.
        interval = max(self.push_interval, len(self._topic) / self.fanout_rate,
                       2 * self._topic.spread_seconds)
        if now - self._last_push >= interval:
            self._topic.flush()
            self._last_push = now
        elif not self._push_armed:
            self._push_armed = True
            self.after(self._last_push + interval - now, PushDue())

