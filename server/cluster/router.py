"""The cluster's placement (actors/runtime/placement.py): where a world lives, how a message
gets there, and what happens when the process hosting it goes away.

- `acquire`: the holder of a world's lease, cached per world; without a cached holder, one
  statement takes the lease if it is free or lapsed (the world then lives here: "prefer
  local", SCALEOUT.md 4.4) or names the node holding it;
- `forward`: the message goes over the one link to that node (server/cluster/peers.py),
  at most MAX_HOPS processes from where it arrived; the reply is the request's reply,
  and what its handling cost there is charged to its client here (wire.py);
- the holder cannot be reached, or its link broke before the reply came, or it answers
  but cannot reach the database (it sends the message back, `store: down`): the request
  waits until the world re-homes: the lease lapses (TTL) and this process takes it, or
  another process did, or the holder answers again; then it is delivered there, all
  within the request's time (the runtime's ask timeout). A write whose reply was lost
  after it was sent is delivered again only when it carries a request id (the world then
  applies it at most once) or is a read; otherwise its outcome is unknown and it is
  refused `unavailable` with detail `outcome: "unknown"`. So is a write delivered again
  that runs out of time, and one refused again before its world had it (a full mailbox,
  `max_live_worlds`: its code kept): it may have been applied where it was sent first
  (so also when a process it passed sent it back `reroute` with `outcome: "unknown"`);
- `follow`: a subscription to a world hosted elsewhere is served here by a mirror
  (server/cluster/mirrors.py); the mirror's view asks the host to relay the world's
  snapshot pushes on the same link (a view with a relay goes one hop only: a process
  that does not host the world sends it back to be located again).
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from actors.runtime import Call, Directory
from actors.runtime.deferred import Passing
from actors.runtime.mailbox import Answer, ViewMsg
from actors.runtime.subscriber import SubscriberQueue
from actors.store import StoreUnavailable
from protocol.convert import converter, unstructure
from protocol.errors import ErrorCode, ProtocolError
from protocol.registry import Registry
from server.cluster.leases import Leases
from server.cluster.mirrors import Mirrors
from server.cluster.peers import Link
from server.cluster.wire import Reroute, costs_of, error_of, replaced, reroute, unplaceable
from server.storage.cluster import Cluster, Replaced

log = logging.getLogger("petridish.cluster")

MAX_HOPS = 2  # processes a message may be forwarded through after the one it reached
POLL = 0.2  # seconds between looks at the lease of a world whose holder is unreachable
RETRY = 0.05  # seconds before a message sent back (`reroute`) is located again
MAX_CACHED = 100_000  # worlds whose holder is remembered


class _Leaving:
    """`acquire`'s answer while this process leaves the cluster: host nothing new."""


LEAVING = _Leaving()


class _Forwarded(Passing):
    """A forwarded message's answer, with the request's deadline across every attempt and
    whether it is a write that may have been applied (`sent`: a link, from here or from a
    process it passed, broke after it went out on it). Its caller's footprint (the frame
    carries it: wire.py) and what serving it cost, here once the world re-homed to this
    process or told by the host's reply (`cost`), pass through to the caller's answer."""

    __slots__ = ("deadline", "sent")

    def __init__(self, answer: Answer, deadline: float) -> None:
        super().__init__(answer)
        self.deadline = deadline
        self.sent = False

    def unreached(self, actor_id: str, why: str) -> None:
        """Refuse it `unavailable`, not delivered: `why` it ran out of time before it was
        sent (again: `fail` says a write that was `sent` may have been applied)."""
        if self.sent:
            why += ("; the write had been sent to it and may or may not have been applied "
                    "(a write sent with a request_id can be retried safely)")
        self.fail(ProtocolError(ErrorCode.UNAVAILABLE, why, {"actor": actor_id},
                                delivered=False))

    def cost(self, reply: dict[str, Any]) -> None:
        """Tell the answer what its message cost the process that handled it (`reply`'s
        figures: wire.py), as the runtime tells a local answer, before it is given."""
        seconds, nbytes = costs_of(reply)
        if seconds:
            self.charge(seconds)
        if nbytes:
            self.stored(nbytes)

    def succeed(self, value: Any) -> None:
        self._answer.succeed(value)

    def fail(self, error: ProtocolError) -> None:
        """Refuse it. Once a write was `sent`, any refusal its world did not make (not
        `delivered`: a full mailbox, `max_live_worlds`, ...) and any `unavailable` (a
        timeout, a process that cannot place it) says its outcome is unknown, and is
        delivered: it may have been applied where it went first. A refusal its world made
        (sent again, it carries its request id) is its outcome."""
        if self.sent and (error.code == ErrorCode.UNAVAILABLE or not error.delivered):
            kind = Reroute if isinstance(error, Reroute) else ProtocolError  # (a peer's)
            error = kind(error.code, error.message, {**error.detail, "outcome": "unknown"})
        self._answer.fail(error)


