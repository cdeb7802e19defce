"""The frames between the processes of a cluster: the websocket protocol's JSON envelope,
one compact JSON object per line over a TCP connection.

    -> {"op": "hello", "protocol": 1, "id": 0, "token": SECRET, "client": "peer:NODE"}
    <- {"id": 0, "ok": true, "result": {"node": "b"}}
    -> {"id": 7, "op": "counter.add", "to": "counter:w", "args": {...},
        "caller": "ann", "role": "agent", "hops": 1, "request_id": "k1"}
    <- {"id": 7, "ok": true, "result": {...}, "seconds": 0.0004, "stored": 61}
       or  {"id": 7, "ok": false, "error": {...}, "seconds": 0.0001}
       or  {"id": 7, "ok": false, "error": {...}, "delivered": false}
    -> {"id": 8, "op": "view", "to": "counter:w", "hops": 1}
    <- {"id": 8, "ok": true, "result": {"rev": 12, "view": {...}}}
    -> {"id": 9, "op": "ping"}       <- {"id": 9, "ok": true, "result": null}
    -> {"id": 10, "op": "internal", "type": "puzzleboard.claim", "to": "puzzleboard:main",
        "message": {...}, "hops": 1}   <- {"id": 10, "ok": true, "result": null}
    -> {"id": 11, "op": "view", "to": "ecosystem:r", "hops": 1, "relay": true}
    <- {"id": 11, "ok": true, "result": {"rev": 40, "view": {...}}}
    <- {"topic": "ecosystem:r", "rev": 42, "kind": "snapshot", "data": {...}}   (relayed)
    <- {"topic": "ecosystem:r", "rev": 57, "kind": "resync", "data": {"reason": ...}}
    -> {"id": 12, "op": "unrelay", "to": "ecosystem:r", "hops": 1}
    -> {"id": 13, "op": "view", "to": "counter:w", "hops": 1, "relay": true, "footprint": 3}
    -> {"id": 14, "op": "footprint", "to": "counter:w", "footprint": null}

A request carries what the first process learned of its caller (the name and role its
credential gave), the args as the client sent them (checked again by the receiver's
strict converter), the client's request id, and `hops`: the processes it has been
through. A refusal with `detail.reroute` means "not applied here, locate it again"; with
`detail.store: "down"` as well, the process cannot reach the database: it hosts nothing
until it can, so its worlds re-home once their leases lapse; with `detail.replaced`
(the node's name), another process took that name over and this one stops: the worlds
re-home to it. A refusal with `delivered`
false was made before the message reached its world (ProtocolError.delivered: a budget
spent on it is given back where its client is). An `internal` frame is a message one
world sends another that is no op (World.internal: a room's win claim to the board, a
world's summary to the lobby); no client can send one.
A `view` with `relay` also makes the sender a follower of the world's snapshot pushes
(server/cluster/mirrors.py): the host sends them on the same connection, as push frames,
until its actor stops (a `resync`; reason `unloaded` when it was unloaded to make room),
the sender says `unrelay`, or the connection ends.

`footprint` says how firmly the clients a frame stands for hold worlds live
(actors/runtime/subscriber.py `SubscriberQueue.footprint`): absent or null, firmly (a
token holder, the owner; or a sender that does not say); else the fewest worlds any of
them follows (anonymous spectators, whose worlds may be unloaded to make room); 0 on a
relay nobody watches through. On a request it bounds which followed worlds a load there
may unload (as the caller's own would); on a relayed view it is how firmly the mirror's
spectators hold the world, and a `footprint` frame updates it as they come and go.

A reply carries what its message cost where it was handled, when it cost something: the
handling's `seconds` (a load it caused included) and the bytes its events took in the
store (`stored`). The process that forwarded it tells the waiting answer both before it
answers, as the runtime tells a local one (they are charged to the client's CPU budget
and `stored_per_hour` there); absent (an older peer), nothing is charged. A peer is
trusted, but a figure that is no finite number or negative counts 0, and each is capped
(`costs_of`), so a bad one cannot poison a ledger. Time spent after the reply went out
is not carried: a view's, whose reply comes first (a mirror's view has no client to
charge), and a forwarded `lab.cross`'s validation, charged once it ends (so in a cluster
a crosser whose lab lives elsewhere is not charged its glslang seconds; one process
charges them).
"""

from __future__ import annotations

import json
from typing import Any

import trio

from protocol.errors import ErrorCode, ProtocolError
from protocol.jsontext import compact_encoder

MAX_LINE = 64 * 1024 * 1024  # bytes of one frame (a big field's view fits many times)
MAX_HELLO = 4096  # bytes of a hello, and of anything read before the peer is known
MAX_FOOTPRINT = 2**31 - 1  # a frame's `footprint` (a number of worlds followed)
MAX_SECONDS = 3600.0  # a reply's `seconds` (past any handling, the slowest load included)
MAX_STORED = 1 << 30  # a reply's `stored` bytes (past any message's events)
_encode = compact_encoder(ensure_ascii=False)


def encode(frame: dict[str, Any]) -> bytes:
    """One frame as a line of UTF-8."""
    return (_encode(frame) + "\n").encode()


def error_of(reply: dict[str, Any]) -> ProtocolError:
    """The ProtocolError of a refusal (its `error` object, and whether it was `delivered`)."""
    wire = reply.get("error") or {}
    detail = dict(wire.get("detail") or {})
    kind = Reroute if detail.pop("reroute", False) is True else ProtocolError
    return kind(wire.get("code", ErrorCode.INTERNAL.value), wire.get("message", ""), detail,
                delivered=reply.get("delivered") is not False)


