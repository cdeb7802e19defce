"""One server process as a node of a cluster: several processes share the worlds through
one PostgreSQL (docs/scale-out.md).

- `leases.py`: the leases of the worlds this process hosts (renewals, self-fencing);
- `router.py`: the directory's placement: where a world lives, forwarding, re-homing;
- `peers.py` and `wire.py`: the one connection per peer and its frames;
- `mirrors.py`: spectators of worlds hosted elsewhere, fed by the store's notifications;
- `holds.py`: the worlds the owner stopped, held on every process.

`join` opens the node (its lease connections, the cluster secret, the peer listener);
`Node.start(directory)` joins the registry and starts the renewals and the feed;
`Node.leave()` hands every world over on a graceful shutdown.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import trio

from actors.runtime import Directory, RuntimeObserver
from actors.store import StoreUnavailable
from protocol.ops.admin import ADMIN_ID
from protocol.registry import Registry
from server.cluster.holds import Holds
from server.cluster.leases import Leases
from server.cluster.mirrors import Mirrors
from server.cluster.peers import PeerServer
from server.cluster.router import Router
from server.config import ServerConfig
from server.metrics import Metrics
from server.storage.cluster import Cluster
from server.storage.postgres import PostgresEventStore

log = logging.getLogger("petridish.cluster")
LEASE_CONNECTIONS = 2  # of its own: a renewal never waits behind the store's reads
LEAVE_TIMEOUT = 5.0  # seconds a graceful leave waits for the worlds to stop


def default_node() -> str:
    """A node name for a process started without one: host name and process id."""
    return f"{socket.gethostname()}-{os.getpid()}"


@attrs.define
class Node:
    """This process in the cluster."""

    name: str
    addr: str  # where the other processes reach it
    cluster: Cluster
    leases: Leases
    router: Router
    mirrors: Mirrors
    holds: Holds
    peers: PeerServer
    _nursery: trio.Nursery

    async def start(self, directory: Directory) -> None:
        """Register (NodeNameInUse if another live process has this node's name), hold
        what the owner stopped, serve `directory` to the other processes, renew, feed
        spectators and holds."""
        await self.cluster.join(self.addr)  # first: no lease statement acts before it
        # Beating from the join on, however long the catch-up takes: a start under the
        # same name meanwhile must see this process alive (it watches for JOIN_QUIET).
        self._nursery.start_soon(self.leases.run, directory)
        self.router.directory = self.mirrors.directory = self.peers.directory = directory
        self.holds.directory = directory
        await self.holds.catch_up()  # held before this process serves anything
        self.mirrors.follow(ADMIN_ID, self.holds.catch_up)
        self._nursery.start_soon(self.mirrors.run)
        log.info("%s joined the cluster at %s", self.name, self.addr)

    @property
    def healthy(self) -> bool:
        """True while this process reaches the database (its lease renewals succeed)."""
        return self.leases.trouble is None

    @property
    def trouble(self) -> str | None:
        """Why this process cannot serve its worlds now (`Leases.trouble`), or None."""
        return self.leases.trouble

    async def leave(self) -> None:
        """Release every lease and stop the worlds hosted here (the next request for one
        starts it on another process); waits at most LEAVE_TIMEOUT for them to stop."""
        directory = self.router.directory
        if directory is None:
            return
        try:
            await self.router.leave()
        except StoreUnavailable as down:  # the leases lapse by themselves
            log.warning("%s could not release its leases: %s", self.name, down.why)
        except Exception:  # the leases lapse by themselves
            log.exception("%s could not release its leases", self.name)
        with trio.move_on_after(LEAVE_TIMEOUT):
            while directory.hosted():
                await trio.sleep(0.01)

    def instrument(self, metrics: Metrics) -> None:
        """Feed the cluster's instruments of `metrics` from this node."""
        leases, router, mirrors, peers = self.leases, self.router, self.mirrors, self.peers
        metrics.leases_held.set_function(lambda: {(): leases.held()})
        metrics.leases_lost.set_function(lambda: {("lost",): leases.lost,
                                                  ("self_fenced",): leases.self_fenced})
        metrics.forwards.set_function(lambda: {("out",): router.forwards,
                                               ("in",): peers.received})
        metrics.rehomes.set_function(lambda: {(): router.rehomes})
        metrics.notifications.set_function(
            lambda: {("own",): mirrors.notified - mirrors.foreign, ("other",): mirrors.foreign})
        metrics.notification_batches.set_function(lambda: {(): mirrors.batches})
        metrics.mirror_reads.set_function(lambda: {(): mirrors.reads})
        metrics.mirror_subscribers.set_function(lambda: {(): mirrors.watchers()})


@asynccontextmanager
async def join(config: ServerConfig, store: PostgresEventStore, registry: Registry,
               observer: RuntimeObserver) -> AsyncIterator[Node]:
    """This process as a node of the cluster sharing `store`'s database, until the block
    ends (then its tasks stop; a graceful shutdown calls `Node.leave` first)."""
    name = config.node or default_node()
    cluster = Cluster(store, name, ttl=config.lease_ttl, connections=LEASE_CONNECTIONS)
    try:
        secret = await cluster.secret()
        async with trio.open_nursery() as nursery:
            peers = PeerServer(name, secret, registry)
            port = await nursery.start(peers.serve, config.peer_host, config.peer_port)
            addr = config.peer_addr or f"{config.peer_host}:{port}"
            leases = Leases(cluster)
            mirrors = Mirrors(store, config.runtime.history_size, observer)
            router = Router(leases, cluster, secret, registry, mirrors, nursery,
                            ask_timeout=config.runtime.ask_timeout,
                            silence=config.peer_silence)
            try:
                yield Node(name, addr, cluster, leases, router, mirrors, Holds(store), peers,
                           nursery)
            finally:
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await cluster.aclose()
