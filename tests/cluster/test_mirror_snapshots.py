"""Snapshot pushes (a world's figures that are not events: an ecosystem run's density
fields, a field's generation progress, a pack's solve progress, the lobby's live figures)
reach spectators on every node, in the same order relative to the events as on the node
hosting the world; and they keep coming after the world moves to another node."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from actors.runtime.context import NullObserver
from actors.runtime.subscriber import SubscriberQueue
from protocol.client import Client, Push
from server.cluster.mirrors import Mirror, Mirrors
from server.hello import new_key
from server.storage.postgres import PostgresEventStore
from tests.cluster.conftest import Nodes, wait_for
from tests.ecosystem.live import POND, SIZE

pytestmark = pytest.mark.postgres
RUN = "ecosystem:mirrored"


def _sequence(pushes: list[Push]) -> list[tuple[Any, ...]]:
    """Every event's revision and every snapshot's (revision, generation), in order."""
    out: list[tuple[Any, ...]] = []
    for p in pushes:
        if p.kind == "events":
            out += [("event", p.rev - len(p.data) + 1 + i) for i in range(len(p.data))]
        else:
            out.append((p.kind, p.rev, (p.data or {}).get("generation")))
    return out


async def _watch(client: Client, world: str, seen: list[Push],
                 task_status: trio.TaskStatus[None]) -> None:
    async with client.subscribe(world) as sub:
        task_status.started()
        async for push in sub:
            seen.append(push)


async def _play(client: Client, generations: int) -> None:
    """Play the run until it made `generations` more, then pause it."""
    start = (await client.request("ecosystem.view", RUN, {}))["view"]["generation"]
    await client.request("ecosystem.control", RUN, {"action": "play", "speed": 10})
    with trio.fail_after(30):
        while (await client.request("ecosystem.view", RUN, {}))["view"]["generation"] < \
                start + generations:
            await trio.sleep(0.05)
    await client.request("ecosystem.control", RUN, {"action": "pause"})


def _rev(nodes: Nodes) -> int:
    """The run's revision where it lives."""
    return next(n.directory.alive(RUN).rev for n in nodes.started
                if n.directory.alive(RUN) is not None)


async def test_spectators_on_another_node_get_the_hosts_snapshot_pushes(nodes: Nodes) -> None:
    a, b = await nodes.start("a"), await nodes.start("b")
    key = new_key()  # the run's owner, on either node
    async with Client.connect(a.ws_url, key=key) as ca, \
            Client.connect(b.ws_url, key=key) as cb, Client.connect(a.ws_url) as here, Client.connect(b.ws_url) as there:
        await ca.request("ecosystem.create", RUN, {"answers": POND, "seed": 3, "size": SIZE})
        assert RUN in a.directory.hosted()
        local: list[Push] = []
        remote: list[Push] = []
        async with trio.open_nursery() as watchers:
            await watchers.start(_watch, here, RUN, local)
            await watchers.start(_watch, there, RUN, remote)
            await _play(cb, 8)
            rev = _rev(nodes)
            await wait_for(lambda: local and remote and local[-1].rev >= rev
                           and remote[-1].rev >= rev)
            await trio.sleep(0.5)  # a density snapshot due after the last generation
            watchers.cancel_scope.cancel()
    later = [p for p in local[1:] if p.kind == "snapshot"]
    assert len(later) >= 3, "the run pushed density snapshots while it played"
    assert _sequence(remote[1:]) == _sequence(local[1:])
    # The snapshot pushes are the host's own: the same figures, not a view made again.
    assert [p.data for p in remote[1:] if p.kind == "snapshot"] == [p.data for p in later]
    assert b.cluster.mirrors.relayed >= len(later)


