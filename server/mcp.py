"""MCP over streamable HTTP at `/mcp`: the host of every world's tools and prompts.

The seam: a world declares its MCP tools and prompts in its own package (e.g.
`actors/field/tools.py`) and lists them on its `World` value (`World.tools`,
`World.prompts`; the shapes are `actors.world.Tool` and `Prompt`). This module knows no
world: it lists every hosted world's tools and runs them. For each call it

- names the caller, once per request, before the SDK reads it (server/mcp_door.py): a
  bearer token in `Authorization` is checked like a websocket hello (its name and role);
  without one the caller is an agent on an open server and a spectator otherwise, under
  a name of its own for that call (`mcp~<random>`), so no two anonymous callers share an
  identity. A tool hands an anonymous caller a key (`ToolCall.key`) to be itself again
  later (the field puts it in the agent id);
- holds it to the budgets a websocket client of the same account has (server/budgets.py:
  refused tokens per address, CPU time per account, worlds created, players seated):
  every request, not only a tool call, is refused HTTP 429 unread when its account's CPU
  time is spent, and is charged what serving it cost (the SDK's work and the tool's own,
  as a websocket frame's reading is). The app refuses untrusted origins before this
  module sees a request;
- checks the tool's role, that no argument's text holds NUL or a lone surrogate (as a
  websocket frame's), then the arguments with the protocol's strict converter against
  the tool's attrs args class (the JSON Schema `tools/list` shows is built from the same
  class, bounds included): an unknown argument, a wrong type or a bound broken is refused
  with the websocket's plain sentence naming the argument (`bad_request: agent: at most 80
  characters`), never a validation library's dump;
- answers one line of text plus the payload as `structuredContent`, once. A refusal is a
  tool error whose text is `CODE: message` and whose `structuredContent` is `{"error":
  {code, message, detail}}`. A lone surrogate in either (a world's stored text may hold
  one) is shown as its escape text: pydantic writes none.

`ToolCall.ask` sends ops to worlds through the directory as the caller, with the op's
own role check, its server time charged and its creates and joins counted, so a tool can
do nothing its caller could not do over the websocket.

Stateless, as the field's seed describes its transport: no `Mcp-Session-Id`,
`initialize` is answered as one SSE frame, `notifications/initialized` gets 202, and long
calls send SSE keepalive comments every KEEPALIVE seconds. The client's `clientInfo`
(sent once, at `initialize`) is remembered per credential (token name, or address and
User-Agent) so a later call can name its harness.
"""

from __future__ import annotations

import logging
import secrets
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from hashlib import sha256
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from sse_starlette.sse import EventSourceResponse
from starlette.routing import Route

from actors.runtime import Call
from actors.world import Caller, Prompt, Refusal, Tool, ToolResult
from protocol.convert import structure
from protocol.errors import ErrorCode, ProtocolError
from protocol.jsontext import bad_text_path, escape_lone_surrogates_in
from protocol.roles import role_at_least
from protocol.schema import class_schema
from protocol.text import utf16_clip
from server.budgets import address_key
from server.http_bounds import MCP_PATH
from server.mcp_door import KEYED, Door, Visit
from server.metering import current, unmetered
from server.replies import Charged

if TYPE_CHECKING:
    from starlette.requests import Request

    from server.app import ServerState

KEEPALIVE = 10  # seconds between SSE keepalive comments on a long call
log = logging.getLogger("petridish.mcp")
ROOT = "arguments"  # the converter's root path, dropped from MCP refusals
OP_ROOT = "args"  # an op's own refusals name its args so: a tool's arguments are its args
CLIENTS = 4096  # callers (a credential, else an address) whose clientInfo is remembered
HARNESSES = 8  # clientInfos remembered per caller (by User-Agent); oldest forgotten first


