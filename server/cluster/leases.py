"""This process's leases: taken before a world is hosted, renewed together every second,
and given up the moment they cannot be trusted.

The protocol is SCALEOUT.md 4.4 (server/storage/cluster.py holds the statements):

- a world is hosted here only after `acquire` made this process its holder; the
  directory then claims the stream and replays it (actors/runtime/directory.py);
- every `renew_every` seconds (1; half of 0.8 x TTL when that is shorter) ONE statement
  renews the lease of every world hosted here (and the node's heartbeat); a world missing
  from its answer was lost: its actor is stopped at once;
- when no renewal has succeeded for `fence_after` x TTL (measured from when the last good
  one was sent, on this process's monotonic clock), every world is stopped: the leases
  may have lapsed and another process may hold them. A timer of its own fires at that
  moment, whether the renewals fail at once or hang; renewals go on meanwhile, and the
  first good one ends the fence. The store's fence covers what is left of the race (a
  paused process's late appends are refused). From the first renewal that fails until
  one succeeds, `trouble` says why (`/healthz` answers 503 with it);
- an actor that stopped hands its lease back (`release`); leaving the cluster releases
  them all;
- a renewal that finds this node's name registered by another process (this one was
  paused or cut off for longer than the TTL, and another started under its name) stops
  every world and sets `replaced`: the server exits.
"""

from __future__ import annotations

import logging

import trio

from actors.runtime import Directory
from actors.store import StoreUnavailable
from server.storage.cluster import Cluster, Replaced

log = logging.getLogger("petridish.cluster")
FENCED_CHECK = 0.1  # seconds between looks at the worlds hosted while no renewal succeeds


class Leases:
    """The leases of node `cluster.node`; `run` renews them until cancelled."""

    def __init__(self, cluster: Cluster, *, renew_every: float = 1.0,
                 fence_after: float = 0.8) -> None:
        self.cluster = cluster
        self.node = cluster.node
        self.fence_after = fence_after * cluster.ttl  # seconds without a good renewal
        # Twice within `fence_after` at least: a short TTL (under 2.5 s) would otherwise
        # fence a healthy node between two renewals.
        self.renew_every = min(renew_every, self.fence_after / 2)
        self.directory: Directory | None = None
        self.renewals = self.lost = self.self_fenced = 0  # for metrics
        self._last_good = trio.current_time()
        self._renewed = trio.Event()  # set (and replaced) at each good renewal
        self._failing_since: float | None = None  # renewals fail since (for the logs)
        self._failure: str | None = None  # why the last renewal failed, while they fail
        self._acquired: dict[str, float] = {}  # worlds acquired since the last good renewal
        self.replaced = trio.Event()  # set once another process took this node's name
        self.replaced_why = ""

    async def acquire(self, world: str) -> str:
        """The node holding `world`'s lease now: this one if it was free, lapsed or ours."""
        sent = trio.current_time()
        node = await self.cluster.acquire(world)
        if node == self.node and sent > self._last_good:
            self._acquired[world] = sent  # as good as a renewal, for this world
        return node

    async def release(self, world: str) -> None:
        """Give `world`'s lease up (a no-op if another node holds it)."""
        await self.cluster.release(world)

    @property
    def trouble(self) -> str | None:
        """Why this process cannot serve its worlds now, or None: its renewals fail, or
        none succeeded for `fence_after` seconds (it stopped its worlds). Read from the
        renewal loop's state, without a statement (`/healthz` asks it)."""
        silent = trio.current_time() - self._last_good
        if silent >= self.fence_after:
            why = f" (the last failed: {self._failure})" if self._failure else ""
            return (f"no lease renewal for {silent:.1f} s{why}: it hosts no world until "
                    "the cluster's database answers")
        if self._failure is not None:
            return f"renewing its leases failed: {self._failure}"
        return None

    def held(self) -> int:
        """Worlds hosted here, whose leases this process renews."""
        return len(self.directory.hosted()) if self.directory is not None else 0

    async def run(self, directory: Directory) -> None:
        """Renew the leases of the worlds `directory` hosts; stop those that are lost, and
        every one once no renewal has succeeded for `fence_after` seconds."""
        self.directory = directory
        self._last_good = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._fence, directory)
            next_at = self._last_good
            while True:
                next_at += self.renew_every
                await trio.sleep_until(next_at)
                next_at = max(next_at, trio.current_time())  # after a pause: no burst
                await self._renew(directory)

    async def _renew(self, directory: Directory) -> None:
        worlds = directory.hosted()
        sent = trio.current_time()
        kept: set[str] | None = None
        # A renewal that hangs (a partition) is given up, its connection dropped, so the
        # next one starts afresh; the fence below does not wait for it either way.
        failure = f"no answer within {self.fence_after:g} s"
        with trio.move_on_after(self.fence_after):
            try:
                kept = await self.cluster.renew(worlds)
            except Replaced as replaced:
                self._replace(directory, replaced.why)
                return
            except Exception as exc:  # noqa: BLE001 - the database is away: `_fence` acts
                failure = exc.why if isinstance(exc, StoreUnavailable) else repr(exc)
        if kept is None:
            self._failure = failure
            if self._failing_since is None:  # said once per outage, not every second
                self._failing_since = sent
                log.warning("%s: renewing %d leases failed: %s (retried every %g s)",
                            self.node, len(worlds), failure, self.renew_every)
            return
        if self._failing_since is not None:
            log.warning("%s: leases renewed again after %.1f s of failures", self.node,
                        trio.current_time() - self._failing_since)
            self._failing_since = self._failure = None
        self._last_good = max(self._last_good, sent)
        self._acquired = {w: t for w, t in self._acquired.items() if t > self._last_good}
        self.renewals += 1
        self._renewed.set()
        self._renewed = trio.Event()
        for world in worlds:
            if world not in kept and directory.evict(world):
                self.lost += 1
                log.warning("%s: lost the lease of %s; stopped it", self.node, world)

    def _replace(self, directory: Directory, why: str) -> None:
        """Another process took this node's name: stop every world, and say so (the
        server then exits: `replaced`)."""
        stopped = [w for w in directory.hosted() if directory.evict(w)]
        self.lost += len(stopped)
        if not self.replaced.is_set():
            log.error("%s: %s; stopped %d worlds", self.node, why, len(stopped))
            self.replaced_why = why
            self.replaced.set()

    async def _fence(self, directory: Directory) -> None:
        """Stop every world hosted here at `_last_good + fence_after`, whatever the renewal
        loop is doing (a renewal refused at once, or hanging). While no renewal succeeds,
        a world acquired since (the database answered that acquire) is stopped once its
        own acquire is `fence_after` old, unless a renewal succeeded meanwhile."""
        while True:
            now = trio.current_time()
            next_at = self._last_good + self.fence_after
            if now >= next_at:
                stopped = [w for w in directory.hosted()
                           if now >= self._acquired.get(w, self._last_good) + self.fence_after
                           and directory.evict(w)]
                if stopped:
                    self.self_fenced += len(stopped)
                    log.warning("%s: no lease renewal for %.1f s; stopped %d worlds",
                                self.node, now - self._last_good, len(stopped))
                next_at = now + FENCED_CHECK
            with trio.move_on_at(next_at):
                await self._renewed.wait()
