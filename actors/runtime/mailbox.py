"""An actor's bounded mailbox, and what travels through it: calls, asks with their answer
slot, tells, timers."""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol

import attrs
import trio

from actors.runtime.subscriber import SubscriberQueue
from actors.runtime.waiter import Waiter
from protocol.errors import ErrorCode, ProtocolError


@attrs.frozen
class Call:
    """A protocol request for an actor: the op, its structured args, and who is calling.

    `request_id` is the client's idempotency key of a write (the envelope's `request_id`,
    not the frame's `id`): a write the same `caller` retries with it is answered with its
    first result.
    """

    op: str
    args: Any
    role: str
    caller: str
    request_id: str | None = None


class ActorStopped(ProtocolError):
    """`unavailable`: the actor stopped before it handled the message (not `delivered`:
    still waiting in its mailbox, or never posted), or before the message's events were
    durable; nothing of it was applied, so a directory that knows where the world went (a
    cluster) may deliver it again."""

    def __init__(self, actor_id: str, why: str = "has stopped", *,
                 delivered: bool = True) -> None:
        super().__init__(ErrorCode.UNAVAILABLE, f"{actor_id} {why}", {"actor": actor_id},
                         delivered=delivered)


class Answer(Protocol):
    """Where the answer to one message goes. The actor's task calls exactly one of these,
    once the answer is durable; they must not block (the first answer wins)."""

    @property
    def footprint(self) -> int | None:
        """How firmly its caller holds worlds live, should the message load one (what the
        directory may unload to make room: `SubscriberQueue.footprint`); None, firmly."""

    def succeed(self, value: Any) -> None:
        """The handler's result."""

    def fail(self, error: ProtocolError) -> None:
        """A refusal."""


class Pending:
    """The answer slot of one ask: the asking task waits on `done`."""

    footprint: int | None = None  # (the server's own asks hold worlds firmly)

    def __init__(self) -> None:
        self.done = trio.Event()
        self.value: Any = None
        self.error: ProtocolError | None = None

    def succeed(self, value: Any) -> None:
        """Answer with `value` (the first answer wins)."""
        if not self.done.is_set():
            self.value = value
            self.done.set()

    def fail(self, error: ProtocolError) -> None:
        """Answer with a refusal (the first answer wins)."""
        self.give_up(error)

    def give_up(self, error: ProtocolError) -> None:
        """Its asker stops waiting: answer with `error` unless answered; the world's own
        answer, later, is still told to `succeed` or `fail` (which a subclass may hear)."""
        if not self.done.is_set():
            self.error = error
            self.done.set()


async def wait_answer(pending: Pending, timeout: float, owner: str) -> Any:
    """The value `pending` is answered with, its refusal raised, or `timeout` after
    `timeout` seconds."""
    try:
        with trio.move_on_after(timeout):
            await pending.done.wait()
    finally:
        if not pending.done.is_set():  # given up (or cancelled): a later answer is dropped
            pending.give_up(ProtocolError(ErrorCode.TIMEOUT, f"{owner} did not answer "
                                          f"within {timeout:g} s", {"actor": owner}))
    error, pending.error = pending.error, None  # (read once: no cycle through the slot)
    if error is not None:
        try:
            raise error
        finally:  # raised from a name, it would hold its traceback's frame
            error = None  # (a cycle: tests/server/test_cyclic_garbage.py)
    return pending.value


@attrs.frozen
class Ask:
    """A message whose answer goes to `pending` (a `Pending` its sender waits on, or any
    other `Answer`)."""

    message: Any
    pending: Answer


@attrs.frozen
class Tell:
    """A message nobody waits for (tells and timer ticks)."""

    message: Any


@attrs.frozen
class SubscribeMsg:
    """Internal: register `queue` on this actor's topic; the reply goes into the queue."""

    queue: SubscriberQueue
    since: int | None
    request_id: int


@attrs.frozen
class UnsubscribeMsg:
    """Internal: forget `queue`."""

    queue: SubscriberQueue


@attrs.frozen
class ViewMsg:
    """Internal: answer `(durable revision, view)` once the batch before it is durable (a
    spectator on another process starts from it). With a `relay` (topic.Relay: another
    process's mirror of the world), the relay follows the snapshot pushes from then on."""

    relay: Any = None


@attrs.frozen
class PushDue:
    """Internal timer message: the coalescing interval of pushes has passed."""


@attrs.frozen
class IdleCheck:
    """Internal timer message: unload if nothing happened for the idle timeout."""


