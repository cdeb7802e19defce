"""The server's side of the owner's console (server/admin.py's `Console`): connections,
the store, budgets and their hits, and the tokens, read from the running server.

The console is made before the server's state exists (the directory that hosts the admin
world needs its kind first), so `attach` hands it the state once there is one.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

import trio

from protocol.ops import admin as ops
from server import watchdog
from server.admin import TokenRefused
from server.auth import TokenError

if TYPE_CHECKING:
    from server.app import ServerState
    from server.session import Session

# The per-connection limits of ServerConfig the console shows beside the budgets.
CONNECTION_LIMITS = ("max_frame", "rate", "burst", "outbox_size", "outbox_chars",
                     "max_inflight", "hello_timeout")
INFLIGHT_LISTED = 10  # accounts listed by their requests in flight, the most first


def role_of(session: Session) -> str:
    """A connection's role, `none` before its hello."""
    return session.principal.role if session.greeted else "none"


def row_of(session: Session) -> ops.ConnectionRow:
    """What the console shows of one connection."""
    queued = session.outbox.statistics()
    greeted = session.greeted
    inflight = session.server.config.max_inflight - session.inflight.value
    return ops.ConnectionRow(role_of(session), session.principal.name if greeted else "",
                             session.address, sorted(session.following.topics), queued.depth,
                             queued.chars, max(inflight, 0) if greeted else 0)


class ServerConsole:
    """`Console` over a running server's state."""

    def __init__(self) -> None:
        self._state: ServerState | None = None

    def attach(self, state: ServerState) -> None:
        """The server to read and act on."""
        self._state = state

    @property
    def state(self) -> ServerState:
        """The attached server (RuntimeError before `attach`)."""
        if self._state is None:
            raise RuntimeError("the console is not attached yet")
        return self._state

    def _by_role(self) -> dict[str, int]:
        return {key[0]: int(n) for key, n in self.state.connections_by_role().items()}

    def counts(self) -> ops.ConnectionCounts:
        """Websockets by role, TCP connections, connections without a hello."""
        state = self.state
        return ops.ConnectionCounts(len(state.sessions), state.guard.open,
                                    state.ledger.ungreeted, self._by_role())

    def store(self) -> ops.StoreHealth:
        """Whether writes can be made durable now, and the writer's restarts."""
        state = self.state
        trouble = state.store_trouble()
        restarts = getattr(state.directory.store, "restarts", 0)  # SQLite's writer only
        return ops.StoreHealth(trouble is None, trouble, int(restarts))

    def connections(self, args: ops.ConnectionsArgs) -> ops.Connections:
        """A page of the connections of `args.role`, the fullest outbox first."""
        sessions = [s for s in self.state.sessions if args.role in ("any", role_of(s))]
        rows = sorted((row_of(s) for s in sessions),
                      key=lambda r: (-r.queued_chars, -r.queued_frames, r.address, r.identity))
        return ops.Connections(len(rows), args.offset, self._by_role(),
                               rows[args.offset:args.offset + args.limit])

    def budgets(self) -> ops.BudgetReport:
        """The budgets in force, the per-connection limits, who hit a budget lately, and
        the accounts with the most requests in flight."""
        state = self.state
        now = trio.current_time()
        config = state.config
        limits = {name: float(getattr(config, name)) for name in CONNECTION_LIMITS}
        hits = [ops.HitRow(h.budget, h.who, h.count, round(now - h.last, 1))
                for h in reversed(state.ledger.hits.values())]
        busiest = heapq.nsmallest(INFLIGHT_LISTED, (
            ops.InflightRow(name, a.inflight) for name, a in state.ledger.accounts.items()
            if a.tickets), key=lambda r: (-r.inflight, r.account))
        return ops.BudgetReport(config.budgets.to_json(), limits, hits, busiest)

    def tokens(self) -> list[ops.TokenRow]:
        """Every issued token, with its live sessions."""
        state = self.state
        live: dict[str, int] = {}
        for s in state.sessions:
            if s.principal.digest:
                live[s.principal.name] = live.get(s.principal.name, 0) + 1
        return [ops.TokenRow(t.name, t.role, t.created, live.get(t.name, 0))
                for t in state.tokens.list()]

    def create_token(self, role: str, name: str) -> str:
        """Issue a token; TokenRefused with the store's sentence when it cannot be."""
        try:
            return self.state.tokens.create(role, name)
        except TokenError as refused:
            raise TokenRefused(str(refused)) from None

    def revoke_token(self, name: str) -> tuple[bool, int]:
        """Revoke the token and end its live sessions now."""
        state = self.state
        revoked = state.tokens.revoke(name)
        return revoked, watchdog.end_revoked(state) if revoked else 0
