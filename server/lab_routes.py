"""The lab's HTTP routes, the seed's: thin adapters onto the same actor messages the ops
send (`directory.ref("lab:NAME")`), with the same args classes, bounds and refusals.

| route | op | who |
| --- | --- | --- |
| `POST /api/ok` | `lab.ok` | the owner (`Authorization: Bearer OWNER_TOKEN`) |
| `POST /api/invalid` | `lab.invalid` | the owner |
| `POST /api/vote` | `lab.vote` | the owner (a pair dealt to the arena) |
| `POST /api/pub/seen` | `lab.seen` | anyone: the client key is in the body |
| `POST /api/pub/vote` | `lab.vote` | anyone |

The body is the op's args as one JSON object (`Content-Type: application/json`, at
most `MAX_BODY` bytes); `?lab=NAME` names the lab (default `main`). The reply is the
op's reply without an id, `{"ok": true, "result": ...}` or `{"ok": false, "error":
{code, message, detail}}`, with the HTTP status of its code (`STATUS`). Requires JSON so
a cross-site form cannot post one, and a bearer token (not a cookie) for the owner's; a
refused token spends its address's budget of them, as a hello's (`hello_failures`).
Each client address has a token bucket (the server's per-connection rate and burst), and
each request's server time (its body's parse too, refused or not) is charged as a
websocket request's is: to the token's account, or the address's for an anonymous caller
(`over_budget` `cpu` while others use the server, checked before the body is read), and
the owner's counts toward what the others use; its ask holds a place among the account's
requests in flight until the lab answers it. A visitor's vote is held to its account's
`votes_per_hour`, and a request naming a lab not live to `loads_at_once`, as over a
websocket (server/claims.py).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from actors.runtime import Call
from protocol.convert import structure, unstructure
from protocol.envelope import ACTOR_ID_RE
from protocol.errors import ErrorCode, ProtocolError
from protocol.jsontext import (
    BadNumber,
    bad_text_path,
    exact_int,
    finite_float,
    place_refused_number,
    reject_constant,
    strict_decoder,
)
from protocol.roles import role_at_least
from server.budgets import Account, address_key
from server.http_bounds import json_reply, refused
from server.ratelimit import TokenBucket
from server.replies import Charged, internal_error

if TYPE_CHECKING:
    from server.app import ServerState

log = logging.getLogger("petridish.lab")

MAX_BODY = 65_536  # bytes: an info log of 8,192 characters in any UTF-8, and its framing
MAX_BUCKETS = 4_096  # client addresses whose rate is remembered (the oldest forgotten)

# path -> (op, the role the route needs)
ROUTES: dict[str, tuple[str, str]] = {
    "/api/ok": ("lab.ok", "owner"),
    "/api/invalid": ("lab.invalid", "owner"),
    "/api/vote": ("lab.vote", "owner"),
    "/api/pub/seen": ("lab.seen", "spectator"),
    "/api/pub/vote": ("lab.vote", "spectator"),
}

# HTTP status of each refusal; a code not listed (a lab's own) is 409: the request is
# well formed but the lab's state refuses it.
STATUS: dict[str, int] = {
    ErrorCode.BAD_REQUEST: 400, ErrorCode.UNKNOWN_OP: 404, ErrorCode.UNKNOWN_ACTOR: 404,
    ErrorCode.TOO_LARGE: 413, ErrorCode.UNAUTHORIZED: 401, ErrorCode.FORBIDDEN: 403,
    ErrorCode.RATE_LIMITED: 429, ErrorCode.OVER_BUDGET: 429, ErrorCode.OVERLOADED: 503,
    ErrorCode.TIMEOUT: 504,
    ErrorCode.ACTOR_RESTARTED: 503, ErrorCode.UNAVAILABLE: 503, ErrorCode.INTERNAL: 500,
    "unknown_organism": 404, "not_in_pair": 400,
}
UNSUPPORTED_MEDIA = 415


_decode = strict_decoder(reject_constant, exact_int, finite_float)


def _bad(message: str, **detail: Any) -> ProtocolError:
    return ProtocolError(ErrorCode.BAD_REQUEST, message, detail)


def refusal(error: ProtocolError) -> Response:
    """The reply of a refused request."""
    status = UNSUPPORTED_MEDIA if isinstance(error, _UnsupportedMedia) else \
        STATUS.get(error.code.value, 409)
    return refused(error, status)


class LabRoutes:
    """The seed's routes over one server's directory, tokens and settings."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()

    def routes(self) -> list[Route]:
        """One POST route per entry of ROUTES."""
        return [Route(path, self._endpoint(path), methods=["POST"]) for path in ROUTES]

    def _endpoint(self, path: str) -> Callable[[Request], Any]:
        op, role = ROUTES[path]

        async def endpoint(request: Request) -> Response:
            try:
                return await self._answer(request, op, role)
            except ProtocolError as error:
                self.state.metrics.errors.labels(error.code.value).inc()
                return refusal(error)

        return endpoint

    async def _answer(self, request: Request, op: str, role: str) -> Response:
        if self.state.draining:
            raise ProtocolError(ErrorCode.UNAVAILABLE, "the server is shutting down")
        self._rate(request)
        caller, caller_role = self._caller(request, role)
        query = request.query_params
        actor_id = f"lab:{query.get('lab', 'main')}"
        if not ACTOR_ID_RE.match(actor_id) or set(query) - {"lab"}:
            raise _bad("lab: the only query parameter is lab=NAME (1-80 of A-Za-z0-9_.-)",
                       path="lab")
        account, who = self._account(request, caller, caller_role)
        body = await self._body(request)
        started = time.perf_counter()
        try:  # the parse is the caller's, as a websocket frame's is
            args = self._args(body, op)
        finally:
            self.state.ledger.charge(account, time.perf_counter() - started,
                                     trio.current_time())
        call = Call(op, args, caller_role, caller)
        answer = Charged(self.state.ledger, account,
                         self.state.claims.admit(account, who, call, actor_id))
        try:
            result = await self.state.directory.ask(actor_id, call, answer=answer)
        except ProtocolError:
            raise
        except Exception:  # a bug: refuse and log it, as a session does
            log.exception("%s to %s failed", op, actor_id)
            raise internal_error() from None
        finally:
            answer.close()
        return json_reply({"ok": True, "result": unstructure(result)}, 200)

    def _rate(self, request: Request) -> None:
        """Spend a token of the client address's bucket (`rate_limited` when empty)."""
        cfg = self.state.config
        host = self._address(request)
        bucket = self._buckets.pop(host, None) or TokenBucket(cfg.rate, cfg.burst)
        self._buckets[host] = bucket
        while len(self._buckets) > MAX_BUCKETS:
            self._buckets.popitem(last=False)
        if not bucket.take(trio.current_time()):
            raise ProtocolError(ErrorCode.RATE_LIMITED, f"more than {cfg.rate:g} requests per "
                                "second from this address; slow down", {"rate": cfg.rate})

    def _address(self, request: Request) -> str:
        """The budget key of the request's client (through trusted proxies, as a
        websocket's)."""
        return address_key(self.state.proxies.client_of_scope(request.scope))

    def _account(self, request: Request, caller: str, role: str
                 ) -> tuple[Account | None, str]:
        """The CPU account the request is charged to (None: the owner's) and who it is (as
        budgets name it); `over_budget` when its CPU time is spent while others use the
        server."""
        ledger, now = self.state.ledger, trio.current_time()
        anonymous = caller == "anonymous"
        who = self._address(request) if anonymous else caller
        account = ledger.client_account(None if anonymous else caller, who, role, now)
        self.state.refuse(ledger.may_compute(account, now), who)
        return account, who

    def _caller(self, request: Request, role: str) -> tuple[str, str]:
        """(name, role) of the bearer token, or an anonymous spectator; `unauthorized` for
        a bad token or none on an owner route, `forbidden` for a role below the route's."""
        header = request.headers.get("authorization")
        if header is None:
            if role != "spectator":
                raise ProtocolError(ErrorCode.UNAUTHORIZED, "this route needs the owner's "
                                    "token: Authorization: Bearer TOKEN")
            return "anonymous", "spectator"
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer":
            raise ProtocolError(ErrorCode.UNAUTHORIZED, "send the token as Authorization: "
                                "Bearer TOKEN")
        principal = self.state.check_token(token.strip(), self._address(request),
                                           "a lab route")
        if not role_at_least(principal.role, role):
            raise ProtocolError(ErrorCode.FORBIDDEN, f"this route needs the {role} role; the "
                                f"token is {principal.role}",
                                {"role": principal.role, "required": role})
        return principal.name, principal.role

    async def _body(self, request: Request) -> bytearray:
        """The request's JSON body, of at most MAX_BODY bytes."""
        media = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if media != "application/json":
            raise _UnsupportedMedia()
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY):
            raise ProtocolError(ErrorCode.TOO_LARGE, f"the body is longer than {MAX_BODY} "
                                "bytes", {"max_body": MAX_BODY})
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                raise ProtocolError(ErrorCode.TOO_LARGE, f"the body is longer than {MAX_BODY}"
                                    " bytes", {"max_body": MAX_BODY})
        return body

    def _args(self, body: bytearray, op: str) -> Any:
        """The op's args from a JSON body."""
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise _bad("the body is not UTF-8") from None
        try:
            value = _decode(text)
        except BadNumber as exc:
            found = place_refused_number(text, exc, "args")
            raise _bad(found.message, **found.detail) from None
        except (ValueError, RecursionError) as exc:
            raise _bad(f"not JSON: {exc}"[:200]) from None
        if (where := bad_text_path(value)) is not None:
            raise _bad(f"{where}: text must be valid Unicode (no NUL, no lone surrogate)",
                       path=f"args.{where}")
        return structure(value, self.state.registry.get(op).args)


class _UnsupportedMedia(ProtocolError):
    """A body that is not declared JSON (answered 415)."""

    def __init__(self) -> None:
        super().__init__(ErrorCode.BAD_REQUEST, "the body must be JSON: Content-Type: "
                         "application/json", {"path": "content-type"})


def lab_routes(state: ServerState) -> list[Route]:
    """The seed's routes for `build_app` (server/app.py)."""
    return LabRoutes(state).routes()
