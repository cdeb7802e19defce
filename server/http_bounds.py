"""What every HTTP request is held to inside the app, beyond Hypercorn's own checks.

- `HttpBudget` (an ASGI middleware): every request (a page, a script, `/metrics`,
  `/healthz`, `/mcp`, the lab's routes) spends one of its client address's HTTP requests
  (`http_rate` per second, `http_burst` at once: server/budgets.py); past them it is
  answered HTTP 429 with `Retry-After` (whole seconds) and the JSON refusal `over_budget`
  (`detail.retry_after`), unread, before any route runs, and only after a pause of
  `REFUSAL_PAUSE` (its connection is not read meanwhile: a flood of requests on a
  connection gets one refusal a second, not one as fast as the server can refuse; past
  `MAX_PAUSED` pausing at once, at once). A local
  supervisor's health checks are its own address's, as every client's: one address
  flooding cannot refuse them (behind a trusted proxy, a client is its forwarded address,
  the proxy's own checks the proxy's).
- `InTime` (an ASGI middleware): a request's body arrives whole within `timeout` seconds
  of its head (the `handshake_timeout` budget, which bounds the head too: server/front.py),
  or the app is cancelled before it saw any of it and the request is answered HTTP 408
  with the JSON refusal and its connection closed; a client that leaves before its body
  ends cancels the app likewise, with nothing to answer (no `ClientDisconnect` escapes as
  a server failure). The last message of an answer is sent shielded from the app's own
  cancellation: Starlette's file responses cancel their sender once the body is out, and
  Hypercorn closes (`Connection: close`, HTTP/1.0) or recycles the connection inside that
  send; cut there, the connection was held open, idle, until its client left. (A write
  its client does not take ends the connection: `send_timeout`, server/front.py.)
- `wrong_method`: a known path asked with a method it does not answer gets 405 with
  `Allow` and the JSON refusal.

An answer that goes out before its request's body was read whole (a refusal: `HttpBudget`'s
429, the MCP door's 429 and 413, an untrusted origin's 403, a 405, a lab route's 401 or
413, ...) says `Connection: close` (`CLOSING`): Hypercorn ends such a connection once the
answer is out unless the body had arrived whole meanwhile, and a client not told so may
send its next request on it, never answered (`InTime` marks the app's answers,
`HttpBudget` its own). A request that declares no body (no `Content-Length` or 0, no
`Transfer-Encoding`) keeps its connection.

A refusal here is `bad_request` (`over_budget` for `HttpBudget`'s), in the shape its
client reads (`refused_for`): on `MCP_PATH` a JSON-RPC error without an id (`rpc_refused`,
as the MCP door's own refusals: server/mcp_door.py), which the MCP SDK's client raises
with the refusal as its data; elsewhere the lab routes' `{"ok": false, "error": {code,
message, detail}}` (`refused`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import mcp_types as types
import trio
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from protocol.errors import ErrorCode, ProtocolError
from protocol.jsontext import compact_encoder, escape_lone_surrogates
from server.peers import header

LATE = 408
MCP_PATH = "/mcp"  # the MCP endpoint's (server/mcp.py): its refusals are JSON-RPC errors
REFUSAL_PAUSE = 1.0  # seconds a request past its HTTP budget waits for its refusal
# Refusals pausing at once, all addresses together; past it one is sent at once. Each holds
# its connection: behind a trusted proxy (one upstream connection per request, no
# per-address bound) unbounded pauses would let one client fill `max_connections`.
MAX_PAUSED = 64


_dumps = compact_encoder(ensure_ascii=False)


NO_STORE = "no-store"  # live answers: no cache keeps one
NEVER_STORED = MappingProxyType({"Cache-Control": NO_STORE})
CLOSING = {"Connection": "close"}  # an answer after which its connection ends


def may_have_body(scope: Scope) -> bool:
    """Whether an HTTP/1.1 request declares a body: a `Content-Length` but 0, or a
    `Transfer-Encoding` (chunked)."""
    length = header(scope, b"content-length")
    return header(scope, b"transfer-encoding") is not None or \
        (length is not None and length.strip() != "0")


def _closing(start: Message) -> Message:
    """An answer's start with `Connection: close` (`CLOSING`), in place of any other."""
    headers = [(k, v) for k, v in start.get("headers", ()) if k.lower() != b"connection"]
    return {**start, "headers": [*headers, (b"connection", b"close")]}


def json_reply(body: dict[str, Any], status: int, headers: dict[str, str] | None = None
               ) -> Response:
    """A JSON answer, never cached (a lone surrogate stored before the protocol refused
    them is sent escaped)."""
    return Response(escape_lone_surrogates(_dumps(body)), status_code=status,
                    media_type="application/json",
                    headers={**NEVER_STORED, **(headers or {})})


