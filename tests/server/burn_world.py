"""A test world whose one read costs what the caller asks (a busy wait): for the CPU
budget's tests. `burn:x` exists for any name; so does `slow:x`, whose loading takes as
long as its test says (`Loading`)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, ClassVar

import attrs
import trio

from actors.runtime import ActorKind, WorldActor
from actors.world import Codec, Read, World
from protocol.bounds import bounded
from protocol.registry import OpSpec, Registry
from server import worlds
from server.app import Running
from tests.server.ws_harness import others_load, raw_client, result


@attrs.frozen
class SpinArgs:
    """Keep the world busy for `ms` milliseconds."""

    ms: int = bounded(lo=0, hi=200)


@attrs.frozen
class Spun:
    """How long it spun."""

    ms: int


def spin(_state: Any, args: SpinArgs, _ctx: Any) -> Spun:
    """Busy-wait (the test's stand-in for an expensive read)."""
    end = time.perf_counter() + args.ms / 1000
    while time.perf_counter() < end:
        pass
    return Spun(args.ms)


OPS = (OpSpec("burn.spin", SpinArgs, Spun, "spectator", "Spin for `ms` milliseconds."),)

BURN = World(kind="burn", initial=lambda _name: None, evolve=lambda s, _e: s,
             codec=Codec(lambda e, _s: {}, lambda d: d), view=lambda _s: {}, ops=OPS,
             reads={"burn.spin": Read(spin)}, declared=lambda _name, _t: True, listed=False)


def settings() -> dict[str, Any]:
    """`running_server` settings hosting every world and the burn world."""
    return {"kinds": [*worlds.kinds(), ActorKind.of(BURN)],
            "registry": Registry([*worlds.registry(), *OPS])}


class Loading:
    """How a `slow` world loads: it waits `seconds`, then for `gate` (if set), before its
    first message (the tests' stand-in for a stored world with a long history)."""

    def __init__(self, seconds: float = 0.0) -> None:
        self.seconds = seconds
        self.gate: trio.Event | None = None
        self.started = 0  # slow worlds that began loading


SLOW_OPS = (OpSpec("slow.spin", SpinArgs, Spun, "spectator", "Spin for `ms` milliseconds."),)

SLOW = attrs.evolve(BURN, kind="slow", ops=SLOW_OPS, reads={"slow.spin": Read(spin)})


class _SlowActor(WorldActor):
    loading: ClassVar[Loading]

    async def on_start(self) -> None:
        self.loading.started += 1
        await trio.sleep(self.loading.seconds)
        if self.loading.gate is not None:
            await self.loading.gate.wait()


def slow_settings(loading: Loading) -> dict[str, Any]:
    """`running_server` settings hosting every world and `slow:x` for any x, which loads
    as `loading` says."""
    actor = type("SlowActor", (_SlowActor,), {"loading": loading})
    kind = ActorKind.of(attrs.evolve(SLOW, actor=actor))
    return {"kinds": [*worlds.kinds(), kind],
            "registry": Registry([*worlds.registry(), *SLOW_OPS])}


@asynccontextmanager
async def others_busy(running: Running) -> AsyncIterator[None]:
    """Within the block the owner uses the server all along (5 ms of `burn:y` every 50 ms):
    the server is contended (`Budgets.cpu_contended`), so clients' CPU budgets bind."""
    async with raw_client(running, running.owner_token) as owner, \
            trio.open_nursery() as nursery:

        async def busy() -> None:
            while True:
                assert result(await owner.call("burn.spin", "burn:y", ms=5))
                await trio.sleep(0.05)

        nursery.start_soon(busy)
        while others_load(running) < running.state.config.budgets.cpu_contended:
            await trio.sleep(0.01)
        yield
        nursery.cancel_scope.cancel()
