"""One websocket connection: the hello handshake, then the reactor reads it and a
writer task sends what waits.

The connection's task reads the hello itself (server/hello.py); past it the connection is
a reader of the server's `Reactor` (server/reactor.py), which hands over its messages one
per round: each text frame is parsed (one longer than `max_frame` comes `Skipped`, unread,
and is refused `too_large`), checked against the connection's token bucket and its
client's budgets (server/budgets.py), and a request is posted to its actor with a
`RequestAnswer` (server/replies.py) that the actor fills in once the answer is durable: no
task per request. At most `max_inflight` requests are owed an answer at once, and a
message is taken only while the outbox has room and an answer slot is free; otherwise the
reactor stops reading the socket, which pushes back on the client through TCP, until a
slot or room frees. Replies and pushes meet in one bounded `Outbox`: one that is empty
writes a frame to a free socket at once (a non-blocking write by the task that queues
it); what waits is sent by the writer task (server/outbox.py), and a send the client does
not take within the send timeout gets the connection dropped (server/watchdog.py).
Every refusal is a reply with an error code; a malformed frame never closes the socket.

A connection talks to its socket (here, in server/hello.py and server/outbox.py) only
through `accept`, `receive`, `read_some`, `next_message`, `flush_soon`, `send_text`,
`send_at_once`, `flush`, `close` and `abort` (server/transport.py's WebSocket). The hello
reads and answers through the session's `parse`, `unread_refusal`, `rate_limited`,
`send_now`, `refuse_now` and `close_now`; close codes are websockets' `CloseCode`.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import trio
from websockets.frames import CloseCode

from actors.runtime import Call
from actors.runtime.waiter import Slots, Waiter
from protocol.convert import structure
from protocol.envelope import (
    Frame,
    Hello,
    Request,
    Subscribe,
    Unsubscribe,
    encode_error,
    encode_result,
    for_request,
    parse_frame,
    request_id_of,
)
from protocol.errors import ErrorCode, ProtocolError
from protocol.roles import role_at_least
from server.auth import Principal
from server.budgets import Account
from server.following import Following
from server.hello import ANONYMOUS, handshake
from server.outbox import REST, WRITER_TASK, Outbox, writer
from server.ratelimit import TokenBucket
from server.replies import RequestAnswer, internal_error
from server.transport import HandshakeFailed, Skipped, WebSocket

if TYPE_CHECKING:
    from server.app import ServerState

log = logging.getLogger("petridish.session")
CLOSE_WAIT = 1.0  # seconds a server-side close waits for the client's closing frame
# Seconds a connection past its CPU budget rests unread at once, at most (well within the
# keepalive's ping interval: a pong not read in time drops the connection).
MAX_REST = 5.0


class Session:
    """The state of one connection after `accept`."""

    def __init__(self, ws: WebSocket, server: ServerState, address: str) -> None:
        self.ws = ws
        self.server = server
        self.address = address  # the client's budget key (server/budgets.address_key)
        cfg = server.config
        self.outbox = Outbox(self, cfg.outbox_size, cfg.outbox_chars)
        self.bucket = TokenBucket(cfg.rate, cfg.burst)
        # Its pings, pongs and fragments but a message's last: as many again.
        ws.overhead = TokenBucket(cfg.rate, cfg.burst)
        self.inflight = Slots(cfg.max_inflight, "a connection's answer slots")
        self.principal = Principal("spectator", ANONYMOUS)  # until the hello
        self.account: Account | None = None  # what it spends is charged here (None: owner)
        self.greeted = False
        self.following = Following(server.ledger, cfg.budgets.subscriptions)
        self.read_scope = trio.CancelScope()  # the hello's, cancelled by end()
        self.readable = False  # the reactor saw the socket readable (server/reactor.py)
        self.reading = False  # watched by the reactor
        self.paused = False  # ... but not read until an answer slot or outbox room frees
        self.resting_until = 0.0  # ... nor, past its CPU budget, before this time (0: not)
        self._rest_scope: trio.CancelScope | None = None  # the rest's, cancelled at the end
        self._read_end = Waiter("a session's end of reading")
        self._nursery: trio.Nursery | None = None  # the writer's, and the subscribes'
        self.close_code: int | None = None  # set by end(): close with it once done
        self.sending_since: float | None = None  # when the send in progress began
        self.dropped = False  # cut by the watchdog: a send failing now is expected
        self.writing = False  # the writer task runs: frames go through the outbox

    @property
    def draining(self) -> bool:
        """True once the session was told to end."""
        return self.close_code is not None

    def end(self, code: int, notice: str | None = None) -> None:
        """Stop reading; in-flight requests finish, queued frames (and `notice`) go out,
        then the socket closes with `code`."""
        if notice is not None:
            self.outbox.force(notice)
        if self.close_code is None:
            self.close_code = code
        self.read_scope.cancel()
        self._stop_reading()

    def drain(self) -> None:
        """The server shuts down: end with 1001."""
        self.end(CloseCode.GOING_AWAY)

    def shed(self, refusal: ProtocolError) -> None:
        """Make room for a newcomer (server/budgets.py `Ledger.connect`): this connection,
        without a hello yet, closes with 1013 (its address's hit of `refusal`'s budget)."""
        self.server.budget_hit(refusal, self.address)
        self.end(CloseCode.TRY_AGAIN_LATER)

    def who(self) -> str:
        """The client as budgets and logs name it: its token's name, or its address."""
        return self.principal.name if self.principal.digest or \
            self.principal.role == "owner" else self.address

    # ---- the connection's life ----------------------------------------------------------

    async def run(self) -> None:
        """Serve the connection until the client leaves or the server ends it (a bug here
        closes it with 1011 and logs the story)."""
        state = self.server
        state.sessions.add(self)
        try:
            await self._run()
        except HandshakeFailed:
            raise  # the client's upgrade request was refused: its doing (server/front.py)
        except Exception:
            log.exception("the session of %s failed", self.address)
            state.trace.warn("close_1011", self.address, "closed a connection from %s with "
                             "1011 after a server failure", self.address)
            with trio.move_on_after(1.0):
                await self.ws.close(CloseCode.INTERNAL_ERROR)
        finally:
            state.sessions.discard(self)

    async def _run(self) -> None:
        ledger = self.server.ledger
        try:
            ledger.connect(self.address, trio.current_time(), self)
        except ProtocolError as refusal:  # too many connections from here: say why
            await self.ws.accept()
            self.server.budget_hit(refusal, self.address)
            await self.refuse_now(None, refusal)
            await self.close_now(CloseCode.TRY_AGAIN_LATER)
            return
        metrics = self.server.metrics
        try:
            await self.ws.accept()
            metrics.connections_open.inc()
            try:
                with self.read_scope:
                    await handshake(self)  # a good hello sets `greeted`
                if not self.greeted or self.draining:
                    return
                self.writing = True
                async with trio.open_nursery() as nursery:  # one: each costs an idle socket ~1 KiB
                    nursery.start_soon(writer, self, name=WRITER_TASK)
                    self._nursery = nursery  # subscribes run beside the writer
                    try:
                        if not self.draining:
                            self._start_reading()
                        while self.reading:
                            await self._read_end.wait()
                    finally:
                        self._stop_reading()
                    if self.close_code is None:  # the client closed, or broke the protocol
                        await self._finish_closing()
                    await self._all_answered()
                    # Every request has its reply queued; let the writer drain and stop.
                    self.outbox.close()
            finally:
                metrics.connections_open.dec()
                self.outbox.close()
                self.following.close(self.account, self.outbox)
                if self.close_code is not None and not self.dropped:
                    with trio.CancelScope(shield=True):
                        await self.close_now(self.close_code)
        finally:
            ledger.disconnect(self.address, self.greeted, trio.current_time(), self)
            if self.account is not None:
                self.account.sessions -= 1

    async def close_now(self, code: int) -> None:
        """Close with `code`, then wait for the client's side of the closing handshake: at
        most CLOSE_WAIT s for both, as a client that does not read never takes our close
        (the connection is dropped when this returns)."""
        try:
            with trio.move_on_after(CLOSE_WAIT):
                await self.ws.close(code)
                while (await self.ws.receive())["type"] != "websocket.disconnect":
                    pass  # frames that crossed our close are dropped
        except Exception as exc:  # noqa: BLE001 - any failure means the peer is gone already
            log.debug("close(%d) failed: %r", code, exc)

    async def send_now(self, frame: str) -> None:
        """Send `frame` before the writer task exists (the hello's answers, and a
        refusal before it)."""
        await self.ws.send_text(frame)
        self.server.metrics.frames_out.inc()

    def count_error(self, error: ProtocolError) -> None:
        """Count a refusal in the metrics by its code."""
        self.server.metrics.errors.labels(error.code.value).inc()

    def unread_refusal(self, message: bytes | Skipped | None) -> ProtocolError:
        """The refusal of a message that is not parsed (counted; it spends the rate too):
        a text longer than `max_frame` (`too_large`: the transport skipped it unread), or
        a binary one."""
        if isinstance(message, Skipped) and message.text:
            limit = self.server.config.max_frame
            what = "fragmented message" if message.fragmented else "frame"
            error = ProtocolError(ErrorCode.TOO_LARGE, f"the {what} is longer than {limit} "
                                  "bytes", {"max_frame": limit})
        else:
            error = ProtocolError(ErrorCode.BAD_REQUEST, "binary frames are not accepted; "
                                  "send JSON text frames")
        if not self.bucket.take(trio.current_time()):
            error = self.rate_limited(None)
        self.count_error(error)
        return error

    async def refuse_now(self, request_id: int | None, error: ProtocolError) -> None:
        """Count `error` and send it at once, as `send_now` does."""
        self.count_error(error)
        await self.send_now(encode_error(request_id, error))

    # ---- parsing ----------------------------------------------------------------------

    def parse(self, text: str, now: float) -> Frame:
        """Spend a token of the bucket (at `now`, trio's clock) and parse one frame.

        Every frame spends a token, malformed ones too, and one beyond the bucket is
        refused `rate_limited` whatever else is wrong with it. A refusal carries the
        frame's id when it could be read (`request_id_of`). (A frame longer than
        `max_frame` never comes here: see `unread_refusal`.)
        """
        limited = not self.bucket.take(now)
        try:
            frame = parse_frame(text)
        except ProtocolError as error:
            if limited:
                raise self.rate_limited(request_id_of(error)) from None
            raise
        if limited:
            raise self.rate_limited(frame.id)
        return frame

    def rate_limited(self, request_id: int | None) -> ProtocolError:
        """The `rate_limited` refusal of frame `request_id` (None: its id is unread)."""
        rate = self.server.config.rate
        return for_request(ProtocolError(
            ErrorCode.RATE_LIMITED, f"more than {rate:g} frames per second; slow down",
            {"rate": rate}), request_id)

    # ---- read by the reactor (server/reactor.py) -------------------------------------

    def _start_reading(self) -> None:
        self.reading = True
        self.ws.on_abort = self._stop_reading  # a socket closed elsewhere is unwatched first
        self.server.reactor.watch(self.ws.fileno(), self)

    def _stop_reading(self) -> None:
        """The reactor reads no more of this connection (the client closed or broke the
        protocol, the socket was dropped, or the session was told to end)."""
        if self.reading:
            self.reading = False
            self.server.reactor.unwatch(self)
            self._read_end.wake()
        if self._rest_scope is not None:
            self._rest_scope.cancel()

    def resume_reading(self) -> None:
        """An answer slot or outbox room freed, or a rest ended: a paused reader takes
        messages again once it has both and is not resting."""
        if (self.paused and self.inflight.value and self.outbox.has_room()
                and not self.resting_until):
            self.paused = False
            if self.reading:
                self.server.reactor.resume(self)

    def failed(self) -> None:
        """Serving this connection raised (a bug; the reactor logged it): close with 1011
        once what is in flight is answered."""
        self.server.trace.warn("close_1011", self.address, "closing a connection from %s "
                               "with 1011 after a server failure", self.address)
        self.end(CloseCode.INTERNAL_ERROR)

    def release_slot(self) -> None:
        """A request's reply is in the outbox: its answer slot is free again."""
        self.inflight.release()
        self.resume_reading()

    def serve_one(self) -> bool:
        """The reactor's call: take at most one message (reading the socket first when
        nothing read is left and it is readable); True when another waits, read already.

        A message is taken only while the outbox has room and an answer slot is free;
        otherwise the reader pauses (the socket is not read: TCP pushes back)."""
        if self.inflight.value == 0 or not self.outbox.has_room() or self.resting_until:
            self.paused = True
            self.server.reactor.pause(self)
            return False
        ws = self.ws
        message = ws.next_message()
        read = False
        if message is None and self.readable and ws.open:
            self.readable = False
            read = ws.read_some()
            if read and not ws.flush_soon():
                self.outbox.force(REST)  # a pong the socket could not take now
            message = ws.next_message()
        if ws.flush_owed:  # a pong a later pass over a read made, likewise
            ws.flush_owed = False
            self.outbox.force(REST)
        if message is None:
            if not ws.open:
                self._stop_reading()
            elif read:  # bytes that made no message (control frames, a partial one)
                self._charge_io()
            return False
        self._take(message)
        return ws.has_message

    def _charge_io(self) -> None:
        """Charge the socket's time now when a read completed no message (its pings and
        pongs, a frame still partial): a stream of control frames is its client's CPU time
        too."""
        self.charge(self.ws.take_io_seconds())
        self._rest_if_spent()

    def _rest_if_spent(self) -> None:
        """Rest (`_rest`) as after an over_budget refusal, counted as its hit, when what was
        just charged left the client's time spent while others wait."""
        if (refusal := self.server.ledger.may_compute(self.account, trio.current_time())
                ) is not None and self._rest(refusal.detail["retry_after"]):
            self.server.budget_hit(refusal, self.who())

    def _take(self, message: str | bytes | Skipped) -> None:
        """Answer one message, and charge what it cost to its client like the world's
        time: reading it (parse, validation, budgets, the post to its world, or its
        refusal), and the socket's I/O and framing since the last message (its replies'
        included). A message charged now (a refusal, a subscribe) may leave its client's
        time spent: its connection rests then, as after a read that completed none (a
        stream of costly refusals is rested like one of requests)."""
        self.server.metrics.frames_in.inc()
        clock = time.perf_counter
        started = clock()
        answer = self._answer(message, trio.current_time())
        spent = clock() - started + self.ws.take_io_seconds()
        if answer is not None:
            answer.charge(spent)  # with its reply
            return
        self.charge(spent)
        if not self.resting_until:  # (an over_budget refusal rests already)
            self._rest_if_spent()

    def _answer(self, message: str | bytes | Skipped, now: float) -> RequestAnswer | None:
        """A refusal of `message` (read at `now`) into the outbox, or the request posted
        (its answer, for a request to a world)."""
        if not isinstance(message, str):
            self.outbox.force(encode_error(None, self.unread_refusal(message)))
            return None
        try:
            frame = self.parse(message, now)
            if isinstance(frame, Hello):
                raise for_request(ProtocolError(ErrorCode.BAD_REQUEST,
                                                "hello was already said"), frame.id)
            if not isinstance(frame, Unsubscribe):
                self._may_compute(frame, now)
            elif not self.following.busy(frame.to):
                self._unsubscribe(frame)
                return None
        except ProtocolError as error:
            self.count_error(error)
            self.outbox.force(encode_error(request_id_of(error), error))
            if error.code == ErrorCode.OVER_BUDGET and error.detail.get("budget") == "cpu":
                self._rest(error.detail["retry_after"])
            return None
        self.inflight.acquire_nowait()  # (one is free: `serve_one` checked)
        if isinstance(frame, Request):
            return self._dispatch(frame, now)
        assert self._nursery is not None  # a (un)subscribe, in its topic's line
        self._nursery.start_soon(self._in_turn, frame, self.following.line_up(frame.to))
        return None

    def _unsubscribe(self, frame: Unsubscribe) -> None:
        self.following.drop(self.account, frame.to, self.outbox)
        self.outbox.force(encode_result(frame.id, {"topic": frame.to}))

    async def _in_turn(self, frame: Subscribe | Unsubscribe, turn: trio.Event) -> None:
        """Take `frame` at its `turn` (after the (un)subscribes of its topic sent before
        it); its answer slot is held until the reply is in the outbox."""
        try:
            await turn.wait()
            if isinstance(frame, Subscribe):
                await self._subscribe(frame)
            else:
                self._unsubscribe(frame)
        finally:
            self.following.leave(frame.to, turn)
            self.release_slot()

    async def _finish_closing(self) -> None:
        """The client closed (or broke the protocol): finish the closing handshake (our
        close reply, the end of TCP), at most CLOSE_WAIT s."""
        with trio.move_on_after(CLOSE_WAIT):
            while (await self.ws.receive())["type"] != "websocket.disconnect":
                pass  # frames past a close are dropped

    def _may_compute(self, frame: Request | Subscribe, now: float) -> None:
        """Refuse `frame` (over_budget) when its client's CPU time is spent."""
        self.server.refuse(self.server.ledger.may_compute(self.account, now), self.who(),
                           frame.id)

    def _rest(self, seconds: float) -> bool:
        """Read nothing more for `seconds` (its CPU time spent while others wait), and on
        while its client may still not compute (the refusal's own cost and its requests
        still in flight are charged meanwhile: a client that waits `retry_after` and sends
        again is read once it may be served, not refused again for the refusal's cost):
        each frame read meanwhile would cost a parse only to be refused; they wait in the
        socket. A rest lasts MAX_REST s at most, and one for a deeper debt begins only once
        the frames already read are refused: between rests the socket is read again, its
        pings and pongs with it, so the keepalive keeps it. The rest ends with the
        reading. True when it rests."""
        if seconds > MAX_REST and self.ws.has_message:
            return False
        now = trio.current_time()
        latest = now + MAX_REST
        self.resting_until = min(now + seconds, latest)
        assert self._nursery is not None

        async def wake() -> None:
            with trio.CancelScope() as self._rest_scope:
                ledger = self.server.ledger
                while self.reading and trio.current_time() < self.resting_until:
                    await trio.sleep_until(self.resting_until)
                    now = trio.current_time()
                    if (refusal := ledger.may_compute(self.account, now)) is not None:
                        self.resting_until = min(now + refusal.detail["retry_after"], latest)
            self._rest_scope = None
            self.resting_until = 0.0
            self.resume_reading()

        self._nursery.start_soon(wake)
        return True

    def charge(self, seconds: float) -> None:
        """This connection's requests cost `seconds` of server time."""
        self.server.ledger.charge(self.account, seconds, trio.current_time())

    async def _all_answered(self) -> None:
        """Wait until every admitted request has its reply in the outbox."""
        for _ in range(self.server.config.max_inflight):
            await self.inflight.acquire()

    async def _subscribe(self, frame: Subscribe) -> None:
        """Follow `frame.to`, within the connection's and the client's subscriptions
        (`Following.admit`, counted in the topic's turn: after the unsubscribes sent
        before); loading it, if not live here, is held to `loads_at_once`."""
        if (refusal := self.following.admit(self.account, frame.to)) is not None:
            self.server.budget_hit(refusal, self.who())
            self.count_error(refusal)
            await self.outbox.put(encode_error(frame.id, refusal))
            return
        ticket = followed = None
        try:
            try:
                ref = self.server.directory.ref(frame.to)
                ticket = self.server.claims.load(self.account, self.who(), frame.to)
                await ref.subscribe(self.outbox, frame.since, frame.id)
                followed = ref
                return  # the actor put the reply and the first push into the outbox
            except ProtocolError as error:
                self.count_error(error)
                reply = encode_error(frame.id, error)
            except Exception:  # a bug: answer and log it, never drop the connection over it
                log.exception("subscribe %r failed", frame)
                error = internal_error()
                self.count_error(error)
                reply = encode_error(frame.id, error)
            finally:
                self.following.settle(self.account, frame.to, followed)
            await self.outbox.put(reply)
        finally:
            if ticket is not None:
                ticket.settle(True)

    def _dispatch(self, request: Request, now: float) -> RequestAnswer:
        """Post `request` (read at `now`) to its world; the answer arrives through the
        RequestAnswer returned."""
        answer = RequestAnswer(self, request.id, request.to or "")
        try:
            call, to = self._call_of(request)
            answer.actor_id = to
            answer.ticket = self.server.claims.admit(self.account, self.who(), call, to)
            self.server.deadlines.watch(answer, now)
            self.server.directory.ref(to).send(call, answer)
        except ProtocolError as error:
            answer.fail(error)
        except Exception:  # a bug: answer and log it, never drop the connection over it
            log.exception("request %r failed", request)
            answer.fail(internal_error())
        return answer

    def _call_of(self, request: Request) -> tuple[Call, str]:
        """The actor call of `request` and the actor it goes to (roles, args, `to` checked)."""
        spec = self.server.registry.get(request.op)
        if not role_at_least(self.principal.role, spec.role):
            raise ProtocolError(ErrorCode.FORBIDDEN,
                                f"{request.op} needs the {spec.role} role; this connection "
                                f"is {self.principal.role}",
                                {"role": self.principal.role, "required": spec.role})
        args = structure(request.args, spec.args)
        to = request.to or spec.default_to
        if to is None:
            raise ProtocolError(ErrorCode.BAD_REQUEST, f"to: {request.op} needs a "
                                f"'{spec.kind}:NAME' actor", {"path": "to"})
        if to.partition(":")[0] != spec.kind:
            raise ProtocolError(ErrorCode.BAD_REQUEST, f"to: {request.op} is handled by "
                                f"{spec.kind} worlds, not {to!r}", {"path": "to"})
        return Call(request.op, args, self.principal.role, self.principal.name,
                    request.request_id), to
