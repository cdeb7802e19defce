"""The field ops as MCP tools over streamable HTTP at `/mcp` (the `mcp` SDK, stateless).

One tool per `field.*` op (`field_start`, `field_join`, ... `field_history`), each with
`game_id` plus the op's own arguments; a call is the same actor message a websocket
request makes, so the same validation, refusals and durability apply. A refusal is a
tool error whose text is `CODE: message` and, when the refusal has detail,
` detail: {JSON}` (e.g. `stale_revision: ... detail: {"revision": 12}`).

Stateless, as the seed's transport describes: no `Mcp-Session-Id`, `initialize` is
answered as one SSE frame, `notifications/initialized` gets 202, and long calls send
SSE keepalive comments every KEEPALIVE seconds. The role: a bearer token in the
`Authorization` header is checked like a websocket hello; without one the caller is an
agent on an open server and a spectator otherwise.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import attrs
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from sse_starlette.sse import EventSourceResponse
from starlette.routing import Route

from actors.runtime import Call
from protocol.convert import structure, unstructure
from protocol.errors import ProtocolError
from protocol.ops.field import OPS
from protocol.roles import role_at_least
from server.auth import Principal

if TYPE_CHECKING:
    from server.app import ServerState

KEEPALIVE = 10  # seconds between SSE keepalive comments on a long call
GAME_ID = "Game id (the field is field:<game id>); the daily field is day-YYYY-MM-DD (UTC)."


def _principal(state: ServerState, headers: typing.Mapping[str, str] | None) -> Principal:
    auth = (headers or {}).get("authorization", "")
    if auth.lower().startswith("bearer "):
        principal = state.tokens.check(auth[7:].strip())
        if principal is None:
            raise ToolError("unauthorized: the token is unknown or was revoked")
        return principal
    return Principal("agent" if state.config.open_mode else "spectator", "mcp")


def _annotation(tp: Any) -> Any:
    """The MCP (pydantic) annotation of an op argument: attrs classes become objects."""
    if attrs.has(tp):
        return dict[str, Any]
    if typing.get_origin(tp) is tuple:  # JSON arrays reach the strict converter as lists
        return list[typing.get_args(tp)[0]]  # type: ignore[misc]
    args = typing.get_args(tp)
    if type(None) in args and len(args) == 2:
        inner = _annotation(next(a for a in args if a is not type(None)))
        return inner | None
    if args and any(attrs.has(a) for a in args):
        return dict[str, Any] | None
    return tp


def _tool(state: ServerState, spec: Any) -> Callable[..., Any]:
    """An async tool function for one op, its signature built from the op's args class."""
    hints = typing.get_type_hints(spec.args)
    params = [inspect.Parameter("game_id", inspect.Parameter.KEYWORD_ONLY, annotation=str)]
    for field in attrs.fields(spec.args):
        default = inspect.Parameter.empty if field.default is attrs.NOTHING else field.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory()
        params.append(inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY,
                                        default=default, annotation=_annotation(hints[field.name])))
    params.append(inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context))

    async def tool(**kwargs: Any) -> dict[str, Any]:
        ctx: Context = kwargs.pop("ctx")
        game = kwargs.pop("game_id")
        principal = _principal(state, ctx.headers)
        try:
            if not role_at_least(principal.role, spec.role):
                raise ToolError(f"forbidden: {spec.name} needs the {spec.role} role")
            args = structure({k: v for k, v in kwargs.items()}, spec.args)
            result = await state.directory.ref(f"field:{game}").ask(
                Call(spec.name, args, principal.role, principal.name))
        except ProtocolError as error:
            detail = f" detail: {json.dumps(error.detail)}" if error.detail else ""
            raise ToolError(f"{error.code.value}: {error.message}{detail}") from None
        return unstructure(result)

    tool.__signature__ = inspect.Signature(params, return_annotation=dict[str, Any])  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in params} | {"return": dict[str, Any]}
    tool.__name__ = spec.name.replace(".", "_")
    return tool


def build(state: ServerState) -> tuple[Route, Callable[[], Any]]:
    """The `/mcp` route and the context manager the app's lifespan must enter."""
    EventSourceResponse.DEFAULT_PING_INTERVAL = KEEPALIVE
    server = MCPServer("petridish-field", instructions=(
        "Play the mosaic field: field_rules for the rules, field_join, then field_observe, "
        "field_reveal and field_commit with expected_revision; retry after stale_revision."))
    for spec in OPS:
        server.add_tool(_tool(state, spec), name=spec.name.replace(".", "_"),
                        description=f"{spec.doc} Argument game_id: {GAME_ID}")
    server.streamable_http_app(stateless_http=True)  # builds the session manager
    manager = server.session_manager

    @asynccontextmanager
    async def running() -> AsyncIterator[None]:
        async with manager.run():
            yield

    # A Route, not a Mount: a Mount answers POST /mcp with a redirect to /mcp/.
    return Route("/mcp", StreamableHTTPASGIApp(manager), methods=["GET", "POST", "DELETE"]), running
