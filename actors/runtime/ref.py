"""`ActorRef`: a world by id, which is all an adapter (session, MCP, HTTP) holds.

The directory behind it activates the world on demand: a live actor gets the message at
once; one not loaded is started from the store first (in a task of the directory's, so
the sender does not wait); a world that does not exist answers `unknown_actor`, unless
the message is its kind's create call. Where the world lives is the directory's business:
this is the seam a cluster forwards through.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from actors.runtime.mailbox import Answer
from actors.runtime.subscriber import SubscriberQueue
from protocol.errors import ErrorCode, ProtocolError

if TYPE_CHECKING:
    from actors.runtime.directory import Directory


log = logging.getLogger("petridish.actors")
# A tell refused for one of these is a bug (a message no process could take), not a
# world that was busy, moving or stopped.
_FAULTS = frozenset({ErrorCode.INTERNAL, ErrorCode.BAD_REQUEST, ErrorCode.UNKNOWN_ACTOR})


class _Told:
    """The answer of a tell: nobody waits for it, but a refusal is logged (a warning for
    one that says the server is at fault, such as a message a cluster cannot carry)."""

    __slots__ = ("actor_id", "message")
    footprint: int | None = None  # (worlds telling worlds hold them firmly)

    def __init__(self, actor_id: str, message: Any) -> None:
        self.actor_id, self.message = actor_id, message

    def succeed(self, value: Any) -> None:
        """Dropped."""

    def fail(self, error: ProtocolError) -> None:
        """Logged."""
        level = logging.WARNING if error.code in _FAULTS else logging.INFO
        log.log(level, "a %s told %s was lost: %s: %s", type(self.message).__name__,
                self.actor_id, error.code, error.message)


class ActorRef:
    """World `actor_id`, reached through `directory`."""

    __slots__ = ("_directory", "actor_id")

    def __init__(self, directory: Directory, actor_id: str) -> None:
        self._directory = directory
        self.actor_id = actor_id

    def send(self, message: Any, answer: Answer) -> None:
        """Post `message` without waiting; its answer goes to `answer` once durable (or a
        refusal: `overloaded`, `unavailable`, `unknown_actor`, ...)."""
        directory = self._directory
        actor = directory.alive(self.actor_id)
        if actor is None:
            directory.deliver_soon(self.actor_id, message, answer)
        elif directory.placement is None:
            actor.send(message, answer)
        else:  # in a cluster, a message refused because the world moved follows it
            directory.send(self.actor_id, message, answer)

    def tell(self, message: Any) -> None:
        """Post `message`; nobody waits for it to be handled (a refusal is logged)."""
        self.send(message, _Told(self.actor_id, message))

    async def ask(self, message: Any, timeout: float | None = None) -> Any:
        """Send `message` and wait for its answer (the refusal raised as ProtocolError)."""
        return await self._directory.ask(self.actor_id, message, timeout)

    async def subscribe(self, queue: SubscriberQueue, since: int | None,
                        request_id: int) -> None:
        """Follow the world's pushes into `queue` (the reply and first push go there)."""
        await self._directory.subscribe(self.actor_id, queue, since, request_id)

    def unsubscribe(self, queue: SubscriberQueue) -> None:
        """Stop following (a world not live has forgotten `queue` already)."""
        self._directory.unsubscribe(self.actor_id, queue)
