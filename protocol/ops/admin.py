"""Ops of the owner's console, `admin:main`: what the server holds and who spends it, the
tokens, and a world stopped (held), released or unloaded. Every op needs the owner role;
each change is an event of the admin world's stream (an audit trail: who did what, when).
The lists are paged (`offset`, `limit`), so no answer grows with the server."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from protocol.bounds import MAX_OFFSET, MAX_PAGE, bounded
from protocol.registry import OpSpec

ADMIN_ID = "admin:main"
MAX_NAME = 64  # characters of a token's name (server/auth.py checks its letters)
MAX_ID = 113  # characters of an actor id: a 32-character kind, ':', an 80-character name
AUDIT_SHOWN = 20  # latest audit entries in the overview


@attrs.frozen
class NoArgs:
    """No arguments."""


@attrs.frozen
class PageArgs:
    """The rows `offset` .. `offset + limit - 1` of a list."""

    offset: int = bounded(0, lo=0, hi=MAX_OFFSET)
    limit: int = bounded(50, lo=1, hi=MAX_PAGE)


@attrs.frozen
class ConnectionsArgs:
    """A page of connections, of one role (`none`: no hello yet) or of `any`."""

    offset: int = bounded(0, lo=0, hi=MAX_OFFSET)
    limit: int = bounded(50, lo=1, hi=MAX_PAGE)
    role: Literal["any", "none", "spectator", "agent", "owner"] = "any"


@attrs.frozen
class ConnectionCounts:
    """Connections now: websockets by role, TCP connections, those without a hello."""

    websockets: int
    tcp: int
    ungreeted: int
    by_role: dict[str, int]


@attrs.frozen
class StoreHealth:
    """Whether writes can be made durable now, why not, and the writer's restarts."""

    ok: bool
    trouble: str | None
    restarts: int


@attrs.frozen
class Overview:
    """The server now: how many worlds are live and which are held, connections, the
    store, and the latest changes made through the console (newest first)."""

    live_worlds: int
    held: list[str]
    connections: ConnectionCounts
    store: StoreHealth
    audit: list[dict[str, Any]]


@attrs.frozen
class WorldRow:
    """One world: its durable revision, mailbox, subscribers and counters, and its
    state: `live` (with the world's own `summary`, e.g. a field's state and agents) or
    `held` (stopped by the owner until released; revision -1: not loaded)."""

    id: str
    kind: str
    state: str
    revision: int
    mailbox_depth: int
    mailbox_peak: int
    subscribers: int
    handled: int
    restarts: int
    dropped: int
    summary: dict[str, Any] | None


@attrs.frozen
class Worlds:
    """A page of the live and held worlds, by id."""

    total: int
    offset: int
    worlds: list[WorldRow]


@attrs.frozen
class ConnectionRow:
    """One websocket connection: its role and identity (a token's name, an anonymous
    caller's name), the client's address, the topics it follows, what waits in its
    outbox (frames, characters: bytes for ASCII JSON) and its requests in flight."""

    role: str
    identity: str
    address: str
    subscriptions: list[str]
    queued_frames: int
    queued_chars: int
    inflight: int


@attrs.frozen
class Connections:
    """A page of the connections of the asked role, the busiest outbox first."""

    total: int
    offset: int
    by_role: dict[str, int]
    connections: list[ConnectionRow]


@attrs.frozen
class TokenRow:
    """An issued token (never the token itself) and its live sessions."""

    name: str
    role: str
    created: str
    sessions: int


@attrs.frozen
class Tokens:
    """Every issued token, by name."""

    tokens: list[TokenRow]


@attrs.frozen
class CreateTokenArgs:
    """Issue a token for `name` with `role`."""

    name: str = bounded(length=MAX_NAME, nonempty=True)
    role: Literal["agent", "owner"] = "agent"


@attrs.frozen
class CreatedToken:
    """The token, shown this once: only its digest is kept."""

    name: str
    role: str
    token: str


@attrs.frozen
class RevokeTokenArgs:
    """Revoke the token issued under `name`; its live sessions end."""

    name: str = bounded(length=MAX_NAME)


@attrs.frozen
class Revoked:
    """Whether a token was revoked, and how many sessions that ended."""

    name: str
    revoked: bool
    sessions_ended: int


@attrs.frozen
class HitRow:
    """A budget someone hit: who (a token's name or an address), how often, and how
    many seconds ago last."""

    budget: str
    who: str
    count: int
    last_s: float


@attrs.frozen
class InflightRow:
    """An account's requests and subscribes in flight (`account`: a token's name, or
    `address:ADDRESS` for an anonymous client)."""

    account: str
    inflight: int


@attrs.frozen
class BudgetReport:
    """The budgets in force (server/budgets.py), the per-connection limits, who hit a
    budget lately (newest first, at most 200), and the accounts with the most requests in
    flight (the most first, at most 10)."""

    budgets: dict[str, float]
    connection: dict[str, float]
    hits: list[HitRow]
    inflight: list[InflightRow]


@attrs.frozen
class WorldArgs:
    """The world `id` (`kind:name`)."""

    id: str = bounded(length=MAX_ID, nonempty=True)


@attrs.frozen
class WorldDone:
    """What became of the world: whether it was live, and whether it is held now."""

    id: str
    was_live: bool
    held: bool


def _op(name: str, args: type, result: type, doc: str) -> OpSpec:
    return OpSpec(name, args, result, "owner", doc, default_to=ADMIN_ID)


OPS = (
    _op("admin.overview", NoArgs, Overview,
        "Live and held worlds, connections by role, the store's health, the audit trail."),
    _op("admin.worlds", PageArgs, Worlds,
        "A page of the worlds: mailbox depth, subscribers, revision, state summary."),
    _op("admin.connections", ConnectionsArgs, Connections,
        "A page of the connections: role, identity, address, subscriptions, queued."),
    _op("admin.tokens", NoArgs, Tokens, "List the issued tokens and their live sessions."),
    _op("admin.token_create", CreateTokenArgs, CreatedToken,
        "Issue a token; the answer shows it once."),
    _op("admin.token_revoke", RevokeTokenArgs, Revoked,
        "Revoke a token; its live sessions end."),
    _op("admin.budgets", NoArgs, BudgetReport,
        "The budgets in force, who hit them, and who has the most in flight."),
    _op("admin.stop", WorldArgs, WorldDone,
        "Stop a world and refuse it (unavailable) until admin.release."),
    _op("admin.release", WorldArgs, WorldDone, "Let a stopped world load again."),
    _op("admin.unload", WorldArgs, WorldDone,
        "Unload a world now; the next request loads it from the store."),
)