def refusal(error: ProtocolError) -> dict[str, Any]:
    """The `error` object of a peer's reply: a Reroute's says so (`detail.reroute`)."""
    wire = error.to_wire()
    if isinstance(error, Reroute):
        wire["detail"] = wire["detail"] | {"reroute": True}
    return wire


class Reroute(ProtocolError):
    """A refusal that sends a forwarded message back to be located again (not applied).
    Only the peer wire says it (`detail.reroute`): a client gets a plain `unavailable`."""


def reroute(actor_id: str, why: str) -> Reroute:
    """The refusal that sends a forwarded message back to be located again."""
    return Reroute(ErrorCode.UNAVAILABLE, f"{actor_id} {why}", {"actor": actor_id},
                   delivered=False)


def unplaceable(actor_id: str, why: str) -> Reroute:
    """The refusal of a message for a world this process could not place because the
    database cannot be reached: `unavailable` for a client; a process that forwarded the
    message waits for the world to re-home (not applied)."""
    return Reroute(ErrorCode.UNAVAILABLE, f"{actor_id} cannot be placed now: this server "
                   f"cannot reach the cluster's database ({why}); retry in a moment",
                   {"actor": actor_id, "store": "down"}, delivered=False)


def replaced(actor_id: str, node: str) -> Reroute:
    """The refusal of a message for a world this process can no longer place: another
    process now serves as its node (this one stops); a process that forwarded the message
    waits for the world to re-home, to that process (not applied)."""
    return Reroute(ErrorCode.UNAVAILABLE, f"{actor_id} cannot be placed by this server: "
                   f"another process now serves as node {node!r} and this one is "
                   "stopping; retry in a moment", {"actor": actor_id, "replaced": node},
                   delivered=False)


def footprint_of(frame: dict[str, Any]) -> int | None:
    """A frame's `footprint` (None when absent); `bad_request` for one that is not null
    or an integer from 0 to MAX_FOOTPRINT."""
    value = frame.get("footprint")
    if value is not None and (type(value) is not int or not 0 <= value <= MAX_FOOTPRINT):
        raise ProtocolError(ErrorCode.BAD_REQUEST, "footprint: expected null or an integer "
                            f"from 0 to {MAX_FOOTPRINT}", {"path": "footprint"})
    return value


def costs_of(reply: dict[str, Any]) -> tuple[float, int]:
    """A reply's `seconds` and `stored` (0 when absent, not a finite number, or negative;
    at most MAX_SECONDS and MAX_STORED)."""
    return (_figure(reply.get("seconds"), MAX_SECONDS),
            int(_figure(reply.get("stored"), MAX_STORED)))


def _figure(value: Any, cap: float) -> float:
    if type(value) not in (int, float) or not value > 0:  # (NaN is not > 0)
        return 0.0
    return min(value, cap)  # (infinity: the cap)


class Lines:
    """The frames of a stream, one JSON object per line (None at the end of the stream).

    `max_line` bounds one line (a peer's hello is read with a small bound, raised once the
    peer is known); a line is looked for in each chunk as it comes, so a long line costs
    time in proportion to its length."""

    def __init__(self, stream: trio.abc.ReceiveStream, max_line: int = MAX_LINE) -> None:
        self._stream = stream
        self.max_line = max_line
        self._buffer = bytearray()
        self._frames: list[dict[str, Any]] = []

    async def next(self) -> dict[str, Any] | None:
        """The next frame; ValueError for one that is not a JSON object or too long."""
        while not self._frames:
            chunk = await self._stream.receive_some(1 << 16)
            if not chunk:
                return None
            start = len(self._buffer)
            self._buffer += chunk
            newline = chunk.rfind(b"\n")  # only the new bytes: the rest had none
            if newline < 0:
                if len(self._buffer) > self.max_line:
                    raise ValueError("a peer frame is longer than the limit")
                continue
            end = start + newline
            lines = bytes(self._buffer[:end]).split(b"\n")
            del self._buffer[:end + 1]
            if len(self._buffer) > self.max_line or \
                    any(len(line) > self.max_line for line in lines):
                raise ValueError("a peer frame is longer than the limit")
            for line in lines:
                frame = json.loads(line)
                if not isinstance(frame, dict):
                    raise ValueError("a peer frame is not a JSON object")  # noqa: TRY004
                self._frames.append(frame)
            self._frames.reverse()
        return self._frames.pop()


class Outbox:
    """Frames waiting to be sent on one connection; one writer task sends them, every
    frame queued meanwhile in one write."""

    def __init__(self) -> None:
        self._frames: list[bytes] = []
        self._queued = trio.Event()
        self.closed = False
        self.size = 0  # bytes queued and not yet handed to the stream

    def put(self, frame: bytes) -> None:
        """Queue `frame` (dropped once the connection is closed)."""
        if not self.closed:
            self._frames.append(frame)
            self.size += len(frame)
            self._queued.set()

    def close(self) -> None:
        """No more frames; the writer ends."""
        self.closed = True
        self._queued.set()

    async def write_to(self, stream: trio.abc.SendStream) -> None:
        """Send queued frames until closed (raises what the stream raises)."""
        while True:
            await self._queued.wait()
            self._queued = trio.Event()
            if self.closed:
                return
            frames, self._frames = self._frames, []
            self.size = 0
            await stream.send_all(b"".join(frames))