def refused(error: ProtocolError, status: int, headers: dict[str, str] | None = None
            ) -> Response:
    """The JSON answer of a refused request: `{"ok": false, "error": {...}}`."""
    return json_reply({"ok": False, "error": error.to_wire()}, status, headers)


def rpc_refused(error: ProtocolError, status: int, headers: dict[str, str] | None = None
                ) -> Response:
    """The JSON-RPC answer of a refused MCP request, an error without an id (its request
    is not read): code -32600, message `CODE: message`, the refusal as data."""
    return json_reply({"jsonrpc": "2.0", "id": None, "error": {
        "code": types.INVALID_REQUEST, "message": f"{error.code.value}: {error.message}",
        "data": error.to_wire()}}, status, headers)


def refused_for(scope: Scope, error: ProtocolError, status: int,
                headers: dict[str, str] | None = None) -> Response:
    """The answer of a refused request in its client's shape (see the module doc)."""
    answer = rpc_refused if scope["path"] == MCP_PATH else refused
    return answer(error, status, headers)


async def wrong_method(request: Request, exc: Exception) -> Response:
    """Starlette's handler of a 405 (a route's, or the static files' for any write)."""
    assert isinstance(exc, HTTPException)
    methods = sorted((exc.headers or {}).get("Allow", "GET, HEAD").split(", "))
    allow = ", ".join(methods)  # a route's come from a set, in any order
    return refused_for(request.scope, ProtocolError(
        ErrorCode.BAD_REQUEST, f"{request.method[:20]} is not answered here; allowed: {allow}",
        {"allow": methods}), 405, {"Allow": allow})


class _Exchange:
    """One request's receive and send as the app sees them (see the module doc)."""

    def __init__(self, receive: Receive, send: Send, timeout: float, body: bool) -> None:
        self._receive = receive
        self._send = send
        self.deadline = trio.current_time() + timeout
        self.scope = trio.CancelScope()  # the app's
        self.body = body  # the request declares one (`may_have_body`)
        self.body_done = False
        self.late = False
        self.started = False

    async def receive(self) -> Message:
        """The next message; past the body, as it comes (a response's wait for the end)."""
        if self.body_done:
            return await self._receive()
        with trio.move_on_at(self.deadline) as waiting:
            message = await self._receive()
        if not waiting.cancelled_caught and message["type"] == "http.request":
            self.body_done = not message.get("more_body", False)
            return message
        self.late = waiting.cancelled_caught
        self.scope.cancel()  # its body is late, or the client left mid-body
        await trio.lowlevel.checkpoint()  # raises Cancelled in the app's own tasks
        return {"type": "http.disconnect"}  # for a task the app started elsewhere

    async def send(self, message: Message) -> None:
        """Send `message`: an answer's start before its body was read whole says
        `Connection: close`; the answer's last one shielded (every write is bounded by the
        connection's send timeout: server/front.py's `ReplayStream`)."""
        if message["type"] == "http.response.start":
            self.started = True
            if self.body and not self.body_done:
                message = _closing(message)
        if message["type"] != "http.response.body" or message.get("more_body", False):
            await self._send(message)
            return
        with trio.CancelScope(shield=True):
            await self._send(message)


class HttpBudget:
    """ASGI middleware: each HTTP request first spends its client's budget (`admit`: the
    refusal when it is spent, else None)."""

    def __init__(self, app: ASGIApp, admit: Callable[[Scope], ProtocolError | None]) -> None:
        self.app = app
        self.admit = admit
        self.paused = 0  # refusals in their pause now (at most MAX_PAUSED)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (refusal := self.admit(scope)) is not None:
            wait = str(math.ceil(refusal.detail.get("retry_after", 1)))
            if self.paused < MAX_PAUSED:
                self.paused += 1
                try:
                    await trio.sleep(REFUSAL_PAUSE)
                finally:
                    self.paused -= 1
            headers = {"Retry-After": wait, **(CLOSING if may_have_body(scope) else {})}
            await refused_for(scope, refusal, 429, headers)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class InTime:
    """ASGI middleware: a request's body in time, its answer's end sent whole."""

    def __init__(self, app: ASGIApp, timeout: float) -> None:
        self.app = app
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exchange = _Exchange(receive, send, self.timeout, may_have_body(scope))
        with exchange.scope:
            await self.app(scope, exchange.receive, exchange.send)
        if exchange.late and not exchange.started:
            late = ProtocolError(ErrorCode.BAD_REQUEST, f"the request's body did not arrive "
                                 f"within {self.timeout:g} s", {"timeout": self.timeout})
            await refused_for(scope, late, LATE, CLOSING)(scope, receive, send)
