"""The server's watchdog: once a second it drops connections whose client stopped
reading and ends the sessions of revoked tokens; every few seconds it frees the requests
in flight that their worlds never answered (server/claims.py BACKSTOP) and forgets idle
budget entries.

A client that does not read makes the server hold what it sends: the frames in its
outbox (bounded) and the socket's buffers. When a send has waited `send_timeout` seconds
for the client to take it, the connection is cut (its socket closed under the blocked
send) and leaves a trace; its subscriptions were already dropped with a `resync` when its
outbox filled. A token revoked (by `petridish token revoke` or the owner's console) ends
every session that said hello with it: an `unauthorized` notice, then a 1008 close.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio
from websockets.frames import CloseCode

from protocol.envelope import encode_error
from protocol.errors import ErrorCode, ProtocolError
from server.claims import BACKSTOP

if TYPE_CHECKING:
    from server.app import ServerState

TICK = 1.0  # seconds between rounds
SWEEP_EVERY = 10  # rounds between sweeps of idle budget entries


async def drop_slow_readers(state: ServerState) -> None:
    """Cut every connection whose current send waited past the send timeout."""
    now = trio.current_time()
    limit = state.config.budgets.send_timeout
    for session in list(state.sessions):
        since = session.sending_since
        if since is None or session.dropped or now - since < limit:
            continue
        session.dropped = True
        queued = session.outbox.statistics()
        state.metrics.budget_hits.labels("send_timeout").inc()
        state.trace.warn("slow_reader", session.address, "dropped a connection from %s: a "
                         "frame waited %.1f s for it to read (%d frames, %d characters "
                         "queued)", session.address, now - since, queued.depth, queued.chars)
        session.end(CloseCode.POLICY_VIOLATION)
        await session.ws.abort()  # wakes the blocked send: its socket is closed


def end_revoked(state: ServerState) -> int:
    """End the sessions whose token was revoked; how many."""
    digests = state.tokens.digests()
    ended = 0
    for session in list(state.sessions):
        p = session.principal
        if not p.digest or digests.get(p.name) == p.digest or session.draining:
            continue
        state.trace.warn("token_revoked", p.name, "ended a session of %s from %s: its token "
                         "was revoked", p.name, session.address)
        session.end(CloseCode.POLICY_VIOLATION, encode_error(None, ProtocolError(
            ErrorCode.UNAUTHORIZED, "the token this connection said hello with was revoked")))
        ended += 1
    return ended


def sweep(state: ServerState, now: float) -> None:
    """Free every request in flight issued over BACKSTOP ask timeouts before `now` (counted,
    and a trace per account) and forget idle budget entries (`Ledger.sweep`)."""
    limit = BACKSTOP * state.config.runtime.ask_timeout
    for who, tickets in state.ledger.sweep(now, now - limit).items():
        state.metrics.inflight_freed.inc(len(tickets))
        worlds = sorted({t.to or "?" for t in tickets})
        state.trace.warn("unsettled", who, "freed the requests of %s in flight for over %g "
                         "s (%d, to %s): their worlds have not answered them (an ask dropped, "
                         "or offloaded work queued that long)", who, limit,
                         len(tickets), ", ".join(worlds[:3]) + (", ..." if worlds[3:] else ""))


async def run(state: ServerState) -> None:
    """Watch until cancelled."""
    rounds = 0
    while True:
        await trio.sleep(TICK)
        rounds += 1
        await drop_slow_readers(state)
        end_revoked(state)
        if rounds % SWEEP_EVERY == 0:
            sweep(state, trio.current_time())
