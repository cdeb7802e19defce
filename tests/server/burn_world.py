"""A test world whose one read costs what the caller asks (a busy wait): for the CPU
budget's tests. `burn:x` exists for any name."""

from __future__ import annotations

import time
from typing import Any

import attrs

from actors.runtime import ActorKind
from actors.world import Codec, Read, World
from protocol.bounds import bounded
from protocol.registry import OpSpec, Registry
from server import worlds


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