class McpCall:
    """One tool call as a `actors.world.ToolCall`: the caller, its client, and asks (their
    server time charged to the caller's account, creates and joins held to its budget, as
    over the websocket: server/budgets.py)."""

    def __init__(self, state: ServerState, visit: Visit, client: str, origin: str) -> None:
        self._state = state
        self.caller = Caller(visit.principal.name, visit.principal.role)
        self.anonymous = visit.anonymous
        self.client = client
        self.origin = origin
        self.account = visit.account  # what this caller spends (None: the owner)
        self.who = visit.who
        self.t = state.directory.clock()

    async def ask(self, actor_id: str, op: str, args: Any, *, caller: str | None = None) -> Any:
        """Send `op` to `actor_id` as this caller (or a keyed name of it), role checked."""
        spec = self._state.registry.get(op)
        if not role_at_least(self.caller.role, spec.role):
            raise ProtocolError(ErrorCode.FORBIDDEN, f"{op} needs the {spec.role} role; this "
                                f"caller is {self.caller.role}",
                                {"role": self.caller.role, "required": spec.role})
        if caller is not None and not caller.startswith(KEYED):
            raise ValueError("a tool may only speak as the caller or as a keyed name")
        call = Call(op, args, self.caller.role, caller or self.caller.name)
        state = self._state
        answer = Charged(state.ledger, self.account,
                         state.claims.admit(self.account, self.who, call, actor_id))
        try:
            with unmetered():  # the world's time is charged by Charged, once
                return await state.directory.ask(actor_id, call, answer=answer)
        finally:
            answer.close()  # (its ticket waits for the world's answer, even if given up)

    def key(self) -> tuple[str, str]:
        """A fresh key and the caller name it stands for."""
        key = secrets.token_urlsafe(12)
        return key, self.keyed(key)

    def keyed(self, key: str) -> str:
        """The caller name `key` stands for (a digest: names are stored in events)."""
        return KEYED + sha256(f"petridish-mcp-key:{key}".encode()).hexdigest()[:24]

    def fresh_id(self) -> str:
        """A uuid."""
        return str(uuid.uuid4())


def input_schema(tool: Tool) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments: its args class's (bounds included), nested
    classes inlined, with each argument's description."""
    defs: dict[str, Any] = {}
    schema = _inline(class_schema(tool.args, defs), defs)
    schema.pop("description", None)
    for name, extra in [*((n, {"description": t}) for n, t in tool.describe.items()),
                        *tool.keywords.items()]:
        if name not in schema["properties"]:
            raise ValueError(f"tool {tool.name}: no argument {name!r} to describe")
        schema["properties"][name].update(extra)
    return schema


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    if isinstance(schema, dict):
        if "$ref" in schema:
            return _inline(defs[schema["$ref"].rpartition("/")[2]], defs)
        return {k: _inline(v, defs) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_inline(v, defs) for v in schema]
    return schema


def _argument(path: str) -> str:
    """A refusal's path or message as naming a tool's argument (no converter or op root)."""
    return path.removeprefix(f"{ROOT}.").removeprefix(f"{OP_ROOT}.")


def _refusal_text(error: ProtocolError) -> str:
    """`code: message`, argument paths without the converter's root."""
    message = _argument(error.message).replace(": unknown key", ": unknown argument")
    return f"{error.code.value}: {message}"


def _error(error: ProtocolError) -> types.CallToolResult:
    wire = error.to_wire()
    if isinstance(wire["detail"].get("path"), str):
        wire["detail"]["path"] = _argument(wire["detail"]["path"])
    wire["message"] = _refusal_text(error).partition(": ")[2]
    return _result(_refusal_text(error), {"error": wire}, is_error=True)


