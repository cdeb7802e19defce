"""The reference Python client for `/ws`, on `websockets.trio`.

    async with Client.connect("ws://127.0.0.1:8000/ws", token=TOKEN) as c:
        print(c.role)                                    # from the hello reply
        worlds = await c.request("lobby.list", to="lobby:main")
        async with c.subscribe("lobby:main") as pushes:   # subscribed once entered
            async for push in pushes:                     # Push(topic, rev, kind, data)
                ...

Requests are matched to replies by id, so many may be in flight at once. When the
socket drops, the client reconnects with exponential backoff, says hello again and
resubscribes every open subscription with `since` = the last revision it delivered,
so the caller sees each event once and in order (or a snapshot when the server's
history no longer reaches back). A `resync` push (the server dropped a subscriber
that fell behind) is handled the same way.

Frames go out no faster than the connection's token bucket refills (the hello reply
names its `rate` and `burst`; the client keeps a tenth under both, for the network's
jitter), so a caller that outruns it waits instead of being refused `rate_limited`.

Every request carries a `request_id` (a fresh random one unless the caller names it):
a write sent again with the same id is answered with its first result and applied once.
A request id is its caller's own (the token's name, or the anonymous caller its `key`
stands for, which a reconnect keeps): sent by another caller it is another write.
A request whose reply was lost with the socket is sent again, with the same id, on the
next socket (the server applies a write once); with `retry=False` it raises
`ConnectionLost` instead (it may or may not have been applied; its `request_id` is on
the exception).

A resubscribe the server refuses (the world stopped and cannot load yet: held by its
owner, or its store unreachable) is sent again with backoff (0.25 s doubling to 5 s)
for as long as the connection lives and the subscription is open; meanwhile the
subscription's `refused` is the refusal (None again once it is subscribed), and its
pushes resume from the last revision delivered.

A request or subscription refused because its client spent its server time
(`over_budget` `cpu`: the server says "slow down" and names `retry_after`) is sent again
once that time has passed, when it passes before the call's timeout; otherwise the
refusal is raised.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any, Self

import attrs
import trio
from websockets.exceptions import ConnectionClosed, InvalidHandshake
from websockets.trio.client import ClientConnection
from websockets.trio.client import connect as ws_connect

from protocol.envelope import PROTOCOL_VERSION

# Failures of the network or of a server that went away: worth another attempt.
_TRANSIENT = (ConnectionClosed, OSError, TimeoutError, trio.TooSlowError, InvalidHandshake)
HELLO_TIMEOUT = 10.0  # seconds to open the socket, and again to get the hello reply
# Seconds before a refused resubscribe is sent again: doubling from the first to the most.
RESUBSCRIBE_FIRST_DELAY = 0.25
RESUBSCRIBE_MAX_DELAY = 5.0
PACE_MARGIN = 0.9  # of the server's frame rate and burst the client allows itself


class ClientError(Exception):
    """Base of every error this client raises."""


class RequestError(ClientError):
    """The server refused a request (or the hello) with `ok: false`."""

    def __init__(self, code: str, message: str, detail: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.detail = detail


class ConnectionLost(ClientError):
    """The socket closed before the reply arrived; the request may or may not have run.

    `request_id` is the id it was sent with: sending the write again with it applies it at
    most once (see `Client.request`)."""

    request_id: str | None = None


class ClientClosed(ClientError):
    """The client was closed, or stopped reconnecting (see `Client.error`)."""


@attrs.frozen
class Push:
    """One push of a subscribed topic: kind "events" (data: list, last one at rev) or "snapshot"."""

    topic: str
    rev: int
    kind: str
    data: Any


def backoff_delays(first: float = 0.05, cap: float = 5.0) -> Callable[[], float]:
    """A delay source doubling from `first` up to `cap`, with +-25% jitter (no lockstep herds)."""
    attempts = itertools.count()

    def next_delay() -> float:
        base = min(cap, first * 2.0 ** min(next(attempts), 30))
        return base * random.uniform(0.75, 1.25)

    return next_delay


def new_request_id() -> str:
    """A fresh random request id (16 URL-safe characters)."""
    return secrets.token_urlsafe(12)


def _refusal(reply: dict[str, Any]) -> RequestError:
    err = reply.get("error") or {}
    return RequestError(err.get("code", ""), err.get("message", ""), err.get("detail"))


def rest_of(refused: RequestError) -> float | None:
    """Seconds until `refused`, a refusal of a client whose server time is spent, may be
    sent again; None for any other refusal."""
    detail = refused.detail if isinstance(refused.detail, dict) else {}
    wait = detail.get("retry_after") if refused.code == "over_budget" and \
        detail.get("budget") == "cpu" else None
    return float(wait) if isinstance(wait, int | float) and wait >= 0 else None


class _Pending:
    """A request awaiting its reply; `reply` stays None when the socket dropped first."""

    __slots__ = ("done", "reply")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.reply: dict[str, Any] | None = None


class Pace:
    """The connection's token bucket as the client keeps it: a frame waits for a token."""

    @classmethod
    def of_hello(cls, hello: dict[str, Any]) -> Pace | None:
        """The pace the hello's result names (`rate`, `burst`), or None without one."""
        rate, burst = hello.get("rate"), hello.get("burst")
        if all(isinstance(x, int | float) and x > 0 for x in (rate, burst)):
            return cls(rate, burst)
        return None

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate * PACE_MARGIN
        self.burst = max(1.0, burst * PACE_MARGIN)
        self.level = self.burst - 1  # the hello spent one
        self.at = trio.current_time()

    async def spend(self) -> None:
        """Take a token, waiting until one has refilled."""
        while True:
            now = trio.current_time()
            self.level = min(self.burst, self.level + (now - self.at) * self.rate)
            self.at = now
            if self.level >= 1:
                self.level -= 1
                return
            await trio.sleep((1 - self.level) / self.rate)


