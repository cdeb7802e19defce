"""An actor's bounded mailbox, and what travels through it: calls, asks with their answer
slot, tells, timer handles."""

from __future__ import annotations

from typing import Any, Protocol

import attrs
import trio

from actors.subscriber import SubscriberQueue
from protocol.errors import ErrorCode, ProtocolError


@attrs.frozen
class Call:
    """A protocol request for an actor: the op, its structured args, and who is calling."""

    op: str
    args: Any
    role: str
    caller: str


class Answer(Protocol):
    """Where the answer to one message goes. The actor's task calls exactly one of these,
    once the answer is durable; they must not block (the first answer wins)."""

    def succeed(self, value: Any) -> None:
        """The handler's result."""

    def fail(self, error: ProtocolError) -> None:
        """A refusal."""


class Pending:
    """The answer slot of one ask: the asking task waits on `done`."""

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
        if not self.done.is_set():
            self.error = error
            self.done.set()


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
    with `overloaded`, a closed one with `unavailable`."""

    def __init__(self, owner: str, size: int) -> None:
        self.owner = owner
        self._send, self._receive = trio.open_memory_channel[Any](size)
        self._posted = self._taken = 0  # counted here: channel statistics cost a few µs
        self.peak = 0
        self.closed = False

    @property
    def depth(self) -> int:
        """Messages waiting."""
        return self._posted - self._taken

    def _count_post(self) -> None:
        self._posted += 1
        self.peak = max(self.peak, self._posted - self._taken)

    def _stopped(self) -> ProtocolError:
        return ProtocolError(ErrorCode.UNAVAILABLE, f"{self.owner} has stopped",
                             {"actor": self.owner})

    def post(self, item: Any) -> None:
        """Enqueue `item` now, or raise `overloaded` / `unavailable`."""
        if self.closed:
            raise self._stopped()
        try:
            self._send.send_nowait(item)
        except trio.WouldBlock:
            raise ProtocolError(ErrorCode.OVERLOADED, f"the mailbox of {self.owner} is full",
                                {"actor": self.owner}) from None
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise self._stopped() from None
        self._count_post()

    async def post_waiting(self, item: Any) -> None:
        """Enqueue `item`, waiting for room (the actor's own timers: a tick is not lost)."""
        self._count_post()  # first: the actor may take it before this task resumes
        try:
            await self._send.send(item)
        except BaseException:
            self._posted -= 1
            raise

    async def ask(self, message: Any, timeout: float) -> Any:
        """Post `message` and wait up to `timeout` seconds for its answer (see Actor.ask)."""
        pending = Pending()
        self.post(Ask(message, pending))
        with trio.move_on_after(timeout):
            await pending.done.wait()
        if not pending.done.is_set():
            raise ProtocolError(ErrorCode.TIMEOUT, f"{self.owner} did not answer within "
                                f"{timeout:g} s", {"actor": self.owner})
        if pending.error is not None:
            raise pending.error
        return pending.value

    async def receive(self) -> Any:
        """The next message, waiting for one."""
        item = await self._receive.receive()
        self._taken += 1
        return item

    def receive_nowait(self) -> Any | None:
        """The next message if one is waiting, else None."""
        if self._posted == self._taken:
            return None  # the common case, without raising and catching WouldBlock
        try:
            item = self._receive.receive_nowait()
        except trio.WouldBlock:
            return None
        self._taken += 1
        return item

    def close(self) -> None:
        """Refuse new messages and refuse every waiting ask with `unavailable`."""
        self.closed = True
        self._send.close()
        error = self._stopped()
        while True:
            try:
                item = self._receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                break
            self._taken += 1
            if isinstance(item, Ask):
                item.pending.fail(error)
        self._receive.close()