class Timer:
    """A handle on a timer started by `Actor.after` or `Actor.every`."""

    def __init__(self) -> None:
        self.scope = trio.CancelScope()  # the timer task runs inside it

    def cancel(self) -> None:
        """Stop the timer; a message already posted stays in the mailbox."""
        self.scope.cancel()


class Mailbox:
    """A bounded FIFO of messages for one actor. Posting never waits: a full mailbox refuses
    with `overloaded`, a closed one with `unavailable`.

    One task receives (the actor's own), so the mailbox parks and wakes that task itself:
    a deque and one task slot cost a few microseconds less per message than a memory
    channel's bookkeeping, which a busy server pays several times per request.
    """

    def __init__(self, owner: str, size: int) -> None:
        self.owner = owner
        self.size = size
        self._items: deque[Any] = deque()
        self._receiver = Waiter(f"the mailbox of {owner}")  # the actor's task, in `receive`
        self._room = trio.lowlevel.ParkingLot()  # `post_waiting` callers
        self.peak = 0
        self.closed = False

    @property
    def depth(self) -> int:
        """Messages waiting."""
        return len(self._items)

    def _stopped(self) -> ProtocolError:
        return ActorStopped(self.owner, delivered=False)  # (the actor never took it)

    def _put(self, item: Any) -> None:
        self._items.append(item)
        self.peak = max(self.peak, len(self._items))
        self._receiver.wake()

    def post(self, item: Any) -> None:
        """Enqueue `item` now, or raise `overloaded` / `unavailable`."""
        if self.closed:
            raise self._stopped()
        if len(self._items) >= self.size:
            raise ProtocolError(ErrorCode.OVERLOADED, f"the mailbox of {self.owner} is full",
                                {"actor": self.owner}, delivered=False)
        self._put(item)

    def force(self, item: Any) -> None:
        """Enqueue `item` past the bound (an unsubscribe: at most one per subscription
        made, which the bound admitted, so the depth passes `size` by at most the world's
        subscribers); nothing when closed (nobody to tell)."""
        if not self.closed:
            self._put(item)

    async def post_waiting(self, item: Any) -> bool:
        """Enqueue `item`, waiting for room (the actor's own timers: a tick is not lost);
        False when the mailbox is closed (the actor stopped: nobody to tell)."""
        while not self.closed and len(self._items) >= self.size:
            await self._room.park()
        if self.closed:
            return False
        self._put(item)
        return True

    async def ask(self, message: Any, timeout: float) -> Any:
        """Post `message` and wait up to `timeout` seconds for its answer (see Actor.ask)."""
        pending = Pending()
        self.post(Ask(message, pending))
        return await wait_answer(pending, timeout, self.owner)

    async def receive(self) -> Any | None:
        """The next message, waiting for one; None once the mailbox is closed (only the
        owning actor's task calls this)."""
        if not self._items:
            if self.closed:
                return None
            await self._receiver.wait()
            if not self._items:  # woken by close
                return None
        return self._take()

    def receive_nowait(self) -> Any | None:
        """The next message if one is waiting, else None."""
        return self._take() if self._items else None

    def _take(self) -> Any:
        item = self._items.popleft()
        if self._room:
            self._room.unpark()
        return item

    def close(self) -> None:
        """Refuse new messages and refuse every waiting ask with `unavailable` (not
        `delivered`)."""
        self.closed = True
        error = self._stopped()
        items, self._items = self._items, deque()
        for item in items:
            if isinstance(item, Ask):
                item.pending.fail(error)
        self._room.unpark_all()
        self._receiver.wake()


class Timers:
    """An actor's timers: each a task in the actor's nursery that sleeps, then posts its
    message to the mailbox; none touches the actor's state."""

    def __init__(self, mailbox: Mailbox) -> None:
        self._mailbox = mailbox
        self._running: set[Timer] = set()

    def start(self, nursery: trio.Nursery, delay: float, message: Any, repeat: bool) -> Timer:
        """Post `Tell(message)` after `delay` seconds (again every `delay`, with `repeat`)."""
        timer = Timer()
        self._running.add(timer)

        async def run() -> None:
            with timer.scope:
                while True:
                    await trio.sleep(delay)
                    # Closed: the actor was stopped from outside before its task ended.
                    if not await self._mailbox.post_waiting(Tell(message)) or not repeat:
                        break
            self._running.discard(timer)

        nursery.start_soon(run)
        return timer

    def cancel_all(self) -> None:
        """Stop every timer; a message already posted stays in the mailbox."""
        for timer in self._running:
            timer.cancel()
        self._running.clear()