def _result(text: str, structured: Mapping[str, Any] | None, *, is_error: bool
            ) -> types.CallToolResult:
    """A tool's answer. Pydantic writes no lone surrogate (the call answered HTTP 200 with
    an empty body) and a world's stored text may hold one (kept before the protocol refused
    them), as the websocket's writer knows: each is shown as its escape text."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=escape_lone_surrogates_in(text))],
        structured_content=None if structured is None else escape_lone_surrogates_in(
            dict(structured)), is_error=is_error)


class McpHost:
    """The tools and prompts of the hosted worlds, and the handlers that serve them."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.tools: dict[str, Tool] = {}
        self.prompts: dict[str, Prompt] = {}
        for world in _worlds(state):
            for tool in world.tools:
                if tool.name in self.tools:
                    raise ValueError(f"MCP tool {tool.name!r} is declared twice")
                self.tools[tool.name] = tool
            for prompt in world.prompts:
                if prompt.name in self.prompts:
                    raise ValueError(f"MCP prompt {prompt.name!r} is declared twice")
                self.prompts[prompt.name] = prompt
        self.listing = [types.Tool(name=t.name, title=t.title, description=t.description,
                                   input_schema=input_schema(t)) for t in self.tools.values()]
        # caller -> (digest of its User-Agent -> its clientInfo), both oldest first
        self.clients: OrderedDict[str, OrderedDict[str, str]] = OrderedDict()

    # ---- who calls -----------------------------------------------------------------------

    def _client_key(self, request: Request | None) -> tuple[str, str]:
        """(the caller: its credential's digest, else its address; its User-Agent's digest):
        fixed sizes, however long the headers."""
        if request is None:
            return "", ""
        auth = request.headers.get("authorization", "")
        who = sha256(auth.encode()).hexdigest()[:16] if auth else address_key(
            self.state.proxies.client_of_scope(request.scope))  # (behind a proxy: its client)
        return who, sha256(request.headers.get("user-agent", "").encode()).hexdigest()[:16]

    async def remember_client(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        """Middleware: keep the clientInfo an `initialize` sends, for later calls."""
        if ctx.method == "initialize" and isinstance(ctx.params, Mapping):
            info, name = ctx.params.get("clientInfo"), None
            if isinstance(info, Mapping) and isinstance(info.get("name"), str):
                name = (f"{utf16_clip(info['name'], 60)}/"
                        f"{utf16_clip(str(info.get('version', '')), 20)}").rstrip("/")
            # Kept as a join's harness, so held to a text's rules (no NUL, no lone surrogate).
            if name is not None and bad_text_path(name) is None:
                who, agent = self._client_key(ctx.request)
                harnesses = self.clients.setdefault(who, OrderedDict())
                self.clients.move_to_end(who)
                harnesses[agent] = name
                harnesses.move_to_end(agent)
                while len(harnesses) > HARNESSES:  # one caller cannot evict the others
                    harnesses.popitem(last=False)
                while len(self.clients) > CLIENTS:
                    self.clients.popitem(last=False)
        return await call_next(ctx)

    def client_of(self, request: Request | None) -> str:
        """The client's clientInfo as remembered, else its User-Agent, else ""."""
        who, agent = self._client_key(request)
        known = self.clients.get(who, {}).get(agent)
        if known is not None:
            return known
        return request.headers.get("user-agent", "")[:80] if request is not None else ""

    # ---- handlers ------------------------------------------------------------------------

    async def list_tools(self, _ctx: Any, _params: Any) -> types.ListToolsResult:
        """Every world's tools."""
        return types.ListToolsResult(tools=self.listing)

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams
                        ) -> types.CallToolResult:
        """Run one tool for its caller (see the module doc)."""
        tool = self.tools.get(params.name)
        try:
            if tool is None:
                raise ProtocolError(ErrorCode.UNKNOWN_OP, f"there is no tool {params.name[:80]!r}; "
                                    f"the tools are {', '.join(sorted(self.tools))}",
                                    {"tool": params.name[:80]})
            call = self._call(ctx.request)
            if not role_at_least(call.caller.role, tool.role):
                raise ProtocolError(ErrorCode.FORBIDDEN, f"{tool.name} needs the {tool.role} "
                                    f"role; this caller is {call.caller.role}",
                                    {"role": call.caller.role, "required": tool.role})
            arguments = params.arguments or {}
            # As a websocket frame's: no text may carry NUL or a lone surrogate.
            if (where := bad_text_path(arguments, ROOT)) is not None:
                raise ProtocolError(ErrorCode.BAD_REQUEST, f"{where}: text must be valid "
                                    "Unicode (no NUL, no lone surrogate)", {"path": where})
            args = structure(arguments, tool.args, root=ROOT)
            try:
                result = await tool.run(call, args)
            except ProtocolError as error:  # the world named does not exist: say so its way
                if tool.unknown is None or error.code != ErrorCode.UNKNOWN_ACTOR:
                    raise
                path, sentence = tool.unknown
                raise ProtocolError(ErrorCode.UNKNOWN_ACTOR, f"{path}: {sentence}",
                                    {"path": path}) from None
            if isinstance(result, Refusal):
                raise ProtocolError(result.code, result.message, dict(result.detail))
        except ProtocolError as error:
            return _error(error)
        except Exception:  # a bug: answer it as one and log it
            log.exception("MCP tool %s failed", params.name)
            return _error(ProtocolError(ErrorCode.INTERNAL, "the server failed on this call; "
                                        "the failure was logged"))
        return _answer(result)

    def _call(self, request: Request | None) -> McpCall:
        """The call of the request's caller, as the door named it (its token's refusal, if
        the token was refused)."""
        visit = current()
        assert isinstance(visit, Visit), "an MCP handler runs inside the door's visit"
        if (kept := visit.refusal) is not None:  # raised as a copy: the visit's own would
            # take this call's frames, which hold the context that holds the visit (a cycle:
            # tests/server/test_cyclic_garbage.py)
            raise ProtocolError(kept.code, kept.message, kept.detail)
        origin = str(request.base_url).rstrip("/") if request is not None else ""
        return McpCall(self.state, visit, self.client_of(request), origin)

    async def list_prompts(self, _ctx: Any, _params: Any) -> types.ListPromptsResult:
        """Every world's prompts."""
        return types.ListPromptsResult(prompts=[
            types.Prompt(name=p.name, title=p.title, description=p.description)
            for p in self.prompts.values()])

    async def get_prompt(self, ctx: Any, params: types.GetPromptRequestParams
                         ) -> types.GetPromptResult:
        """One prompt's text, for its caller. A refusal (no such prompt, a bad token, a
        spent budget) is an invalid-params error, `code: message` with the refusal as data:
        the SDK logs any other exception as a failure, with its traceback."""
        try:
            prompt = self.prompts.get(params.name)
            if prompt is None:
                raise ProtocolError(ErrorCode.BAD_REQUEST,
                                    f"there is no prompt {params.name[:80]!r}")
            text = await prompt.text(self._call(ctx.request))
        except ProtocolError as error:
            raise MCPError(types.INVALID_PARAMS, _refusal_text(error), error.to_wire()) from None
        return types.GetPromptResult(description=prompt.description, messages=[
            types.PromptMessage(role="user", content=types.TextContent(
                type="text", text=escape_lone_surrogates_in(text)))])


