"""Where a world lives when several server processes share the worlds: the directory's seam.

A `Directory` without a placement hosts every world itself (one process, the default).
With one (server/cluster/ provides it), each world lives on one process at a time, the
one holding its lease:

- a message for a world not live here asks `acquire`: None means this process holds the
  lease now (the directory claims the stream, replays it and starts the actor), anything
  else is where the world lives, handed back to `forward` (requests) or `follow`
  (subscriptions), which the placement carries out;
- when an actor stops, the directory hands its lease back with `release`;
- a message refused because its actor stopped before applying it (`ActorStopped`: the
  world moved, its lease was lost, its append was fenced) is delivered again through the
  directory (`Rerouting`), so it reaches the world wherever it went.

Nothing here assumes a store backend or a transport.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import trio

from actors.runtime.deferred import Passing
from actors.runtime.mailbox import ActorStopped, Answer
from actors.runtime.subscriber import SubscriberQueue
from protocol.errors import ProtocolError

if TYPE_CHECKING:
    from actors.runtime.directory import Directory

REDELIVERIES = 5  # times one message may be delivered again after its actor stopped


class Placement(Protocol):
    """The directory's view of the cluster."""

    async def acquire(self, actor_id: str) -> Any | None:
        """Take the world's lease for this process: None when this process holds it (it
        may host the world), else where the world lives."""

    async def release(self, actor_id: str) -> None:
        """Give the world's lease up (its actor stopped, or it does not exist)."""

    def forward(self, where: Any, actor_id: str, message: Any, answer: Answer,
                hops: int) -> None:
        """Deliver `message` to the world on the process `where`; its answer goes to
        `answer`. `hops` counts the processes the message went through before this one."""

    async def follow(self, where: Any, actor_id: str, queue: SubscriberQueue,
                     since: int | None, request_id: int) -> None:
        """Subscribe `queue` to a world that process `where` hosts (the reply and first
        push go into `queue`, as with a local subscribe)."""

    def unfollow(self, actor_id: str, queue: SubscriberQueue) -> None:
        """Forget `queue` (no error if it was not following)."""


class Rerouting(Passing):
    """The answer of a message posted to a live actor in a cluster: a refusal because the
    actor stopped before applying it sends the message through the directory again, for
    the same caller (`Passing`)."""

    __slots__ = ("_deadline", "_directory", "_hops", "_left", "actor_id", "message")

    def __init__(self, directory: Directory, actor_id: str, message: Any, answer: Answer,
                 hops: int, deadline: float, left: int = REDELIVERIES) -> None:
        super().__init__(answer)
        self._directory = directory
        self.actor_id = actor_id
        self.message = message
        self._hops = hops
        self._deadline = deadline
        self._left = left

    @classmethod
    def wrap(cls, directory: Directory, actor_id: str, message: Any, answer: Answer,
             hops: int) -> Rerouting:
        """`answer` wrapped (or, already wrapped once, with one delivery less left)."""
        if isinstance(answer, Rerouting):
            return cls(directory, actor_id, message, answer._answer, hops, answer._deadline,
                       answer._left - 1)
        deadline = trio.current_time() + directory.config.ask_timeout
        return cls(directory, actor_id, message, answer, hops, deadline)

    def succeed(self, value: Any) -> None:
        """The actor's answer."""
        self._answer.succeed(value)

    def fail(self, error: ProtocolError) -> None:
        """Deliver again if the actor stopped before applying the message, else refuse."""
        if (isinstance(error, ActorStopped) and self._left > 0 and not self._directory.closing
                and trio.current_time() < self._deadline):
            self._directory.deliver_soon(self.actor_id, self.message, self, self._hops)
        else:
            self._answer.fail(error)