class Subscription:
    """The pushes of one topic; `async with` it (subscribed on entry) or `async for` over it."""

    def __init__(self, client: Client, topic: str, since: int | None, buffer: int) -> None:
        self.client = client
        self.topic = topic
        self.last_rev = since  # the last revision delivered to the caller
        self.result: Any = None  # the latest subscribe reply's result
        # Why the server refuses to subscribe it again (after a resync or a reconnect),
        # while the client keeps trying; None while subscribed.
        self.refused: RequestError | None = None
        self._send, self._receive = trio.open_memory_channel[Push | None](buffer)
        self._active = False
        self._paused = False  # set while a resync replaces the server-side subscription

    async def __aenter__(self) -> Self:
        await self.client._subscribe(self)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client._unsubscribe(self)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Push:
        if not self._active:
            await self.client._subscribe(self)
        while (push := await self._receive.receive()) is not None:  # None: the client closed
            if push.kind == "snapshot" and self.last_rev is not None and push.rev < self.last_rev:
                continue  # older than what the caller already has
            if push.kind == "events" and self.last_rev is not None:
                # After a resume the server may repeat events we delivered: keep only newer ones.
                fresh = push.rev - self.last_rev
                if fresh <= 0:
                    continue
                if fresh < len(push.data):
                    push = attrs.evolve(push, data=push.data[-fresh:])
            self.last_rev = push.rev
            return push
        self._offer(None)  # put the end marker back so every later __anext__ stops too
        raise StopAsyncIteration

    def _offer(self, push: Push | None) -> bool:
        """Queue a push (reader task); False when the caller has fallen `buffer` pushes behind."""
        try:
            self._send.send_nowait(push)
        except trio.WouldBlock:
            return False
        return True

    def _discard_queued(self) -> None:
        with suppress(trio.WouldBlock):
            while True:
                self._receive.receive_nowait()


