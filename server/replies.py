"""Answering a connection's requests without a task per request.

The session posts each request to its actor with a `RequestAnswer`; the actor's task
calls it once the answer is durable, and it encodes the reply straight into the
connection's outbox (past the outbox's bound: at most `max_inflight` replies are ever
owed, and the reader admits a request only while the outbox has room). One server-wide
`Deadlines` task answers `timeout` for a request its actor has not answered within the
ask timeout; a later answer from the actor is then ignored (the first answer wins).
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING, Any

import trio

from protocol.convert import unstructure
from protocol.envelope import encode_error, encode_result
from protocol.errors import ErrorCode, ProtocolError

if TYPE_CHECKING:
    from server.session import Session

log = logging.getLogger("petridish.session")


def internal_error() -> ProtocolError:
    """The refusal a request gets when the server itself failed on it (the bug is logged)."""
    return ProtocolError(ErrorCode.INTERNAL, "the server failed on this request; the failure "
                         "was logged")


class RequestAnswer:
    """The answer slot of one request: encodes the reply into the session's outbox."""

    __slots__ = ("actor_id", "answered", "request_id", "session")

    def __init__(self, session: Session, request_id: int, actor_id: str) -> None:
        self.session = session
        self.request_id = request_id
        self.actor_id = actor_id
        self.answered = False

    def succeed(self, value: Any) -> None:
        """Reply with the op's result."""
        if self.answered:
            return
        try:
            frame = encode_result(self.request_id, unstructure(value))
        except Exception:  # a result the converter cannot render is a bug: refuse, log
            log.exception("the result of request %d to %s could not be encoded",
                          self.request_id, self.actor_id)
            self.fail(internal_error())
            return
        self._deliver(frame)

    def fail(self, error: ProtocolError) -> None:
        """Reply with a refusal."""
        if self.answered:
            return
        self.session.count_error(error)
        self._deliver(encode_error(self.request_id, error))

    def _deliver(self, frame: str) -> None:
        self.answered = True
        self.session.outbox.force(frame)
        self.session.inflight.release()


class Deadlines:
    """Answers `timeout` to every request not answered within `limit` seconds.

    All requests share one limit, so deadlines arrive in order: a FIFO, and one task
    sleeping until the oldest unanswered deadline.
    """

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self._watched: deque[tuple[float, RequestAnswer]] = deque()
        self._wake = trio.Event()

    def watch(self, answer: RequestAnswer) -> None:
        """Start the clock of `answer`."""
        self._watched.append((trio.current_time() + self.limit, answer))
        if len(self._watched) == 1:
            self._wake.set()

    async def run(self) -> None:
        """Refuse overdue requests until cancelled."""
        watched = self._watched
        while True:
            while not watched:
                self._wake = trio.Event()
                await self._wake.wait()
            deadline, answer = watched[0]
            if answer.answered:
                watched.popleft()
            elif trio.current_time() >= deadline:
                watched.popleft()
                answer.fail(ProtocolError(
                    ErrorCode.TIMEOUT, f"{answer.actor_id} did not answer within "
                    f"{self.limit:g} s", {"actor": answer.actor_id}))
            else:
                await trio.sleep_until(deadline)
