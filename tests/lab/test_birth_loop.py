"""The birth loop's timer runs only while the loop has work: a lab whose backlog is full
idles and unloads like any world nobody asks, and loads again, the same, on demand; an op
that lowers the backlog arms the loop again.

The lab reads trio's clock as its own, a mock clock the test moves a birth tick at a time
(tests/clocked.py); the store is a real SQLite file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio.testing

from actors.lab import WORLD
from actors.lab.births import backlog
from actors.lab.contract import TRACKS
from actors.runtime import Call, RuntimeConfig
from actors.runtime.directory import ActorKind, open_directory
from protocol.ops import lab as ops
from server.storage import SqliteEventStore
from tests.clocked import run_for, settled, trio_ms

LAB = "lab:idle"
IDLE = 60.0  # the runtime's idle timeout here, in seconds
TICK = WORLD.actor.birth_tick  # seconds the test moves the lab's clock at a time


def full(actor: Any) -> bool:
    """Every track's unproven backlog at the lab's cap."""
    pool = list(actor.state.organisms.values())
    return all(backlog(pool, track) >= actor.state.backlog for track in TRACKS)


async def test_a_lab_whose_backlog_is_full_unloads_when_idle(
        tmp_path: Path, mock_clock: trio.testing.MockClock) -> None:
    # Before: the loop ticked every 0.5 s for good, each tick a message, so the lab was
    # never idle and held its memory until the process ended.
    owner = ("owner", "owner:me")
    async with SqliteEventStore.in_directory(tmp_path) as store, open_directory(
            store, [ActorKind.of(WORLD)], clock=trio_ms,
            config=RuntimeConfig(idle_timeout=IDLE)) as directory:
        await directory.ask(LAB, Call("lab.create", ops.CreateArgs(backlog=1), *owner))
        actor = await directory.get(LAB)
        for _ in range(100):
            if full(actor) and not actor._offloads:
                break
            await run_for(mock_clock, actor, 1, TICK)
        assert full(actor)
        organisms, rev = dict(actor.state.organisms), actor.rev
        await run_for(mock_clock, actor, IDLE + 1, TICK)
        assert actor.stopped and directory.live() == []
        assert len(await store.read(LAB)) == rev  # nothing bred meanwhile

        again = await directory.get(LAB)  # loaded on demand, as it was
        await settled(again)
        assert again is not actor and (again.state.organisms, again.rev) == (organisms, rev)
        first = next(iter(organisms))
        await directory.ask(LAB, Call("lab.ok", ops.OkArgs(first), *owner))  # proven
        for _ in range(100):
            if len(again.state.organisms) > len(organisms) and not again._offloads:
                break
            await run_for(mock_clock, again, 1, TICK)
        newborn = set(again.state.organisms) - set(organisms)
        assert [again.state.organisms[o].track for o in newborn] == \
            [organisms[first].track]  # the proven one's track bred again
        assert full(again)


async def test_judges_proofs_refill_the_loop_s_backlog_only_after_an_hour(
        tmp_path: Path, mock_clock: trio.testing.MockClock) -> None:
    """Any judge dealt a canary may prove it: were its place in the backlog free at once,
    a visitor reporting every canary it is dealt would have the loop breed as fast as it
    reports. A canary a judge proved holds its place for an hour (the owner's proofs free
    theirs at once): no birth replaces it meanwhile."""
    owner, judge = ("owner", "owner:me"), ("spectator", "anonymous~1")
    async with SqliteEventStore.in_directory(tmp_path) as store, open_directory(
            store, [ActorKind.of(WORLD)], clock=trio_ms,
            config=RuntimeConfig(idle_timeout=2 * 3600)) as directory:
        await directory.ask(LAB, Call("lab.create", ops.CreateArgs(backlog=1), *owner))
        actor = await directory.get(LAB)

        def shaders() -> list[str]:
            return [o.id for o in actor.state.organisms.values() if o.track == "shader"]

        async def bred(n: int) -> None:  # until the loop has bred `n` shaders and idles
            for _ in range(100):
                if len(shaders()) >= n and full(actor) and not actor._offloads:
                    return
                await run_for(mock_clock, actor, 1, TICK)
            raise AssertionError(f"{len(shaders())} shaders, not {n}")

        await bred(1)
        await directory.ask(LAB, Call("lab.ok", ops.OkArgs(shaders()[0]), *owner))
        await bred(2)  # the owner's proof: refilled at once
        canary = shaders()[1]
        pair = await directory.ask(LAB, Call("lab.public_pair", ops.PublicPairArgs("k"), *judge))
        assert pair.canary == canary
        seen = await directory.ask(LAB, Call("lab.seen", ops.SeenArgs(canary, "k", True), *judge))
        assert seen.verdict == "proven"
        await run_for(mock_clock, actor, 60, TICK)
        assert len(shaders()) == 2  # held: no birth replaced it
        await run_for(mock_clock, actor, 3600, 60)
        await directory.ask(LAB, Call("lab.directive_add", ops.DirectiveAddArgs(
            "soft slow tides of violet light over a dark ground"), *owner))
        await bred(3)  # an hour on, the next op that changes the lab arms the loop again
