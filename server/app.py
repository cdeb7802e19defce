"""The Starlette app, and `serve`, which runs it and `/ws` with the actors on one port.

`/ws` (the protocol, server/session.py) is served by server/transport.py, to which the
front door (server/front.py) routes it; every other request goes through Hypercorn's
trio server to the Starlette app: `/mcp`, `/healthz`, `/metrics` (Prometheus text), `/`
(the lobby's page) and the static files of `web/` (each world's pages in `web/<kind>/`). `serve` opens the
event store (SQLite in the data directory, or PostgreSQL, which makes this process a
node of a cluster: server/cluster/) and the actor directory, starts the front door,
reports the bound address, and on `stop()` shuts down gracefully: stop accepting, let
in-flight handlers finish, close sockets with 1001 (and return as soon as nothing is in
flight, at most `graceful_timeout` later); a cluster's node then hands its worlds over.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from functools import partial
from typing import Any

import attrs
import trio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request as HttpRequest
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import Route
from websockets.frames import CloseCode

from actors.runtime import ActorKind, Directory, open_directory
from actors.runtime.context import wall_clock_ms
from actors.store import EventStore
from protocol.envelope import for_request
from protocol.errors import ErrorCode, ProtocolError, over_budget
from protocol.ops.admin import ADMIN_ID
from protocol.registry import Registry
from protocol.roles import ROLES
from server import admin, data_lock, descriptors, watchdog, worlds
from server.auth import Principal, TokenStore
from server.budgets import Ledger, address_key
from server.claims import Claims
from server.config import ServerConfig
from server.console import ServerConsole
from server.front import hypercorn_config, serve_front
from server.headers import SecurityHeaders
from server.http_bounds import (
    NEVER_STORED,
    HttpBudget,
    InTime,
    json_reply,
    rpc_refused,
    wrong_method,
)
from server.lab_routes import lab_routes
from server.mcp import build as build_mcp
from server.metrics import CONTENT_TYPE, Metrics
from server.pages import Pages
from server.peers import Proxies, header, origin_allowed
from server.reactor import Reactor
from server.replies import Deadlines
from server.session import Session
from server.storage import SqliteEventStore
from server.tcp_guard import TcpGuard
from server.trace import Trace
from server.transport import WebSocket

log = logging.getLogger("petridish.server")


class MetricsObserver:
    """Feeds the runtime's reports into the server's metrics (crashes and budget hits into
    the trace, budget hits into the ledger too)."""

    def __init__(self, metrics: Metrics, trace: Trace, ledger: Ledger) -> None:
        self.metrics = metrics
        self.trace = trace
        self.ledger = ledger

    def handled(self, kind: str, seconds: float) -> None:
        """One message handled."""
        self.metrics.handler_seconds.labels(kind).observe(seconds)

    def appended(self, kind: str, events: int) -> None:
        """Events made durable."""
        self.metrics.events_appended.labels(kind).inc(events)

    def dropped(self, kind: str) -> None:
        """A slow subscriber dropped."""
        self.metrics.subscribers_dropped.labels(kind).inc()

    def crashed(self, kind: str, actor_id: str) -> None:
        """A handler raised (its traceback is logged by the runtime)."""
        self.metrics.actor_crashes.labels(kind).inc()
        self.trace.warn("actor_crashed", actor_id, "%s crashed handling a message", actor_id)

    def refused(self, actor_id: str, refusal: ProtocolError) -> None:
        """A world was not started (every live world in use): a budget hit by no client
        in particular, named by the world, and logged once an interval whichever world
        (a client naming world after world would write a line for each)."""
        self.budget_hit(refusal, actor_id, throttle="")

    def budget_hit(self, refusal: ProtocolError, who: str, throttle: str | None = None
                   ) -> None:
        """Count, keep and log that `who` hit the budget `refusal` names; its log line is
        throttled per (budget, `throttle`), `who` by default."""
        budget = str(refusal.detail.get("budget", "?"))
        self.metrics.budget_hits.labels(budget).inc()
        self.ledger.hit(budget, who, trio.current_time())
        key = f"{budget}:{who if throttle is None else throttle}"
        self.trace.warn("budget", key, "%s hit the %s budget: %s", who, budget,
                        refusal.message)


@attrs.define
class ServerState:
    """What every session shares: settings, ops, actors, tokens, metrics, live sessions."""

    config: ServerConfig
    registry: Registry
    directory: Directory
    tokens: TokenStore
    metrics: Metrics
    deadlines: Deadlines
    trace: Trace
    guard: TcpGuard
    observer: MetricsObserver
    ledger: Ledger = attrs.field()
    claims: Claims = attrs.field()
    proxies: Proxies = attrs.field()
    sessions: set[Session] = attrs.field(factory=set)
    reactor: Reactor = attrs.field()
    cluster: Any = None  # this process as a cluster's node (server/cluster/), if it is one
    http_inflight: int = 0  # HTTP requests being answered (websockets are in `sessions`)
    draining: bool = False
    fatal: str | None = None  # why the server stopped itself (the process exits non-zero)

    @ledger.default
    def _ledger(self) -> Ledger:
        return self.observer.ledger

    @claims.default
    def _claims(self) -> Claims:
        return Claims(self.ledger, self.directory, self.refuse)

    @proxies.default
    def _proxies(self) -> Proxies:
        return Proxies(self.config.trusted_proxies)

    @reactor.default
    def _reactor(self) -> Reactor:
        return Reactor(self.config.runtime.batch_seconds)

    def budget_hit(self, refusal: ProtocolError, who: str) -> None:
        """Count, keep and log that `who` hit the budget `refusal` names."""
        self.observer.budget_hit(refusal, who)

    def refuse(self, refusal: ProtocolError | None, who: str,
               request_id: int | None = None) -> None:
        """Raise `refusal` (a budget's, counted and logged as `who`'s hit; the refusal of
        frame `request_id`) when there is one. Pass it as the call's value, not held in a
        name of the caller's: raised, it holds its traceback's frames, and a frame naming
        it would be a cycle for the collector (tests/server/test_cyclic_garbage.py)."""
        if refusal is not None:
            self.budget_hit(refusal, who)
            try:
                raise for_request(refusal, request_id)
            finally:  # (nor does this frame name it once raised)
                refusal = None

    def check_token(self, token: str, address: str, what: str) -> Principal:
        """The principal `token` stands for, presented by `address` in `what` (a hello, an
        MCP call, a lab route); a bad one (unknown or revoked) is `unauthorized`, counted
        and traced, or `over_budget` once the address's refused tokens are spent.

        A valid token always passes (the lookup is one digest): the budget bounds the work
        and log lines bad tokens cost, not guessing (a token's 256 bits cannot be guessed),
        so one bad token every few seconds cannot lock out the address's token holders."""
        principal = self.tokens.check(token)
        if principal is None:
            now = trio.current_time()
            self.refuse(self.ledger.may_hello(address, now), address)
            self.ledger.hello_refused(address, now)
            self.trace.warn("hello_refused", address, "refused %s from %s: the token is "
                            "unknown or was revoked", what, address)
            raise ProtocolError(ErrorCode.UNAUTHORIZED, "the token is unknown or was revoked")
        return principal

    def store_trouble(self) -> str | None:
        """Why writes cannot be made durable now, or None when they can: the store's
        writer is down (SQLite), or this cluster's node cannot reach PostgreSQL."""
        for part in (self.directory.store, self.cluster):
            if part is not None and not getattr(part, "healthy", True):
                return getattr(part, "trouble", None) or "down"
        return None

    def connections_by_role(self) -> dict[tuple[str, ...], float]:
        """Open websocket connections by role (`none`: no hello yet), for /metrics."""
        out: dict[tuple[str, ...], float] = {(r,): 0.0 for r in ("none", *ROLES)}
        for session in self.sessions:
            out[(session.principal.role if session.greeted else "none",)] += 1
        return out

    def mailbox_depths(self) -> dict[tuple[str, ...], float]:
        """Messages waiting in mailboxes, summed per actor kind (for /metrics)."""
        depths: dict[tuple[str, ...], float] = {(k,): 0.0 for k in self.directory.kinds}
        for stats in self.directory.live():
            depths[(stats.kind,)] += stats.mailbox_depth
        return depths

    def drain(self) -> None:
        """Refuse new connections and tell every session to finish and close with 1001."""
        self.draining = True
        for session in list(self.sessions):
            session.drain()

    @property
    def busy(self) -> bool:
        """True while a session or an HTTP request is still being served."""
        return bool(self.sessions) or self.http_inflight > 0


def _count_http(app: Any, state: ServerState) -> Any:
    """`app` counting its HTTP requests in flight into `state.http_inflight`."""

    async def counted(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        state.http_inflight += 1
        try:
            await app(scope, receive, send)
        finally:
            state.http_inflight -= 1

    return counted


def build_app(state: ServerState) -> Starlette:
    """The ASGI app over `state`."""

    async def healthz(_: HttpRequest) -> Response:
        trouble = "shutting down" if state.draining else state.store_trouble()
        body: dict[str, Any] = {"ok": trouble is None, "worlds": len(state.directory.live()),
                                "connections": len(state.sessions)}
        if trouble is not None:
            body["trouble"] = trouble
        return json_reply(body, 200 if trouble is None else 503)

    async def lobby_page(_: HttpRequest) -> Response:
        return FileResponse(state.config.web_dir / "lobby" / "index.html")

    async def metrics(_: HttpRequest) -> Response:
        return PlainTextResponse(state.metrics.render(), media_type=CONTENT_TYPE,
                                 headers=NEVER_STORED)

    mcp_route, mcp_running = build_mcp(state)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with mcp_running():  # the MCP session manager's task group (server/mcp.py)
            yield

    routes: list[Any] = [
        Route(mcp_route.path, TrustedOrigins(mcp_route.endpoint, state),
              methods=sorted(mcp_route.methods or ())),
        Route("/healthz", healthz),
        Route("/metrics", metrics),
        *lab_routes(state),  # the lab's seed routes: /api/ok, /api/invalid, /api/pub/seen, votes
        Route("/", lobby_page),  # each world's pages are in web/<kind>/, the lobby's at /
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={405: wrong_method},
                    middleware=[
                        Middleware(SecurityHeaders),
                        Middleware(HttpBudget, admit=partial(_http_request, state)),
                        Middleware(InTime, timeout=state.config.budgets.handshake_timeout)])
    # The static files answer what no route matches, not a catch-all Mount: a Mount would
    # also take a route's path asked with another method (GET /api/ok, GET /mcp), which
    # then got the static files' 404, or a 405 naming GET.
    app.router.default = Pages(directory=state.config.web_dir, html=True, check_dir=False)
    return app


def _http_request(state: ServerState, scope: dict[str, Any]) -> ProtocolError | None:
    """Spend one HTTP request of the client's address (`http_rate`); the refusal (counted
    and logged as its hit) when it is spent. The owner's requests (its bearer token: the
    lab's owner routes, `/mcp`) spend nothing, as the owner spends no budget."""
    auth = header(scope, b"authorization") or ""
    if auth[:7].lower() == "bearer " and state.tokens.is_owner(auth[7:].strip()):
        return None
    address = address_key(state.proxies.client_of_scope(scope))
    refusal = state.ledger.may_request(address, trio.current_time())
    if refusal is not None:
        state.budget_hit(refusal, address)
    return refusal


@attrs.frozen
class Running:
    """A server started by `serve`: its address, and the way to stop it."""

    host: str
    port: int
    owner_token: str | None  # only when this start created it
    _stop: trio.Event = attrs.field(alias="stop_event")
    state: ServerState

    @property
    def node(self) -> str | None:
        """This process's name in its cluster (None: a single process)."""
        return self.state.cluster.name if self.state.cluster is not None else None

    @property
    def peer_addr(self) -> str | None:
        """Where the cluster's other processes reach this one."""
        return self.state.cluster.addr if self.state.cluster is not None else None

    @property
    def url(self) -> str:
        """http://HOST:PORT"""
        return f"http://{self.host}:{self.port}"

    @property
    def ws_url(self) -> str:
        """ws://HOST:PORT/ws"""
        return f"ws://{self.host}:{self.port}/ws"

    def stop(self) -> None:
        """Begin the graceful shutdown; `serve` returns when it is complete."""
        self._stop.set()

    @property
    def stopped(self) -> trio.Event:
        """Set once the shutdown began (by `stop`, or the server itself: `state.fatal`)."""
        return self._stop


class TrustedOrigins:
    """An ASGI app (the MCP endpoint) behind a check of the request's `Origin`: an untrusted
    one is refused with 403 (server/peers.py), a JSON-RPC error `forbidden`."""

    def __init__(self, app: Any, state: ServerState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Serve the request, or refuse it."""
        state = self.state
        origin = header(scope, b"origin")
        if scope["type"] == "http" and not origin_allowed(
                origin, header(scope, b"host"), state.config.allowed_origins):
            address = address_key(state.proxies.client_of_scope(scope))
            state.trace.warn("origin_refused", address, "refused an MCP request from %s: "
                             "origin %r is not allowed", address, (origin or "")[:100])
            refusal = ProtocolError(ErrorCode.FORBIDDEN, "this origin may not use the server")
            await rpc_refused(refusal, 403)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _session(state: ServerState, ws: WebSocket) -> Awaitable[None]:
    """What serves one `/ws` connection: its Session's run (returned, not awaited here: a
    coroutine frame less on every connection), or the refusal of an untrusted origin (HTTP
    403), or the 1001 of a draining server."""
    address = address_key(state.proxies.client_host(ws.peer, ws.headers.get("X-Forwarded-For")))
    origin = ws.headers.get("Origin")
    if not origin_allowed(origin, ws.headers.get("Host"), state.config.allowed_origins):
        state.trace.warn("origin_refused", address, "refused a websocket from %s: origin %r "
                         "is not allowed", address, (origin or "")[:100])
        return ws.refuse(403, "this origin may not use the server")
    if state.draining:
        return _going_away(ws)
    return Session(ws, state, address).run()


async def _going_away(ws: WebSocket) -> None:
    await ws.accept()
    await ws.close(CloseCode.GOING_AWAY)


def _watch_store(store: Any, metrics: Metrics, trace: Trace) -> None:
    """Trace the store writer's deaths and restarts (a SQLite store has them)."""
    def on_writer(what: str, why: str) -> None:
        if what == "restarted":
            metrics.store_restarts.inc()
        else:
            trace.warn("store_writer", what, "the event store's writer %s%s", what,
                       f": {why}" if why else "")

    if hasattr(store, "on_writer"):
        store.on_writer = on_writer


async def _load_console(directory: Directory) -> None:
    """Load the owner's console, which holds again the worlds the owner stopped; a
    console that cannot load is logged, and the server serves without those holds."""
    try:
        await directory.get(ADMIN_ID)
    except Exception:
        log.exception("the owner's console could not load: the worlds it holds stopped "
                      "are not held")


def first_error(error: BaseException) -> BaseException:
    """The first exception that `error`, a group of nurseries' groups perhaps, holds."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


class CannotListen(Exception):
    """The server's address cannot be bound (in use, not this host's, ...)."""

    def __init__(self, host: str, port: int, failed: BaseException) -> None:
        error = first_error(failed)  # the bind's own OSError
        why = error.strerror if isinstance(error, OSError) and error.strerror else error
        super().__init__(f"cannot listen on {host}:{port}: {why}")


async def serve(config: ServerConfig, *, kinds: Iterable[ActorKind] | None = None,
                registry: Registry | None = None, clock: Callable[[], int] = wall_clock_ms,
                store_opener: StoreOpener | None = None,
                task_status: trio.TaskStatus[Running] = trio.TASK_STATUS_IGNORED) -> None:
    """Run the server until `Running.stop()` (or cancellation); use with `nursery.start`.

    `kinds` and `registry` default to every world and op of `server/worlds.py`; tests
    pass their own to host test-only actors, and their own `clock` (ms since the epoch)
    to move the day. The owner's console (`admin:main`) is always hosted, attached to
    this server. With SQLite it holds the data directory's lock (`data_lock`): a second
    server on the same directory raises `DataDirInUse` before it touches anything. The
    descriptor limit is raised, and `max_connections` fitted under it (server/descriptors.py).
    A test's `store_opener` replaces `open_store` (to make the store fail).
    """
    async with AsyncExitStack() as stack:
        if not config.clustered:  # a cluster's nodes share PostgreSQL, not the directory
            stack.enter_context(data_lock.held(config.data_dir))
        # Logs: after the lock, so a second server logs nothing into the first one's log.
        config = attrs.evolve(config, budgets=descriptors.fit(config.budgets))
        tokens = TokenStore(config.data_dir)
        tokens.repair()
        metrics = Metrics()
        trace = Trace(metrics)
        stop = trio.Event()
        registry = registry or worlds.registry()
        observer = MetricsObserver(metrics, trace, Ledger(config.budgets))
        store = await stack.enter_async_context((store_opener or open_store)(config))
        _watch_store(store, metrics, trace)
        node = None
        if config.clustered:
            from server.cluster import join
            from server.storage.postgres import PostgresEventStore

            assert isinstance(store, PostgresEventStore)
            node = await stack.enter_async_context(join(config, store, registry, observer))
            node.instrument(metrics)
        console = ServerConsole()
        hosted = [k for k in (worlds.kinds() if kinds is None else kinds)
                  if k.kind != admin.KIND] + [admin.kind(console)]
        directory = await stack.enter_async_context(open_directory(
            store, hosted, config=config.runtime,
            observer=observer, clock=clock, model=config.model,
            placement=node.router if node else None,
            max_live_worlds=config.budgets.max_live_worlds))
        if node is not None:
            await node.start(directory)
        proxies = Proxies(config.trusted_proxies)
        guard = TcpGuard(config.budgets, proxies, lambda budget, who: state.budget_hit(
            over_budget(budget, "connection refused", 0), who))
        state = ServerState(config, registry, directory, tokens, metrics,
                            Deadlines(config.runtime.ask_timeout), trace, guard, observer,
                            proxies=proxies, cluster=node)
        console.attach(state)
        if node is None:  # the worlds the owner stopped are held again before any request
            await _load_console(directory)  # (a cluster's node does it: cluster/holds.py)
        metrics.store_up.set_function(lambda: {(): 0.0 if state.store_trouble() else 1.0})
        metrics.mailbox_depth.set_function(state.mailbox_depths)
        metrics.connections_by_role.set_function(state.connections_by_role)
        metrics.inflight.set_function(lambda: {(): state.ledger.inflight()})
        _instrument_store(metrics, store)
        app = _count_http(build_app(state), state)

        def dropped(budget: str, peer: str, seconds: float, what: str) -> None:
            host = address_key(peer) if peer else "?"
            metrics.budget_hits.labels(budget).inc()
            trace.warn("slow_reader", host, "dropped a connection from %s: it %s for %.0f s",
                       host, what, seconds)

        async def exit_when_the_store_gives_up() -> None:
            gave_up = getattr(store, "gave_up", None)
            if gave_up is None:
                return
            await gave_up.wait()
            fail("the event store's writer could not be kept running")

        async def exit_when_replaced(leases: Any) -> None:
            await leases.replaced.wait()
            # A restart under the same --node is refused while that process runs.
            fail(leases.replaced_why, "this process serves nothing more; do not restart "
                 "it under the same --node")

        def fail(why: str, advice: str = "a supervisor should restart the server") -> None:
            state.fatal = why
            log.error("stopping: %s (%s)", why, advice)
            stop.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(state.deadlines.run)
            nursery.start_soon(state.reactor.run)
            nursery.start_soon(watchdog.run, state)
            nursery.start_soon(exit_when_the_store_gives_up)
            if node is not None:
                nursery.start_soon(exit_when_replaced, node.leases)
            budgets = config.budgets
            front = partial(
                serve_front, app, hypercorn_config(config.graceful_timeout,
                                                   budgets.handshake_timeout), "/ws",
                partial(_session, state), host=config.host, port=config.port,
                max_size=config.max_frame * config.hard_frame_factor,
                max_frame=config.max_frame, ping_interval=config.ping_interval,
                head_timeout=budgets.handshake_timeout, shutdown=stop,
                send_timeout=budgets.send_timeout, guard=guard,
                ping_dropped=partial(dropped, "ping"),
                send_dropped=partial(dropped, "send_timeout"),
                violated=lambda code: metrics.violation_closes.labels(str(code)).inc())
            try:
                binds = await nursery.start(front)
            except* OSError as failed:  # the address is in use, not this host's, ...
                raise CannotListen(config.host, config.port, failed) from None
            # Made once the server listens: a first start that cannot bind leaves no token
            # unprinted behind it.
            owner_token = tokens.ensure_owner_token()
            host, _, port = binds[0].removeprefix("http://").rpartition(":")
            task_status.started(Running(host.strip("[]"), int(port), owner_token, stop,
                                        state))
            await stop.wait()
            state.drain()  # sessions finish and close with 1001; no new connection
            # Once our own work in flight (sessions, HTTP requests) is done, within
            # graceful_timeout, whatever connection is still held is cut at once.
            with trio.move_on_after(config.graceful_timeout):
                while state.busy:
                    await trio.sleep(0.01)
            if node is not None:
                await node.leave()
            nursery.cancel_scope.cancel()
        log.info("server stopped")


StoreOpener = Callable[[ServerConfig], AbstractAsyncContextManager[EventStore]]


def open_store(config: ServerConfig) -> AbstractAsyncContextManager[EventStore]:
    """The event store of `config` (an async context manager): PostgreSQL for a cluster,
    else SQLite in the data directory."""
    if config.clustered:
        from server.storage.postgres import PostgresEventStore

        assert config.store is not None
        return PostgresEventStore(config.store)
    return SqliteEventStore.in_directory(config.data_dir)


def _instrument_store(metrics: Metrics, store: EventStore) -> None:
    metrics.store_appends.set_function(lambda: {(): store.statistics().appends})
    metrics.store_commits.set_function(lambda: {(): store.statistics().commits})
    metrics.fenced_appends.set_function(lambda: {(): store.statistics().fenced})
