"""The connections between the processes of a cluster (frames: server/cluster/wire.py).

`PeerServer` accepts the other processes' connections on the peer port: a hello with the
cluster's secret, then every request is posted to this process's directory as if a local
session had sent it (same converter, same roles as the first process granted), and its
answer goes back on the same connection, with what handling it cost here (charged to its
client there: wire.py). `Link` is this process's ONE persistent connection to one other
process: requests from every session share it, matched to their replies by id; it is
opened when first needed, pinged while requests wait, and given up (every waiting
request told whether it had been sent) when the peer closes it, cannot be reached, or
says nothing for `silence` seconds while requests wait.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import Any

import trio

from actors.runtime import Call, Directory
from actors.runtime.mailbox import ViewMsg
from protocol.convert import structure, unstructure
from protocol.envelope import PROTOCOL_VERSION, check_actor_id
from protocol.errors import ErrorCode, ProtocolError
from protocol.registry import Registry
from server.cluster.wire import MAX_HELLO, MAX_LINE, Lines, Outbox, encode, footprint_of, refusal
from server.trace import Throttle

log = logging.getLogger("petridish.cluster")

HELLO_TIMEOUT = 2.0  # seconds to open a link and get its hello answered
# Connections that have not said hello yet (each may hold MAX_HELLO bytes for at most
# HELLO_TIMEOUT); more are closed at once. A cluster's peers need one each.
MAX_GREETING = 32
CROWD_LOG_EVERY = 10.0  # seconds between two warnings of refused connections
MAX_INFLIGHT = 8192  # requests one incoming link may have unanswered; more wait
PING_EVERY = 0.5  # seconds between pings while requests wait for replies
RELAY_BACKLOG = 8 << 20  # bytes waiting for a peer past which its mirrors' relays end
Reply = Callable[[dict[str, Any] | None, bool], None]  # (reply or None, was it sent)
# What a broken connection or a peer sending garbage raises.
LINK_ERRORS = (OSError, ValueError, trio.BrokenResourceError, trio.ClosedResourceError)


class _PeerAnswer:
    """The answer to one request of an incoming link: its reply frame, once, with what
    handling it cost here (`charge`, `stored`: told before it is given; wire.py)."""

    __slots__ = ("_done", "_id", "_slots", "_view", "footprint", "nbytes", "outbox",
                 "seconds")

    def __init__(self, outbox: Outbox, request_id: int, slots: trio.Semaphore,
                 view: bool = False) -> None:
        self.outbox, self._id, self._slots, self._view = outbox, request_id, slots, view
        self._done = False
        self.footprint: int | None = None  # its caller's, should it load a world here
        self.seconds = 0.0  # what its message cost here, for the requester's client
        self.nbytes = 0

    def charge(self, seconds: float) -> None:
        """Serving the message cost `seconds` (told to the requester with the reply)."""
        self.seconds += seconds

    def stored(self, nbytes: int) -> None:
        """The message's events took `nbytes` in the store (told with the reply)."""
        self.nbytes += nbytes

    def succeed(self, value: Any) -> None:
        if self._done:
            return
        if self._view:
            rev, data = value
            value = {"rev": rev, "view": data}
        try:
            frame = encode(self._costs({"id": self._id, "ok": True,
                                        "result": unstructure(value)}))
        except Exception:  # a result the converter cannot render is a bug: refuse, log
            log.exception("the reply to peer request %d could not be encoded", self._id)
            self.fail(ProtocolError(ErrorCode.INTERNAL, "the result could not be encoded"))
            return
        self._finish(frame)

    def fail(self, error: ProtocolError) -> None:
        if not self._done:
            frame: dict[str, Any] = {"id": self._id, "ok": False, "error": refusal(error)}
            if not error.delivered:
                frame["delivered"] = False
            self._finish(encode(self._costs(frame)))

    def _costs(self, frame: dict[str, Any]) -> dict[str, Any]:
        """`frame` with what the message cost here, if anything."""
        if self.seconds:
            frame["seconds"] = self.seconds
        if self.nbytes:
            frame["stored"] = self.nbytes
        return frame

    def _finish(self, frame: bytes) -> None:
        self._done = True
        self.outbox.put(frame)
        self._slots.release()