class Client:
    """One logical connection to a server, re-established when it drops. Open it with `connect`."""

    def __init__(self, url: str, token: str | None, client: str, *, reconnect: bool,
                 max_size: int, push_buffer: int, key: str | None = None) -> None:
        self.url = url
        self.token = token
        # An anonymous caller's key: given by the first hello's reply (or by the caller, to
        # be an earlier caller again), sent on every reconnect so the caller stays itself.
        self.key = key
        self.client_name = client
        self.reconnect = reconnect
        self.max_size = max_size
        self.push_buffer = push_buffer
        self.role: str | None = None
        self.hello: dict[str, Any] = {}  # the latest hello reply's result
        self.connections = 0  # sockets opened and greeted so far
        self.error: BaseException | None = None  # why reconnecting stopped, if it did
        self._ws: ClientConnection | None = None
        self._nursery: trio.Nursery | None = None  # lives as long as the current socket
        self._ready = trio.Event()  # set while `_ws` is greeted (or once closed)
        self._gone = trio.Event()  # set once the current socket closed (or the client)
        self._closed = False
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._subs: dict[str, Subscription] = {}
        self._pace: Pace | None = None  # the current socket's (None: the server names none)

    # ---- lifetime -------------------------------------------------------------

    @classmethod
    @asynccontextmanager
    async def connect(cls, url: str, token: str | None = None, client: str = "petridish-py/1.0",
                      *, reconnect: bool = True, max_size: int = 2**22,
                      push_buffer: int = 10_000, key: str | None = None
                      ) -> AsyncIterator[Client]:
        """Open a socket, say hello, and keep the connection up until the block ends.

        A failure of the first attempt is raised here (OSError when refused,
        RequestError `unauthorized` for a bad token); later drops are retried with
        backoff while `reconnect` is true. `push_buffer` bounds the pushes queued per
        subscription; a caller that falls further behind is resubscribed from the
        last revision it saw. Without a token the caller is anonymous: `key` (from an
        earlier client's `key`) makes it that earlier caller again.
        """
        self = cls(url, token, client, reconnect=reconnect, max_size=max_size,
                   push_buffer=push_buffer, key=key)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self._run)
                try:
                    yield self
                finally:
                    self._close(None)
                    nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            # Callers get the one error that happened, not a nursery's wrapping of it.
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise

    def _close(self, error: BaseException | None) -> None:
        self._closed = True
        self.error = error
        self._ready.set()  # wake request() waiters so they see `_closed`
        self._gone.set()
        for sub in self._subs.values():
            sub._discard_queued()
            sub._offer(None)  # ends its iteration

    async def _run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Connect, greet, serve the socket; when it drops, back off and do it again."""
        delays = backoff_delays()
        while True:
            try:
                async with ws_connect(self.url, compression=None, max_size=self.max_size,
                                      proxy=None, open_timeout=HELLO_TIMEOUT) as ws:
                    with trio.fail_after(HELLO_TIMEOUT):
                        await self._greet(ws)
                    delays = backoff_delays()
                    async with trio.open_nursery() as nursery:
                        self._ws, self._nursery, self._gone = ws, nursery, trio.Event()
                        nursery.start_soon(self._read, ws)
                        if self.connections > 1:
                            for sub in self._subs.values():
                                sub._paused = False
                                nursery.start_soon(self._resubscribe, sub)
                        self._ready.set()
                        if self.connections == 1:
                            task_status.started()
            except (*_TRANSIENT, RequestError) as exc:
                if self.connections == 0:
                    raise
                if isinstance(exc, RequestError):  # e.g. our token was revoked: retrying won't help
                    self._close(exc)
                    return
            if not self.reconnect:
                self._close(ConnectionLost("the connection dropped and reconnect is off"))
                return
            await trio.sleep(delays())

    async def _greet(self, ws: ClientConnection) -> None:
        """Send hello, wait for its reply, and take the role from it."""
        hello: dict[str, Any] = {"op": "hello", "protocol": PROTOCOL_VERSION, "id": 0,
                                 "client": self.client_name}
        if self.token is not None:
            hello["token"] = self.token
        elif self.key is not None:
            hello["key"] = self.key
        await ws.send(json.dumps(hello))
        reply = json.loads(await ws.recv())
        if not reply.get("ok"):
            raise _refusal(reply)
        self.hello = reply.get("result") or {}
        self.role = self.hello.get("role")
        self.key = self.hello.get("key", self.key)
        self._pace = Pace.of_hello(self.hello)
        self.connections += 1

    async def _read(self, ws: ClientConnection) -> None:
        """Route incoming frames until the socket closes, then fail what awaited a reply."""
        try:
            async for text in ws:
                frame = json.loads(text)
                if "topic" in frame:
                    self._route_push(frame)
                elif (pending := self._pending.pop(frame.get("id"), None)) is not None:
                    pending.reply = frame
                    pending.done.set()
        except ConnectionClosed:
            pass  # an abnormal close is a drop like any other
        finally:
            self._ws, self._nursery = None, None
            self._gone.set()
            if not self._closed:
                self._ready = trio.Event()  # requests wait for the reconnect
            for pending in self._pending.values():
                pending.done.set()
            self._pending.clear()

    def _route_push(self, frame: dict[str, Any]) -> None:
        sub = self._subs.get(frame["topic"])
        if sub is None or sub._paused:
            return  # crossed our unsubscribe, or belongs to a subscription being replaced
        if frame["kind"] == "resync":
            # The server dropped us from the topic; subscribe again from what we delivered.
            self._resync(sub, unsubscribe_first=False)
        elif not sub._offer(Push(frame["topic"], frame["rev"], frame["kind"], frame.get("data"))):
            # Our caller fell behind: the same cure, but the server still has us subscribed.
            self._resync(sub, unsubscribe_first=True)

    def _resync(self, sub: Subscription, *, unsubscribe_first: bool) -> None:
        sub._paused = True
        sub._discard_queued()
        if self._nursery is not None:
            self._nursery.start_soon(self._resubscribe, sub, unsubscribe_first)

    # ---- requests -------------------------------------------------------------

    async def request(self, op: str, to: str | None = None, args: dict[str, Any] | None = None,
                      *, timeout: float = 30.0, request_id: str | None = None,
                      retry: bool = True) -> Any:
        """Send one request and return its result.

        The request carries `request_id` (default: a fresh one), so a write sent again
        with it is applied at most once and answered with its first result. A request
        whose socket dropped before the reply is sent again with the same id once the
        client has reconnected, until `timeout` (`retry=False`: raise ConnectionLost).

        Raises RequestError for an `ok: false` reply (at once, unsent, for args that are not
        JSON or a frame over the hello's `max_frame`: the server's refusal of those could
        not name the request), ConnectionLost when the socket
        dropped first (with `retry=False`), ClientClosed once closed, and trio.TooSlowError
        after `timeout` seconds (time spent waiting for a reconnect counts). A refusal for
        spent server time (`cpu`) is waited out and sent again when its `retry_after`
        ends within `timeout`.
        """
        frame: dict[str, Any] = {"op": op, "request_id": request_id or new_request_id()}
        if to is not None:
            frame["to"] = to
        if args is not None:
            frame["args"] = args
        with trio.fail_after(timeout):
            while True:
                try:
                    return await self._call(frame, math.inf)
                except ConnectionLost as lost:
                    if not retry:
                        lost.request_id = frame["request_id"]
                        raise

    async def _call(self, frame: dict[str, Any], timeout: float,
                    wanted: Callable[[], bool] = lambda: True) -> Any:
        """Send `frame` and return its result; waiting for a reconnect, a token or a spent
        server time's refill counts in `timeout` (and in the caller's deadline). A frame
        refused for spent server time is sent again on the socket that refused it, while
        `wanted()`; a drop meanwhile raises ConnectionLost, as a drop before a reply does."""
        with trio.fail_after(timeout):
            while True:
                try:
                    return await self._send(frame)
                except RequestError as refused:
                    gone, wait = self._gone, rest_of(refused)
                    if wait is None or \
                            trio.current_time() + wait >= trio.current_effective_deadline():
                        raise
                    with trio.move_on_after(wait):
                        await gone.wait()
                    if gone.is_set():
                        raise ConnectionLost(f"the connection closed while {frame['op']} "
                                             "waited to be sent again") from None
                    if not wanted():
                        raise

    async def _send(self, frame: dict[str, Any]) -> Any:
        """Send `frame` once it may go out, and return its result."""
        while True:
            await self._ready.wait()
            if self._closed:
                raise ClientClosed(f"the client is closed ({self.error or 'by its owner'})")
            ws = self._ws
            if ws is not None:
                break
            await trio.sleep(0.01)  # between two sockets: the reconnect is under way
        if self._pace is not None:
            await self._pace.spend()
        rid = frame["id"] = next(self._ids)
        text = self._encode(frame)
        pending = self._pending[rid] = _Pending()
        try:
            await ws.send(text)
            await pending.done.wait()
        except ConnectionClosed:
            pass
        finally:
            self._pending.pop(rid, None)
        if pending.reply is None:
            raise ConnectionLost(f"the connection closed before {frame['op']} #{rid} was answered")
        if not pending.reply.get("ok"):
            raise _refusal(pending.reply)
        return pending.reply.get("result")

    def _encode(self, frame: dict[str, Any]) -> str:
        """The frame's JSON text. The server answers a frame that is not JSON (NaN) or is
        longer than `max_frame` with no id to match, so such a frame is refused here, as
        the server would refuse it, instead of waiting out its timeout."""
        try:
            text = json.dumps(frame, allow_nan=False)
        except ValueError:
            raise RequestError("bad_request", "not JSON: NaN and infinities are not valid "
                               "JSON") from None
        limit = self.hello.get("max_frame")
        if isinstance(limit, int) and len(text.encode()) > limit:
            raise RequestError("too_large", f"the frame is longer than {limit} bytes",
                               {"max_frame": limit})
        return text

    # ---- subscriptions --------------------------------------------------------

    def subscribe(self, topic: str, since: int | None = None) -> Subscription:
        """The pushes of `topic` after revision `since` (None: from the current state).

        `async with c.subscribe(t) as sub:` is subscribed when the block starts and
        unsubscribes when it ends; `async for push in c.subscribe(t):` subscribes on
        the first iteration and stays subscribed until the client closes. One
        subscription per topic per client. A refusal raises RequestError; a socket that
        drops before the answer does not (unless reconnect is off): the subscription
        stays, the reconnect subscribes it again, and `result` is set once answered.
        """
        if topic in self._subs:
            raise ClientError(f"already subscribed to {topic}")
        return Subscription(self, topic, since, self.push_buffer)

    async def _subscribe(self, sub: Subscription) -> None:
        if self._subs.setdefault(sub.topic, sub) is not sub:
            raise ClientError(f"already subscribed to {sub.topic}")
        sub._active = True
        try:
            await self._send_subscribe(sub)
        except ConnectionLost:
            if not self.reconnect:
                self._forget(sub)
                raise
            # Kept, as every open subscription: the reconnect subscribes it again.
        except BaseException:
            self._forget(sub)
            raise

    def _forget(self, sub: Subscription) -> None:
        if self._subs.get(sub.topic) is sub:
            del self._subs[sub.topic]
        sub._active = False

    async def _send_subscribe(self, sub: Subscription) -> None:
        frame: dict[str, Any] = {"op": "subscribe", "to": sub.topic}
        if sub.last_rev is not None:
            frame["since"] = sub.last_rev
        sub.result = await self._call(frame, timeout=30.0,
                                      wanted=lambda: self._subs.get(sub.topic) is sub)

    async def _resubscribe(self, sub: Subscription, unsubscribe_first: bool = False) -> None:
        """Resume `sub` on the current socket. A refusal (the world stopped and is not
        back yet, say) is tried again with backoff, up to RESUBSCRIBE_MAX_DELAY apart,
        while the socket lives and `sub` is open; `sub.refused` names it meanwhile. A drop
        leaves it to the reconnect, which resubscribes (this task ends with the socket)."""
        gone = self._gone  # this socket's end
        if unsubscribe_first:
            try:
                # Once this is answered no push of the old subscription can follow.
                await self._call({"op": "unsubscribe", "to": sub.topic}, timeout=30.0)
            except (ConnectionLost, ClientClosed):
                return
            except (RequestError, trio.TooSlowError):
                pass  # not subscribed there any more, or no answer: subscribe anyway
        sub._paused = False
        delays = backoff_delays(RESUBSCRIBE_FIRST_DELAY, RESUBSCRIBE_MAX_DELAY)
        while self._subs.get(sub.topic) is sub:
            try:
                await self._send_subscribe(sub)
            except (ConnectionLost, ClientClosed):
                return
            except RequestError as refused:
                sub.refused = refused
            except trio.TooSlowError:
                sub.refused = RequestError("timeout", "the subscribe was not answered")
            else:
                sub.refused = None
                return
            with trio.move_on_after(delays()):
                await gone.wait()
            if gone.is_set():
                return  # the reconnect subscribes it again

    async def _unsubscribe(self, sub: Subscription) -> None:
        self._forget(sub)
        if not self._closed and self._ws is not None:
            with suppress(ClientError), trio.move_on_after(5):
                await self._call({"op": "unsubscribe", "to": sub.topic}, timeout=5.0)
