"""Answering a connection's requests without a task per request.

The session posts each request to its actor with a `RequestAnswer`; the actor's task
calls it once the answer is durable, and it encodes the reply straight into the
connection's outbox (past the outbox's bound: at most `max_inflight` replies are ever
owed per connection, and `inflight_per_account` per account, and the reader admits a
request only while the outbox has room). One server-wide
`Deadlines` task answers `timeout` for a request its actor has not answered within the
ask timeout (checked a few times a second); a later answer from the actor then sends
nothing (the first answer wins), but only it settles the request's `Ticket`
(server/claims.py; should it never come, the backstop does, `BACKSTOP` ask timeouts on):
the client's place in flight is held until its world is done with the request. An
answered request leaves `Deadlines` at once, so nothing of it outlives its reply
(long-lived garbage would feed the slow full collections of the garbage collector).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import trio

from actors.runtime.mailbox import Pending
from protocol.convert import unstructure
from protocol.envelope import encode_error, encode_result
from protocol.errors import ErrorCode, ProtocolError

if TYPE_CHECKING:
    from server.budgets import Account, Ledger
    from server.claims import Ticket
    from server.session import Session

log = logging.getLogger("petridish.session")


def internal_error() -> ProtocolError:
    """The refusal a request gets when the server itself failed on it (the bug is logged)."""
    return ProtocolError(ErrorCode.INTERNAL, "the server failed on this request; the failure "
                         "was logged")


class Ticketed:
    """The part of an answer that holds its call's `ticket` (server/claims.py: its place in
    flight, and a create's, join's, load's, deal's or vote's; None for a caller without a
    budget): the world's answer settles it, and the bytes the call's events took in the
    store are charged to it."""

    __slots__ = ("ticket",)

    def __init__(self, ticket: Ticket | None = None) -> None:
        self.ticket = ticket

    def stored(self, nbytes: int) -> None:
        """The call's events took `nbytes` in the store (actors/runtime/base.py)."""
        if self.ticket is not None:
            self.ticket.stored(nbytes)

    def _settle(self, done: bool, delivered: bool = True) -> None:
        if self.ticket is not None:  # (once: a ticket settles once)
            self.ticket.settle(done, delivered)

    def _refused(self, error: ProtocolError) -> None:
        """Settle the ticket for `error`: the world's refusal, or one made before the world
        had the call (not `delivered`)."""
        self._settle(False, error.delivered)


class RequestAnswer(Ticketed):
    """The answer slot of one request: encodes the reply into the session's outbox, and
    charges what the request cost (its reading, the world's time and the reply's
    encoding) to the session's client, once, with the reply."""

    __slots__ = ("actor_id", "answered", "deadline", "request_id", "session", "spent")

    def __init__(self, session: Session, request_id: int, actor_id: str) -> None:
        super().__init__()
        self.session = session
        self.request_id = request_id
        self.actor_id = actor_id
        self.answered = False
        self.deadline = 0.0
        self.spent = 0.0  # seconds of server time, charged with the reply

    @property
    def footprint(self) -> int | None:
        """Its client's footprint, should the request load a world (server/outbox.py)."""
        return self.session.outbox.footprint

    def charge(self, seconds: float) -> None:
        """The request cost `seconds` more (its reading; the world's time, which
        actors/runtime/base.py tells); charged at once if it was answered already."""
        if self.answered:
            self.session.charge(seconds)
        else:
            self.spent += seconds

    def succeed(self, value: Any) -> None:
        """Reply with the op's result (the world is done with the request)."""
        self._settle(True)
        if self.answered:
            return
        started = time.perf_counter()
        try:
            frame = encode_result(self.request_id, unstructure(value))
        except Exception:  # a result the converter cannot render is a bug: refuse, log
            log.exception("the result of request %d to %s could not be encoded",
                          self.request_id, self.actor_id)
            self.fail(internal_error())
            return
        self.spent += time.perf_counter() - started
        self._deliver(frame)

    def fail(self, error: ProtocolError) -> None:
        """Reply with a refusal (the world, or the server before the world had it, is done
        with the request)."""
        self._refused(error)
        self.time_out(error)

    def time_out(self, error: ProtocolError) -> None:
        """Reply with `error` unless answered already, holding the request's ticket until
        its world answers (`Deadlines`)."""
        if self.answered:
            return
        self.session.count_error(error)
        self._deliver(encode_error(self.request_id, error))

    def _deliver(self, frame: str) -> None:
        self.answered = True
        self.session.charge(self.spent)
        self.session.server.deadlines.forget(self)
        self.session.outbox.force(frame)
        self.session.release_slot()


class Charged(Ticketed, Pending):
    """The answer slot of an ask whose server time is charged to `account` (the MCP
    endpoint's and the lab routes' asks; a websocket request's `RequestAnswer` charges its
    session), and whose `ticket` (server/claims.py) the world's answer settles: an asker
    that gives up (a timeout, its client gone) leaves it held until then. Call `close`
    when the ask returns."""

    def __init__(self, ledger: Ledger, account: Account | None, ticket: Ticket | None) -> None:
        Ticketed.__init__(self, ticket)
        Pending.__init__(self)
        self.ledger = ledger
        self.account = account

    def succeed(self, value: Any) -> None:
        """The world's result."""
        self._settle(True)
        super().succeed(value)

    def fail(self, error: ProtocolError) -> None:
        """The world's refusal (or the directory's, which did not deliver the ask)."""
        self._refused(error)
        super().fail(error)

    def close(self) -> None:
        """The ask returned: one that was never delivered (neither answered nor given up:
        its delivery raised) frees its ticket now, as nothing will answer it."""
        if not self.done.is_set():
            self._settle(False, delivered=False)

    @property
    def footprint(self) -> int | None:
        """Its account's footprint, should the ask load a world (`Account.footprint`)."""
        return None if self.account is None else self.account.footprint

    def charge(self, seconds: float) -> None:
        """The world spent `seconds` on the ask."""
        self.ledger.charge(self.account, seconds, trio.current_time())


class Deadlines:
    """Answers `timeout` to every request not answered within `limit` seconds.

    The requests owed an answer are a set (at most `max_inflight` per connection); a
    task looks for overdue ones every `limit / 20` seconds while any are owed, so a
    timeout comes between `limit` and `1.05 * limit` after the request.
    """

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self._owed: set[RequestAnswer] = set()
        self._wake = trio.Event()

    def __len__(self) -> int:
        """Requests owed an answer."""
        return len(self._owed)

    def watch(self, answer: RequestAnswer, now: float) -> None:
        """Start the clock of `answer`, asked at `now` (trio's clock)."""
        answer.deadline = now + self.limit
        self._owed.add(answer)
        self._wake.set()

    def forget(self, answer: RequestAnswer) -> None:
        """`answer` was given."""
        self._owed.discard(answer)

    async def run(self) -> None:
        """Refuse overdue requests until cancelled."""
        while True:
            while not self._owed:
                self._wake = trio.Event()
                await self._wake.wait()
            await trio.sleep(self.limit / 20)
            now = trio.current_time()
            for answer in [a for a in self._owed if a.deadline <= now]:
                answer.time_out(ProtocolError(
                    ErrorCode.TIMEOUT, f"{answer.actor_id} did not answer within "
                    f"{self.limit:g} s", {"actor": answer.actor_id}))
