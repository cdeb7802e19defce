"""The door of `/mcp` (server/mcp.py): who sends each request, and its CPU budget.

Before the MCP SDK reads a request, `Door` names its caller once (`Visit`): a bearer
token in `Authorization` is checked as a websocket hello's (its address's refused tokens
budgeted alike); without one, or with one refused, the caller is anonymous, an agent on
an open server and a spectator otherwise, under a fresh name (`mcp~anonymous-<random>`),
and spends its address's account. A token refused is kept as the visit's refusal, for the
handler to answer (a tool error, a prompt's invalid-params error): checked once, it
counts once against `hello_failures`.

Then the caller's account is held to its CPU time (`Ledger.may_compute`, as a websocket
frame's): a spent one is refused unread, nothing changed, HTTP 429 with `Retry-After`
(whole seconds) and a JSON-RPC error without an id (`rpc_refused`, as the app's own
refusals on `/mcp` and the SDK's HTTP-level ones: server/http_bounds.py): code -32600,
message `over_budget: ...` and the refusal as data, `{code, message, detail}`,
`detail.retry_after` to the millisecond. A body past `max_frame`, which the SDK refuses
413 in plain text, is answered 413 in that shape too (`too_large`), so the SDK's client
reports the reason rather than a bare -32603. What serving a request cost
on the trio thread (naming it, the SDK's reading, validation and answer, a tool's own
work, in whichever task: server/metering.py) is charged to the account before the last
of its answer goes out; the worlds' time is charged by the asks (`replies.Charged`).
Every answer is `Cache-Control: no-store, no-transform`, as the server's other live
answers are never stored.
"""

from __future__ import annotations

import math
import secrets
from time import perf_counter
from typing import TYPE_CHECKING

import trio
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from protocol.errors import ErrorCode, ProtocolError
from server.auth import Principal
from server.budgets import Account, address_key
from server.http_bounds import NO_STORE, rpc_refused
from server.metering import Tab, metered, settle, unmetered

if TYPE_CHECKING:
    from server.app import ServerState

KEYED = "mcp~"  # prefix of the names of callers without a token (and of the keyed ones)


class Visit(Tab):
    """One request's caller, named once at the door: its principal (an anonymous one when
    its token was refused, with `refusal`), the account it spends (None: the owner spends
    nothing), its name in budgets and logs; and what serving it cost."""

    __slots__ = ("account", "anonymous", "principal", "refusal", "who")

    def __init__(self, principal: Principal, anonymous: bool, address: str,
                 account: Account | None, refusal: ProtocolError | None = None) -> None:
        super().__init__()
        self.principal = principal
        self.anonymous = anonymous
        self.account = account
        self.refusal = refusal
        self.who = address if anonymous else principal.name


def visit(state: ServerState, request: Request) -> Visit:
    """The caller of `request` and the account it spends (see the module doc)."""
    address = address_key(state.proxies.client_of_scope(request.scope))
    now = trio.current_time()
    auth = request.headers.get("authorization", "")
    refusal = None
    if auth.lower().startswith("bearer "):
        try:
            principal = state.check_token(auth[7:].strip(), address, "an MCP call")
        except ProtocolError as error:
            refusal = error.with_traceback(None)  # kept: no frame of this call with it
        else:
            return Visit(principal, False, address, state.ledger.client_account(
                principal.name, address, principal.role, now))
    role = "agent" if state.config.open_mode else "spectator"
    return Visit(Principal(role, f"{KEYED}anonymous-{secrets.token_hex(8)}"), True, address,
                 state.ledger.client_account(None, address, role, now), refusal)


class Door:
    """The ASGI app of `/mcp` in front of the SDK's `app` (see the module doc)."""

    def __init__(self, state: ServerState, app: ASGIApp) -> None:
        self.state = state
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request, or refuse it 429."""
        ledger, started = self.state.ledger, perf_counter()
        caller = visit(self.state, Request(scope))
        caller.spent = perf_counter() - started  # checking its token is its cost too
        paid = 0.0

        def pay() -> None:
            nonlocal paid
            settle()
            ledger.charge(caller.account, caller.spent - paid, trio.current_time())
            paid = caller.spent

        async def send_paid(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = _never_stored(message)
            if message["type"] != "http.response.body" or message.get("more_body"):
                await send(message)
                return
            pay()  # before the client has its answer: its next request sees the charge
            with unmetered():  # Hypercorn starts the connection's keep-alive wait in it
                await send(message)

        with metered(caller):
            try:
                refusal = ledger.may_compute(caller.account, trio.current_time())
                if refusal is None:
                    await self._sdk(scope, receive, send_paid)
                else:
                    self.state.budget_hit(refusal, caller.who)
                    await rpc_refused(refusal, 429, {"Retry-After": str(
                        math.ceil(refusal.detail["retry_after"]))})(scope, receive, send_paid)
            finally:
                pay()  # the rest (an answer cut short, the transport's ending)

    async def _sdk(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The SDK's app, its 413 (a body past `max_frame`, plain text) answered as a
        JSON-RPC error instead, which its client reports with the reason (with
        `Connection: close`, the rest of the body unread: server/http_bounds.py)."""
        too_large = False

        async def send_413_as_json(message: Message) -> None:
            nonlocal too_large
            too_large = too_large or (message["type"] == "http.response.start"
                                      and message["status"] == 413)
            if not too_large:
                await send(message)

        await self.app(scope, receive, send_413_as_json)
        if too_large:
            limit = self.state.config.max_frame
            await rpc_refused(ProtocolError(ErrorCode.TOO_LARGE, f"the body is longer than "
                                            f"{limit} bytes", {"max_frame": limit}),
                              413)(scope, receive, send)


_MCP_CACHE = f"{NO_STORE}, no-transform".encode()


def _never_stored(start: Message) -> Message:
    """An answer's start with `Cache-Control: no-store` (the server's other live answers',
    server/http_bounds.py `json_reply`) for the SDK's `no-cache` or none; `no-transform`
    kept (a proxy must not compress or buffer an event stream)."""
    headers = [(k, v) for k, v in start.get("headers", ()) if k.lower() != b"cache-control"]
    return {**start, "headers": [*headers, (b"cache-control", _MCP_CACHE)]}