def _answer(result: ToolResult) -> types.CallToolResult:
    return _result(result.text, result.structured, is_error=False)


def _worlds(state: ServerState) -> list[Any]:
    """The World values the directory hosts (kinds made with `ActorKind.of`)."""
    from server import worlds

    hosted = set(state.directory.kinds)
    return [w for w in worlds.worlds() if w.kind in hosted]


def build(state: ServerState) -> tuple[Route, Callable[[], Any]]:
    """The `/mcp` route and the context manager the app's lifespan must enter."""
    EventSourceResponse.DEFAULT_PING_INTERVAL = KEEPALIVE
    # Stateless, every request is a session of its own, and the SDK logs each one's end at
    # info ("Terminating session: None"): one line on stderr per call, saying nothing.
    logging.getLogger("mcp.server.streamable_http").setLevel(logging.WARNING)
    host = McpHost(state)
    names = ", ".join(host.tools) or "none"
    server: Server[Any] = Server(
        "petridish", version="1", instructions=(
            f"Petri Dish Games: the worlds on this server and their tools ({names}). Each "
            "tool's description says what it does; prompts give an agent its first steps."),
        on_list_tools=host.list_tools, on_call_tool=host.call_tool,
        on_list_prompts=host.list_prompts, on_get_prompt=host.get_prompt)
    server.middleware.append(host.remember_client)
    # Builds the session manager. The SDK's own Host/Origin check is off: it admits only
    # localhost hosts (a server behind a proxy would answer 421); the app checks origins
    # for every endpoint alike (server/peers.py, TrustedOrigins in server/app.py). A body
    # is held to a websocket frame's limit (413 past it, unparsed), not the SDK's 4 MiB.
    server.streamable_http_app(
        stateless_http=True, max_request_body_size=state.config.max_frame,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    manager = server.session_manager

    @asynccontextmanager
    async def running() -> AsyncIterator[None]:
        async with manager.run():
            yield

    # A Route, not a Mount: a Mount answers POST /mcp with a redirect to /mcp/. POST only:
    # stateless, there is no session to stream to or end, and a GET's stream would hold its
    # connection open for good, sending nothing but keepalives.
    return Route(MCP_PATH, Door(state, StreamableHTTPASGIApp(manager)), methods=["POST"]), running