class _Rehoming:
    """Requests waiting for a world whose holder is unreachable (`answers`: the holder
    answers, but it cannot reach the database, so it cannot host the world)."""

    def __init__(self, dead: Link, *, answers: bool = False) -> None:
        self.dead = dead
        self.answers = answers
        self.waiting: list[tuple[Any, _Forwarded, int]] = []


class Router:
    """Places worlds for node `leases.node` and carries messages to the other nodes."""

    def __init__(self, leases: Leases, cluster: Cluster, secret: str, registry: Registry,
                 mirrors: Mirrors, nursery: trio.Nursery, *, ask_timeout: float,
                 silence: float) -> None:
        self.leases, self.cluster, self.node = leases, cluster, leases.node
        self.secret, self.registry, self.mirrors = secret, registry, mirrors
        self.ask_timeout, self.silence = ask_timeout, silence
        self.directory: Directory | None = None
        self.leaving = False
        self.forwards = self.rehomes = self.unknown_outcomes = 0  # for metrics
        self._nursery = nursery
        self._holders: dict[str, Link] = {}
        self._links: dict[str, Link] = {}
        self._acquiring: dict[str, trio.Event] = {}
        self._rehoming: dict[str, _Rehoming] = {}
        self._reading: trio.Event | None = None  # the node registry is being read

    # ---- the Placement interface ------------------------------------------------------

    async def acquire(self, actor_id: str) -> Any | None:
        """None when this process holds `actor_id`'s lease now, else its holder's Link."""
        if self.leaving:
            return LEAVING
        rehoming = self._rehoming.get(actor_id)
        if rehoming is not None:  # its holder is unreachable: wait with the others
            return rehoming.dead
        link = self._holders.get(actor_id)
        if link is not None and link.down_since is None:
            return link
        while (busy := self._acquiring.get(actor_id)) is not None:
            await busy.wait()  # one statement per world at a time
            link = self._holders.get(actor_id)
            if link is not None and link.down_since is None:
                return link
        done = self._acquiring[actor_id] = trio.Event()
        try:
            try:
                node = await self.leases.acquire(actor_id)
            except Replaced as gone:  # this process stops; the name's new one places it
                raise replaced(actor_id, gone.node) from None
            except StoreUnavailable as down:
                # Not placed, nothing applied: a process that forwarded it looks again
                # (the world re-homes once this process's lease lapses).
                raise unplaceable(actor_id, down.why) from None
            if node == self.node:
                self._holders.pop(actor_id, None)
                return None
            link = await self._link(node)
            if len(self._holders) >= MAX_CACHED:
                self._holders.clear()
            self._holders[actor_id] = link
            return link
        finally:
            del self._acquiring[actor_id]
            done.set()

    async def release(self, actor_id: str) -> None:
        """Give the lease up (leaving releases them all at once)."""
        if not self.leaving:
            await self.leases.release(actor_id)

    def forward(self, where: Any, actor_id: str, message: Any, answer: Answer,
                hops: int) -> None:
        """Send `message` to the world's holder (see the module docstring)."""
        if where is LEAVING:
            answer.fail(reroute(actor_id, "is not hosted by a process that is leaving"))
            return
        if hops >= MAX_HOPS:
            answer.fail(reroute(actor_id, f"was not found within {MAX_HOPS} hops"))
            return
        if not isinstance(answer, _Forwarded):
            answer = _Forwarded(answer, trio.current_time() + self.ask_timeout)
        frame = _frame(actor_id, message, hops + 1, answer.footprint)
        if frame is None:  # a bug: a world sent another a message with no wire form
            log.warning("a %s for %s cannot be forwarded to the process hosting it: it "
                        "is no op and not among the kind's internal messages",
                        type(message).__name__, actor_id)
            answer.fail(ProtocolError(ErrorCode.INTERNAL, "this message cannot be forwarded"))
            return
        link: Link = where
        rehoming = self._rehoming.get(actor_id)
        if rehoming is not None and rehoming.dead is link:
            rehoming.waiting.append((message, answer, hops))
            return
        if isinstance(message, ViewMsg) and message.relay is not None:
            if hops > 0:  # relays go from the host to the mirror's process, one hop:
                answer.fail(reroute(actor_id, "is not hosted here, where its view for a "
                                    "mirror came"))  # (the mirror's process asks again)
                return
            link.follow(actor_id, message.relay)  # a mirror here (mirrors.py `_Relay`)
            message.relay.links.add(link)
        self.forwards += 1
        forwarded = answer

        def replied(reply: dict[str, Any] | None, sent: bool) -> None:
            self._replied(link, actor_id, message, forwarded, hops, reply, sent)

        link.send(frame, replied)

    async def follow(self, where: Any, actor_id: str, queue: SubscriberQueue,
                     since: int | None, request_id: int) -> None:
        """Serve the subscription from this process's mirror of the world."""
        if where is LEAVING:
            raise ProtocolError(ErrorCode.UNAVAILABLE, "this server is shutting down",
                                {"actor": actor_id})
        await self.mirrors.subscribe(actor_id, queue, since, request_id)

    def unfollow(self, actor_id: str, queue: SubscriberQueue) -> None:
        """Forget `queue` on the mirror, if any."""
        self.mirrors.unsubscribe(actor_id, queue)

    # ---- replies and failures -----------------------------------------------------------

    def _replied(self, link: Link, actor_id: str, message: Any, answer: _Forwarded, hops: int,
                 reply: dict[str, Any] | None, sent: bool) -> None:
        if reply is not None:
            answer.cost(reply)
            if reply.get("ok"):
                answer.succeed(self._result(message, reply.get("result")))
                return
            error = error_of(reply)
            if not isinstance(error, Reroute):
                answer.fail(error)
                return
            if error.detail.get("outcome") == "unknown":  # a link past this one broke
                answer.sent = True  # after carrying it: it may have been applied there
            self._forget(actor_id, link)
            if error.detail.get("store") == "down" or "replaced" in error.detail:
                # The holder lost the database, or its name (then it moves: `_moved`).
                self._wait_for_rehome(actor_id, link, message, answer, hops, answers=True)
                return
            self._nursery.start_soon(self._again, actor_id, message, answer, hops, RETRY)
            return
        self._forget(actor_id, link)
        if sent and self._writes(message):
            answer.sent = True
            if message.request_id is None:  # (not to be delivered again)
                self.unknown_outcomes += 1
                answer.fail(ProtocolError(
                    ErrorCode.UNAVAILABLE, f"the process hosting {actor_id} went away before "
                    "it answered: the write may or may not have been applied (a write sent "
                    "with a request_id can be retried safely)",
                    {"actor": actor_id, "outcome": "unknown"}))
                return
        self._wait_for_rehome(actor_id, link, message, answer, hops)

    def _wait_for_rehome(self, actor_id: str, link: Link, message: Any, answer: _Forwarded,
                         hops: int, *, answers: bool = False) -> None:
        rehoming = self._rehoming.get(actor_id)
        if rehoming is None:
            rehoming = self._rehoming[actor_id] = _Rehoming(link, answers=answers)
            self.rehomes += 1
            self._nursery.start_soon(self._rehome, actor_id, rehoming)
        rehoming.waiting.append((message, answer, hops))

    def _forget(self, actor_id: str, link: Link) -> None:
        if self._holders.get(actor_id) is link:
            del self._holders[actor_id]

    def _writes(self, message: Any) -> bool:
        """Is `message` a client's write (whose outcome matters if its reply was lost)? A
        view or a world's message to another is not (safe twice: its rule)."""
        if not isinstance(message, Call):
            return False
        assert self.directory is not None
        kind = self.directory.kinds.get(message.op.partition(".")[0])
        return kind is None or message.op not in kind.reads

    def _result(self, message: Any, result: Any) -> Any:
        """The reply's result as the local actor would have given it."""
        if isinstance(message, ViewMsg):
            return result["rev"], result["view"]
        if isinstance(message, Call):
            try:
                return converter.structure(result, self.registry.get(message.op).result)
            except Exception:  # noqa: BLE001 - the JSON itself is what a client gets
                log.warning("the result of a forwarded %s does not structure", message.op)
        return result

    async def _again(self, actor_id: str, message: Any, answer: _Forwarded, hops: int,
                     delay: float) -> None:
        await trio.sleep(delay)
        self._deliver(actor_id, message, answer, hops)

    def _deliver(self, actor_id: str, message: Any, answer: _Forwarded, hops: int) -> None:
        assert self.directory is not None
        if trio.current_time() >= answer.deadline:
            answer.unreached(actor_id, f"{actor_id} could not be reached within "
                             f"{self.ask_timeout:g} s")
        else:
            self.directory.deliver_soon(actor_id, message, answer, hops)

    async def _rehome(self, actor_id: str, rehoming: _Rehoming) -> None:
        """Wait until the world's lease is held by someone reachable, then deliver."""
        dead = rehoming.dead
        probing = trio.Event()
        failed = False

        async def probe() -> None:
            if rehoming.answers:
                # Its lease lapses within a TTL, unless it got the database back and took
                # the world again: then it hosts it, and is tried again.
                await trio.sleep(self.cluster.ttl + POLL)
                probing.set()
            elif await dead.probe():
                probing.set()

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(probe)
                while rehoming.waiting and not probing.is_set():
                    now = trio.current_time()
                    for waiter in [w for w in rehoming.waiting if w[1].deadline <= now]:
                        rehoming.waiting.remove(waiter)
                        waiter[1].unreached(actor_id, f"the process hosting {actor_id} "
                                            "cannot be reached and its lease did not lapse "
                                            "in time")
                    try:
                        node = await self.leases.acquire(actor_id)
                        if node != dead.node or await self._moved(dead):
                            break
                    except Exception as exc:  # noqa: BLE001 - the database is away: wait
                        if not failed:  # (once per wait: not every POLL)
                            log.warning("looking up %s failed: %r", actor_id, exc)
                        failed = True
                    with trio.move_on_after(POLL):
                        await probing.wait()
                nursery.cancel_scope.cancel()
        finally:
            del self._rehoming[actor_id]
            for message, answer, hops in rehoming.waiting:
                self._deliver(actor_id, message, answer, hops)

    # ---- links --------------------------------------------------------------------------

    async def _link(self, node: str) -> Link:
        """The one link to `node` (its address from the node registry, read once for
        every caller waiting for an unknown node)."""
        while (link := self._links.get(node)) is None and self._reading is not None:
            await self._reading.wait()
        if link is not None:
            return link
        reading = self._reading = trio.Event()
        try:
            nodes = await self.cluster.nodes()
        finally:
            self._reading = None
            reading.set()
        for name, registered in nodes.items():
            if name not in self._links and name != self.node:
                self._links[name] = Link(name, registered.addr, self.node, self.secret,
                                         self._nursery, self.silence)
        # A holder that never joined (or left) gets a link that cannot connect: its
        # requests wait for its leases to lapse.
        return self._links.get(node) or Link(node, "", self.node, self.secret,
                                             self._nursery, self.silence)

    async def _moved(self, link: Link) -> bool:
        """True when `link`'s node registered another address (it restarted): the link
        is replaced by one to the new address."""
        now = trio.current_time()
        if now - link.checked < 1.0:  # look at most once a second per link
            return False
        link.checked = now
        node = (await self.cluster.nodes()).get(link.node)
        if node is None or node.addr == link.addr or self._links.get(link.node) is not link:
            return False
        self._links[link.node] = Link(link.node, node.addr, self.node, self.secret,
                                      self._nursery, self.silence)
        return True

    def links(self) -> dict[str, bool]:
        """Each peer's link: connected or not (for metrics)."""
        return {node: link.connected for node, link in self._links.items()}

    async def leave(self) -> None:
        """Host nothing new, release every lease, stop the worlds hosted here (their
        waiting messages are sent back to be located again)."""
        assert self.directory is not None
        self.leaving = True
        await self.cluster.leave()
        for world in self.directory.hosted():
            self.directory.evict(world)


def _frame(actor_id: str, message: Any, hops: int,
           footprint: int | None) -> dict[str, Any] | None:
    """The peer frame of `message`, sent for a caller of `footprint` (None for one that
    only this process can handle)."""
    frame: dict[str, Any]
    if isinstance(message, ViewMsg):
        frame = {"op": "view", "to": actor_id, "hops": hops}
        if message.relay is not None:
            frame["relay"] = True
    elif isinstance(message, Call):
        frame = {"op": message.op, "to": actor_id, "args": unstructure(message.args),
                 "caller": message.caller, "role": message.role, "hops": hops}
        if message.request_id is not None:
            frame["request_id"] = message.request_id
    else:
        wire = getattr(type(message), "wire", None)  # a world's message (World.internal)
        if not isinstance(wire, str):
            return None
        return {"op": "internal", "type": wire, "to": actor_id, "hops": hops,
                "message": message.to_wire()}
    if footprint is not None:
        frame["footprint"] = footprint
    return frame