class _PeerRelay:
    """A peer's mirror of world `topic`, hosted here: the world's snapshot pushes go to it
    on the peer's connection (topic.Relay), as the frames every subscriber got, and a
    `resync` when the relay ends: the world's actor stopped (`unloaded` to make room), or
    the peer reads so slowly that RELAY_BACKLOG bytes wait for it (it then asks for a view
    again). It holds the world as firmly as the peer says its spectators do (`footprint`,
    wire.py)."""

    __slots__ = ("_outbox", "closed", "footprint", "topic")

    def __init__(self, outbox: Outbox, topic: str, footprint: int | None) -> None:
        self._outbox, self.topic, self.footprint = outbox, topic, footprint
        self.closed = False

    def snapshot(self, rev: int, frame: str) -> None:
        if self._outbox.size > RELAY_BACKLOG:
            self._end(rev, "slow_consumer")
        else:
            self._outbox.put(frame.encode() + b"\n")

    def stopped(self, rev: int, unloaded: bool) -> None:
        self._end(rev, "unloaded" if unloaded else "actor_stopped")

    def _end(self, rev: int, reason: str) -> None:
        self.closed = True
        self._outbox.put(encode({"topic": self.topic, "rev": rev, "kind": "resync",
                                 "data": {"reason": reason}}))


