"""This process's leases: taken before a world is hosted, renewed together every second,
and given up the moment they cannot be trusted.

The protocol is SCALEOUT.md 4.4 (server/storage/cluster.py holds the statements):

- a world is hosted here only after `acquire` made this process its holder; the
  directory then claims the stream and replays it (actors/runtime/directory.py);
- every `renew_every` seconds ONE statement renews the lease of every world hosted here
  (and the node's heartbeat); a world missing from its answer was lost: its actor is
  stopped at once;
- when no renewal has succeeded for `fence_after` x TTL (measured from when the last good
  one was sent, on this process's monotonic clock), every world is stopped: the leases
  may have lapsed and another process may hold them. The store's fence covers what is
  left of the race (a paused process's late appends are refused);
- an actor that stopped hands its lease back (`release`); leaving the cluster releases
  them all.
"""

from __future__ import annotations

import logging

import trio

from actors.runtime import Directory
from server.storage.cluster import Cluster

log = logging.getLogger("petridish.cluster")


class Leases:
    """The leases of node `cluster.node`; `run` renews them until cancelled."""

    def __init__(self, cluster: Cluster, *, renew_every: float = 1.0,
                 fence_after: float = 0.8) -> None:
        self.cluster = cluster
        self.node = cluster.node
        self.renew_every = renew_every
        self.fence_after = fence_after * cluster.ttl  # seconds without a good renewal
        self.directory: Directory | None = None
        self.renewals = self.lost = self.self_fenced = 0  # for metrics
        self._last_good = trio.current_time()

    async def acquire(self, world: str) -> str:
        """The node holding `world`'s lease now: this one if it was free, lapsed or ours."""
        return await self.cluster.acquire(world)

    async def release(self, world: str) -> None:
        """Give `world`'s lease up (a no-op if another node holds it)."""
        await self.cluster.release(world)

    def held(self) -> int:
        """Worlds hosted here, whose leases this process renews."""
        return len(self.directory.hosted()) if self.directory is not None else 0

    async def run(self, directory: Directory) -> None:
        """Renew the leases of the worlds `directory` hosts; stop those that are lost."""
        self.directory = directory
        self._last_good = trio.current_time()
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
        with trio.move_on_at(self._last_good + self.fence_after):
            try:
                kept = await self.cluster.renew(worlds)
            except Exception as exc:  # noqa: BLE001 - the database is away: fence below
                log.warning("renewing %d leases failed: %r", len(worlds), exc)
        if kept is not None:
            self._last_good = sent
            self.renewals += 1
            for world in worlds:
                if world not in kept and directory.evict(world):
                    self.lost += 1
                    log.warning("%s: lost the lease of %s; stopped it", self.node, world)
        elif trio.current_time() >= self._last_good + self.fence_after:
            stopped = [w for w in directory.hosted() if directory.evict(w)]
            if stopped:
                self.self_fenced += len(stopped)
                log.warning("%s: no lease renewal for %.1f s; stopped its %d worlds",
                            self.node, trio.current_time() - self._last_good, len(stopped))
