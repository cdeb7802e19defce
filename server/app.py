"""The Starlette app, and `serve`, which runs it and `/ws` with the actors on one port.

`/ws` (the protocol, server/session.py) is framed by websockets' sans-I/O protocol in
server/transport.py; every other request goes through Hypercorn's trio server to the
Starlette app: `/mcp`, `/healthz`, `/metrics` (Prometheus text), `/` (the lobby's page)
and the static files of `web/` (each world's pages in `web/<kind>/`). `serve` opens the
event store and the actor directory, starts the front door, reports the bound address,
and on `stop()` shuts down gracefully: stop accepting, let in-flight handlers finish,
close sockets with 1001 (and return as soon as nothing is in flight, at most
`graceful_timeout` later).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import attrs
import trio
from starlette.applications import Starlette
from starlette.requests import Request as HttpRequest
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from actors.runtime import ActorKind, Directory, open_directory
from actors.runtime.context import wall_clock_ms
from protocol.registry import Registry
from server import worlds
from server.auth import TokenStore
from server.config import ServerConfig
from server.mcp import build as build_mcp
from server.metrics import CONTENT_TYPE, Metrics
from server.replies import Deadlines
from server.session import Session
from server.storage import SqliteEventStore
from server.transport import WebSocket, hypercorn_config, serve_front

log = logging.getLogger("petridish.server")


class MetricsObserver:
    """Feeds the runtime's reports into the server's metrics."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def handled(self, kind: str, seconds: float) -> None:
        """One message handled."""
        self.metrics.handler_seconds.labels(kind).observe(seconds)

    def appended(self, kind: str, events: int) -> None:
        """Events made durable."""
        self.metrics.events_appended.labels(kind).inc(events)

    def dropped(self, kind: str) -> None:
        """A slow subscriber dropped."""
        self.metrics.subscribers_dropped.labels(kind).inc()


@attrs.define
class ServerState:
    """What every session shares: settings, ops, actors, tokens, metrics, live sessions."""

    config: ServerConfig
    registry: Registry
    directory: Directory
    tokens: TokenStore
    metrics: Metrics
    deadlines: Deadlines
    sessions: set[Session] = attrs.field(factory=set)
    http_inflight: int = 0  # HTTP requests being answered (websockets are in `sessions`)
    draining: bool = False

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
        status = 503 if state.draining else 200
        return JSONResponse({"ok": not state.draining, "worlds": len(state.directory.live()),
                             "connections": len(state.sessions)}, status_code=status)

    async def lobby_page(_: HttpRequest) -> Response:
        return FileResponse(state.config.web_dir / "lobby" / "index.html")

    async def metrics(_: HttpRequest) -> Response:
        return PlainTextResponse(state.metrics.render(), media_type=CONTENT_TYPE)

    mcp_route, mcp_running = build_mcp(state)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with mcp_running():  # the MCP session manager's task group (server/mcp.py)
            yield

    routes: list[Any] = [
        mcp_route,
        Route("/healthz", healthz),
        Route("/metrics", metrics),
        Route("/", lobby_page),  # each world's pages are in web/<kind>/, the lobby's at /
        Mount("/", StaticFiles(directory=state.config.web_dir, html=True, check_dir=False)),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


@attrs.frozen
class Running:
    """A server started by `serve`: its address, and the way to stop it."""

    host: str
    port: int
    owner_token: str | None  # only when this start created it
    _stop: trio.Event = attrs.field(alias="stop_event")
    state: ServerState

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


async def _session(state: ServerState, ws: WebSocket) -> None:
    """Serve one `/ws` connection (a draining server closes it with 1001 at once)."""
    if state.draining:
        await ws.accept()
        await ws.close(1001)
        return
    session = Session(ws, state)
    state.sessions.add(session)
    try:
        await session.run()
    finally:
        state.sessions.discard(session)


async def serve(config: ServerConfig, *, kinds: Iterable[ActorKind] | None = None,
                registry: Registry | None = None, clock: Callable[[], int] = wall_clock_ms,
                task_status: trio.TaskStatus[Running] = trio.TASK_STATUS_IGNORED) -> None:
    """Run the server until `Running.stop()` (or cancellation); use with `nursery.start`.

    `kinds` and `registry` default to every world and op of `server/worlds.py`; tests
    pass their own to host test-only actors, and their own `clock` (ms since the epoch)
    to move the day.
    """
    tokens = TokenStore(config.data_dir)
    owner_token = tokens.ensure_owner_token()
    metrics = Metrics()
    stop = trio.Event()
    async with SqliteEventStore.in_directory(config.data_dir) as store, open_directory(
            store, worlds.kinds(config.model) if kinds is None else kinds, config=config.runtime,
            observer=MetricsObserver(metrics), clock=clock) as directory:
        state = ServerState(config, registry or worlds.registry(), directory, tokens, metrics,
                            Deadlines(config.runtime.ask_timeout))
        metrics.mailbox_depth.set_function(state.mailbox_depths)
        app = _count_http(build_app(state), state)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(state.deadlines.run)
            binds = await nursery.start(partial(
                serve_front, app, hypercorn_config(config.graceful_timeout), "/ws",
                partial(_session, state), host=config.host, port=config.port,
                max_size=config.max_frame * config.hard_frame_factor,
                ping_interval=config.ping_interval, head_timeout=config.hello_timeout,
                shutdown=stop))
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
            nursery.cancel_scope.cancel()
        log.info("server stopped")