async def test_snapshot_pushes_follow_the_world_to_another_node(nodes: Nodes) -> None:
    a, b, c = await nodes.start("a"), await nodes.start("b"), await nodes.start("c")
    key = new_key()
    async with Client.connect(a.ws_url, key=key) as ca, \
            Client.connect(c.ws_url, key=key) as cc, Client.connect(b.ws_url) as there:
        await ca.request("ecosystem.create", RUN, {"answers": POND, "seed": 3, "size": SIZE})
        remote: list[Push] = []
        async with trio.open_nursery() as watchers:
            await watchers.start(_watch, there, RUN, remote)
            await _play(cc, 3)
            a.stop()  # a graceful leave: the run's actor stops, its lease is released
            await a.ended.wait()
            before = len(remote)
            await _play(cc, 6)
            rev = _rev(nodes)
            await wait_for(lambda: remote[-1].rev >= rev)
            await trio.sleep(0.5)
            watchers.cancel_scope.cancel()
    after = [p for p in remote[before:] if p.kind == "snapshot"]
    assert len(after) >= 2, _sequence(remote)
    generations = [p.data["generation"] for p in after]
    assert generations == sorted(generations)


async def test_a_mirror_nobody_watches_lets_the_host_forget_it(nodes: Nodes) -> None:
    a, b = await nodes.start("a"), await nodes.start("b")
    async with Client.connect(a.ws_url) as ca, Client.connect(b.ws_url) as there:
        await ca.request("counter.create", "counter:relayed")
        async with there.subscribe("counter:relayed"):
            actor = a.directory.alive("counter:relayed")
            await wait_for(lambda: actor.statistics().subscribers == 1)
        b.cluster.mirrors.drop("counter:relayed")
        await ca.request("counter.add", "counter:relayed", {"amount": 1, "note": ""})
        await wait_for(lambda: actor.statistics().subscribers == 0)


async def test_the_lobbys_live_figures_reach_its_spectators_on_another_node(
        nodes: Nodes) -> None:
    a, b = await nodes.start("a"), await nodes.start("b")
    async with Client.connect(a.ws_url) as ca, Client.connect(b.ws_url) as there:
        await ca.request("lobby.list", "lobby:main", {})  # the lobby lives on a
        pushes: list[Push] = []
        async with trio.open_nursery() as watchers:
            await watchers.start(_watch, there, "lobby:main", pushes)
            await ca.request("counter.create", "counter:listed")  # live on a

            def listed() -> bool:
                return any(p.kind == "snapshot" and any(
                    w["id"] == "counter:listed" for w in p.data["worlds"]) for p in pushes)

            await wait_for(listed)
            watchers.cancel_scope.cancel()
    assert "lobby:main" not in b.directory.hosted()


async def test_a_relay_lost_once_the_feed_stopped_is_dropped(
        postgres_dsn: str, caplog: pytest.LogCaptureFixture) -> None:
    """At shutdown the mirrors' feed may end before a peer link fails: what the link
    carried last, and the relays it loses, are dropped with a reason (nothing publishes to
    the spectators any more); nothing is started in the feed's closed nursery."""
    caplog.set_level(logging.DEBUG, "petridish.cluster")
    async with PostgresEventStore(postgres_dsn) as store:
        mirrors = Mirrors(store, 10, NullObserver())
        mirror = Mirror("counter:late", 10, lambda: None, mirrors)
        mirror.rev = mirror.first = 0
        mirror.topic.subscribe(SubscriberQueue(10), 0, 1, 0, lambda: None)  # a spectator
        async with trio.open_nursery() as feed:
            feed.start_soon(mirrors.run)
            await wait_all_tasks_blocked()
            feed.cancel_scope.cancel()
        mirrors.on_relayed(mirror, 1, "a snapshot push the link carried last")
        mirror.relay.lost()  # the link failed (server/cluster/peers.py `Link._failed`)
    assert not (mirror.draining or mirror.registering)
    why = "of counter:late dropped: the mirrors' feed is not running"
    assert [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()] == [
        f"publishing the snapshot pushes {why}", f"following the snapshot pushes {why}"]