class PeerServer:
    """Serves the links other processes open to this one."""

    def __init__(self, node: str, secret: str, registry: Registry) -> None:
        self.node, self.secret, self.registry = node, secret, registry
        self.directory: Directory | None = None
        self.received = 0  # requests received from peers (for metrics)
        self.crowded = 0  # connections refused: MAX_GREETING others were waiting
        self._greeting = 0  # connections waiting for their hello
        self._crowd_log = Throttle(CROWD_LOG_EVERY)

    async def serve(self, host: str, port: int, *,
                    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on `host:port` (0: a free port, reported to `task_status`)."""
        listeners = await trio.open_tcp_listeners(port, host=host)
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(self._connection, listeners)

    async def _connection(self, stream: trio.SocketStream) -> None:
        # Never raises: an exception escaping a serve_listeners handler ends the server.
        try:
            async with stream:
                await self._serve(stream)
        except LINK_ERRORS as exc:
            log.debug("a peer link ended: %r", exc)
        except Exception:
            log.exception("a peer link failed")

    async def _serve(self, stream: trio.SocketStream) -> None:
        if self._greeting >= MAX_GREETING:  # closed at once: it holds nothing here
            self._refuse_crowd()
            return
        lines = Lines(stream, MAX_HELLO)  # nothing big from a peer not known yet
        self._greeting += 1
        try:
            hello = await self._hello(lines, stream)
            if (hello is None or hello.get("op") != "hello"
                    or hello.get("token") != self.secret
                    or hello.get("protocol") != PROTOCOL_VERSION):
                error = ProtocolError(ErrorCode.UNAUTHORIZED, "not a peer of this cluster")
                with trio.move_on_after(HELLO_TIMEOUT):
                    await stream.send_all(encode({"id": 0, "ok": False,
                                                  "error": error.to_wire()}))
                return
        finally:
            self._greeting -= 1
        lines.max_line = MAX_LINE
        await stream.send_all(encode({"id": hello.get("id", 0), "ok": True,
                                      "result": {"node": self.node}}))
        outbox = Outbox()
        slots = trio.Semaphore(MAX_INFLIGHT)

        async def write() -> None:
            try:
                await outbox.write_to(stream)
            except LINK_ERRORS as exc:
                log.debug("writing to a peer failed: %r", exc)
            nursery.cancel_scope.cancel()

        relays: dict[str, _PeerRelay] = {}  # the peer's mirrors of worlds hosted here
        async with trio.open_nursery() as nursery:
            nursery.start_soon(write)
            try:
                while (frame := await lines.next()) is not None:
                    await slots.acquire()
                    self._handle(frame, _PeerAnswer(outbox, _request_id(frame), slots,
                                                    frame.get("op") == "view"), relays)
            except LINK_ERRORS as exc:
                log.debug("a peer link ended: %r", exc)
            finally:
                outbox.close()
                for relay in relays.values():
                    relay.closed = True

    async def _hello(self, lines: Lines, stream: trio.SocketStream) -> dict[str, Any] | None:
        """The connection's first frame, or None (logged) when it sends none in time or
        one that is too long or not JSON."""
        try:
            with trio.fail_after(HELLO_TIMEOUT):
                return await lines.next()
        except trio.TooSlowError:
            why = f"sent no hello within {HELLO_TIMEOUT:g} s"
        except ValueError as exc:  # longer than MAX_HELLO, or not a JSON object
            why = f"sent no hello that reads ({str(exc)[:80]})"
        log.info("a connection to the peer port from %s %s; closed", _address(stream), why)
        return None

    def _refuse_crowd(self) -> None:
        """Log connections refused because MAX_GREETING others wait for their hello (at
        most once every CROWD_LOG_EVERY seconds, with the count since)."""
        self.crowded += 1
        if (held := self._crowd_log.due()) is not None:
            log.warning("the peer port refused %d connection(s): %d others have not said "
                        "hello yet", held + 1, MAX_GREETING)

    def _handle(self, frame: dict[str, Any], answer: _PeerAnswer,
                relays: dict[str, _PeerRelay]) -> None:
        assert self.directory is not None, "the peer server starts with its directory"
        op = frame.get("op")
        if op == "ping":
            answer.succeed(None)
            return
        try:
            to = check_actor_id(frame.get("to"), "to", None)
            if op == "unrelay":  # the peer dropped its mirror of `to`
                if (relay := relays.pop(to, None)) is not None:
                    relay.closed = True
                answer.succeed(None)
                return
            footprint = answer.footprint = footprint_of(frame)
            if op == "footprint":  # what the spectators of the peer's mirror follow now
                if (relay := relays.get(to)) is not None:
                    relay.footprint = footprint
                answer.succeed(None)
                return
            hops = frame.get("hops")
            if not isinstance(hops, int) or hops < 1:
                raise ProtocolError(ErrorCode.BAD_REQUEST, "hops: expected a positive integer")
            if op == "view":
                relay = None
                if frame.get("relay") is True:  # the peer mirrors `to`: one relay each
                    if (old := relays.pop(to, None)) is not None:
                        old.closed = True
                    relay = relays[to] = _PeerRelay(answer.outbox, to, footprint)
                message: Any = ViewMsg(relay)
            elif op == "internal":
                message = self._internal(to, frame)
            else:
                spec = self.registry.get(str(op))
                message = Call(spec.name, structure(frame.get("args", {}), spec.args),
                               str(frame.get("role")), str(frame.get("caller")),
                               frame.get("request_id"))
            self.received += 1
            self.directory.send(to, message, answer, hops)
        except ProtocolError as error:
            answer.fail(error)
        except Exception:
            log.exception("peer request %r failed", frame)
            answer.fail(ProtocolError(ErrorCode.INTERNAL, "the server failed on this request"))

    def _internal(self, to: str, frame: dict[str, Any]) -> Any:
        """A world's message to world `to` (World.internal; no client can send one: it
        comes only from a peer that knows the cluster's secret)."""
        assert self.directory is not None
        wire = frame.get("type")
        cls = self.directory.kind_of(to).internal.get(wire) if isinstance(wire, str) else None
        if cls is None:
            raise ProtocolError(ErrorCode.BAD_REQUEST, f"{to} takes no message {wire!r}",
                                {"path": "type"})
        try:
            return cls.from_wire(frame.get("message"))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ProtocolError(ErrorCode.BAD_REQUEST, f"a {wire} that does not read: "
                                f"{exc!r}"[:300], {"path": "message"}) from None


def _address(stream: trio.SocketStream) -> str:
    try:
        host, port, *_ = stream.socket.getpeername()
    except (OSError, ValueError, TypeError):
        return "an unknown address"
    return f"{host}:{port}"


def _request_id(frame: dict[str, Any]) -> int:
    value = frame.get("id")
    return value if isinstance(value, int) else 0


class Link:
    """This process's connection to node `node` at `addr` ("host:port")."""

    def __init__(self, node: str, addr: str, me: str, secret: str, nursery: trio.Nursery,
                 silence: float) -> None:
        self.node, self.addr, self.me, self.secret = node, addr, me, secret
        self.silence = silence
        self.connected = False
        self.failures = 0  # connections lost or refused in a row
        self.down_since: float | None = None  # the last failure, while it lasts
        self._nursery = nursery
        self._ids = itertools.count(1)
        self._queued: list[tuple[int, bytes, Reply]] = []  # not sent yet
        self._sent: dict[int, Reply] = {}
        self._outbox: Outbox | None = None
        self._running = False
        self._wake = trio.Event()
        self._heard = 0.0  # when the peer last sent anything
        self.checked = 0.0  # when the router last looked for a new address of the node
        # World -> the mirror here its snapshot pushes go to (mirrors.py `_Relay`: its
        # `pushed(frame)`, and `lost()` when this link fails).
        self.relays: dict[str, Any] = {}

    def follow(self, topic: str, relay: Any) -> None:
        """Pushes of `topic` the peer relays on this link go to `relay` (the view asking
        for them is being sent)."""
        self.relays[topic] = relay

    def tell(self, topic: str, relay: Any, footprint: int | None) -> None:
        """Tell the peer how firmly `relay`'s spectators hold `topic` now (while the
        peer relays it here)."""
        if self.relays.get(topic) is relay and self.connected:
            self.send({"op": "footprint", "to": topic, "footprint": footprint}, _no_reply)

    def unfollow(self, topic: str, relay: Any) -> None:
        """`relay` wants no more pushes of `topic`: the peer is told to stop."""
        if self.relays.get(topic) is relay:
            del self.relays[topic]
            if self.connected:  # (else the peer's relay ended with the connection)
                self.send({"op": "unrelay", "to": topic, "hops": 1}, _no_reply)

    def send(self, frame: dict[str, Any], reply: Reply) -> None:
        """Send `frame` (its id is set here); `reply(frame, True)` with the answer, or
        `reply(None, sent)` when the link failed before one came."""
        request_id = frame["id"] = next(self._ids)
        data = encode(frame)
        if self._outbox is not None:
            self._sent[request_id] = reply
            self._outbox.put(data)
            return
        self._queued.append((request_id, data, reply))
        if not self._running:
            self._running = True
            self._nursery.start_soon(self._run)

    async def probe(self) -> bool:
        """True when the peer answers a hello now (connecting if needed)."""
        if self.connected:
            return True
        if not self._running:
            self._running = True
            self._nursery.start_soon(self._run)
        with trio.move_on_after(HELLO_TIMEOUT + 0.5):
            while self._running and not self.connected:
                await self._wake.wait()
        return self.connected

    async def _connect(self) -> tuple[trio.SocketStream, Lines]:
        host, _, port = self.addr.rpartition(":")
        stream = await trio.open_tcp_stream(host.strip("[]"), int(port))
        try:
            lines = Lines(stream, MAX_HELLO)
            await stream.send_all(encode({"op": "hello", "protocol": PROTOCOL_VERSION,
                                          "id": 0, "token": self.secret,
                                          "client": f"peer:{self.me}"}))
            hello = await lines.next()
            if not (hello and hello.get("ok")):
                raise ConnectionError(f"{self.node} refused the link: {hello!r}")
            lines.max_line = MAX_LINE
        except BaseException:
            await trio.aclose_forcefully(stream)
            raise
        return stream, lines

    async def _run(self) -> None:
        """Connect, greet, carry frames until the link fails; fail what waited."""
        try:
            with trio.fail_after(HELLO_TIMEOUT):
                stream, lines = await self._connect()
        except (*LINK_ERRORS, trio.TooSlowError) as exc:
            log.info("no link to %s at %s: %r", self.node, self.addr, exc)
            self._failed(sent=False)
            return
        except Exception:
            log.exception("no link to %s at %s", self.node, self.addr)
            self._failed(sent=False)
            return
        async with stream:
            outbox = self._outbox = Outbox()
            self.connected, self.failures, self.down_since = True, 0, None
            self._wake.set()
            for request_id, data, reply in self._queued:
                self._sent[request_id] = reply
                outbox.put(data)
            self._queued = []
            try:
                # Its tasks end the link by cancelling it; none raises (an exception out of
                # here would end the node's nursery, and with it the server).
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._ping, outbox, nursery.cancel_scope)
                    nursery.start_soon(self._write, outbox, stream, nursery.cancel_scope)
                    await self._read(lines)
                    nursery.cancel_scope.cancel()
            except Exception:
                log.exception("the link to %s failed", self.node)
            finally:
                outbox.close()
                self._outbox = None
                self._failed(sent=True)

    async def _read(self, lines: Lines) -> None:
        self._heard = trio.current_time()
        try:
            while (frame := await lines.next()) is not None:
                self._heard = trio.current_time()
                if "topic" in frame:  # a relayed push (no reply to anything)
                    self._relayed(frame)
                    continue
                reply = self._sent.pop(frame.get("id"), None)  # type: ignore[arg-type]
                if reply is not None:
                    reply(frame, True)
        except LINK_ERRORS as exc:
            log.info("the link to %s broke: %r", self.node, exc)

    async def _write(self, outbox: Outbox, stream: trio.SocketStream,
                     scope: trio.CancelScope) -> None:
        try:
            await outbox.write_to(stream)
        except LINK_ERRORS as exc:
            log.info("writing to %s failed: %r", self.node, exc)
        scope.cancel()

    async def _ping(self, outbox: Outbox, scope: trio.CancelScope) -> None:
        """Ping while requests wait; a peer silent for `silence` seconds is given up (a
        paused process keeps its socket open but answers nothing)."""
        ping = encode({"id": 0, "op": "ping"})
        while True:
            await trio.sleep(PING_EVERY)
            if not self._sent:
                self._heard = trio.current_time()
                continue
            if trio.current_time() - self._heard > self.silence:
                log.warning("%s said nothing for %.1f s; giving its link up", self.node,
                            trio.current_time() - self._heard)
                scope.cancel()
                return
            outbox.put(ping)

    def _relayed(self, frame: dict[str, Any]) -> None:
        topic = frame.get("topic")
        relay = self.relays.get(topic) if isinstance(topic, str) else None
        if relay is None:
            return  # a mirror dropped meanwhile (the peer was told)
        if frame.get("kind") != "snapshot":  # the relay ended
            del self.relays[topic]  # type: ignore[arg-type]
        relay.pushed(frame)

    def _failed(self, *, sent: bool) -> None:
        self.connected = False
        self.failures += 1
        self.down_since = trio.current_time()
        self._running = False
        self._wake.set()
        self._wake = trio.Event()
        waiting, self._sent = self._sent, {}
        queued, self._queued = self._queued, []
        for reply in waiting.values():
            reply(None, sent)
        for _, _, reply in queued:
            reply(None, False)
        relays, self.relays = self.relays, {}
        for relay in relays.values():
            relay.lost()


def _no_reply(_reply: dict[str, Any] | None, _sent: bool) -> None:
    """The answer nobody waits for."""
