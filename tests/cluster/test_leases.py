"""The renewal loop and self-fencing of server/cluster/leases.py on trio's virtual clock,
with a cluster whose renewals the test makes fail (fast, as a refused connection does, or
by hanging, as a partition does) and a directory that records when it stopped a world.

`fence_after` is 0.8 x TTL: with a TTL of 3 s and renewals every second, a node whose
last good renewal was sent at t must stop serving by t + 2.4 s, between two ticks."""

from __future__ import annotations

from collections.abc import Collection

import pytest
import trio
import trio.testing

from server.cluster.leases import Leases

TTL = 3.0


class FlakyCluster:
    """Renews whatever it is asked while `up`; else refuses at once, or hangs (`hang`)."""

    node = "a"
    ttl = TTL

    def __init__(self) -> None:
        self.up = True
        self.hang = False
        self.good: list[float] = []  # when each renewal that succeeded was sent

    async def renew(self, worlds: Collection[str]) -> set[str]:
        sent = trio.current_time()
        await trio.lowlevel.checkpoint()
        if not self.up:
            if self.hang:
                await trio.sleep_forever()
            raise OSError("connection refused")
        self.good.append(sent)
        return set(worlds)

    async def acquire(self, world: str) -> str:
        await trio.lowlevel.checkpoint()  # (its pool still reaches the database)
        return self.node


class Hosting:
    """The directory's part the renewals use: the worlds hosted, and eviction."""

    def __init__(self, *worlds: str) -> None:
        self.live = set(worlds)
        self.stopped: dict[str, float] = {}

    def hosted(self) -> list[str]:
        return sorted(self.live)

    def evict(self, world: str) -> bool:
        if world not in self.live:
            return False
        self.live.discard(world)
        self.stopped[world] = trio.current_time()
        return True


@pytest.mark.parametrize("hang", [False, True], ids=["refused", "hanging"])
async def test_a_node_stops_serving_by_its_last_good_renewal_plus_fence_after(
        autojump_clock: trio.testing.MockClock, hang: bool) -> None:
    cluster, hosting = FlakyCluster(), Hosting("counter:x", "counter:y")
    leases = Leases(cluster)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(leases.run, hosting)
        await trio.sleep(1.5)  # renewed at 1.0
        cluster.up, cluster.hang = False, hang
        await trio.sleep(5)
        nursery.cancel_scope.cancel()
    last_good = cluster.good[-1]
    assert last_good == pytest.approx(1.0)
    assert set(hosting.stopped) == {"counter:x", "counter:y"}
    # by the deadline, not at the next renewal tick after it (4.0)
    assert max(hosting.stopped.values()) <= last_good + leases.fence_after + 1e-6
    assert leases.self_fenced == 2


async def test_renewals_resume_after_an_outage_longer_than_the_fence(
        autojump_clock: trio.testing.MockClock) -> None:
    """Once the database answers again, the next renewal succeeds and the worlds hosted
    since (leases acquired again) are kept: a fenced node is not fenced for good."""
    cluster, hosting = FlakyCluster(), Hosting("counter:x")
    leases = Leases(cluster)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(leases.run, hosting)
        await trio.sleep(1.5)
        cluster.up = False
        await trio.sleep(5)  # fenced at 3.4
        assert hosting.live == set()
        cluster.up = True
        await trio.sleep(1.2)  # a renewal got through
        hosting.live.add("counter:x")  # hosted again (its lease acquired again)
        await trio.sleep(5)
        nursery.cancel_scope.cancel()
    assert hosting.live == {"counter:x"}, hosting.stopped
    assert len([t for t in cluster.good if t > 7]) >= 4


async def test_a_world_acquired_while_renewals_fail_is_kept_until_its_acquire_is_as_old(
        autojump_clock: trio.testing.MockClock) -> None:
    """An acquire that made this node the holder is as good as a renewal for that world:
    hosted after the fence (the database answers again, the next renewal is due in a
    moment), it is not stopped at once; it is stopped `fence_after` after its acquire if
    no renewal succeeded meanwhile."""
    cluster, hosting = FlakyCluster(), Hosting()
    leases = Leases(cluster)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(leases.run, hosting)
        await trio.sleep(1.5)
        cluster.up = False
        await trio.sleep(3)  # fenced at 3.4, nothing hosted
        acquired = trio.current_time()
        assert await leases.acquire("counter:x") == "a"
        hosting.live.add("counter:x")
        await trio.sleep(5)
        nursery.cancel_scope.cancel()
    stopped = hosting.stopped["counter:x"]
    assert acquired + leases.fence_after <= stopped <= acquired + leases.fence_after + 0.2


async def test_trouble_says_why_from_the_first_failed_renewal_until_one_succeeds(
        autojump_clock: trio.testing.MockClock) -> None:
    cluster, hosting = FlakyCluster(), Hosting("counter:x")
    leases = Leases(cluster)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(leases.run, hosting)
        await trio.sleep(1.5)  # renewed at 1.0
        assert leases.trouble is None
        cluster.up = False
        await trio.sleep(1)  # the renewal at 2.0 failed
        assert leases.trouble == ("renewing its leases failed: "
                                  "OSError('connection refused')")
        await trio.sleep(1)  # 3.5: fenced at 3.4
        assert leases.trouble == ("no lease renewal for 2.5 s (the last failed: "
                                  "OSError('connection refused')): it hosts no world "
                                  "until the cluster's database answers")
        cluster.up = True
        await trio.sleep(1)  # renewed at 4.0
        assert leases.trouble is None
        nursery.cancel_scope.cancel()


async def test_a_short_ttl_does_not_fence_a_node_whose_renewals_succeed(
        autojump_clock: trio.testing.MockClock) -> None:
    """With a TTL of 1 s, `fence_after` (0.8 s) is shorter than a second: the renewals
    come at least twice within it, not once a second."""
    cluster, hosting = FlakyCluster(), Hosting("counter:x")
    cluster.ttl = 1.0
    leases = Leases(cluster)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(leases.run, hosting)
        for _ in range(50):
            await trio.sleep(0.1)
            assert leases.trouble is None
        nursery.cancel_scope.cancel()
    assert hosting.live == {"counter:x"}, hosting.stopped
    assert leases.self_fenced == 0
