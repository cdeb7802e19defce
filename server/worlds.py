"""The worlds this server hosts: the one list the app, the CLI and the directory read.

A world package exposes `WORLD` (actors/world.py) and, if it has commands, a `cli.py`
with `register(subparsers)`. `ENGINES` are world packages whose live world is not built
yet: only their commands are offered. Package hubs load lazily, so `petridish --help`
imports no engine.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

from actors import counter, ecosystem, field, lab, lobby, puzzle

if TYPE_CHECKING:
    from actors.runtime import ActorKind
    from actors.world import World
    from protocol.registry import Registry

PACKAGES: tuple[ModuleType, ...] = (lobby, counter, field, ecosystem, lab)
ENGINES: tuple[ModuleType, ...] = (puzzle,)


def worlds() -> tuple[World, ...]:
    """Every world this server hosts."""
    return tuple(package.WORLD for package in PACKAGES)


def kinds() -> list[ActorKind]:
    """The directory's kinds, one per world."""
    from actors.runtime import ActorKind

    return [ActorKind.of(world) for world in worlds()]


def registry() -> Registry:
    """Every op of every world."""
    from protocol.registry import Registry

    return Registry(spec for world in worlds() for spec in world.ops)


def command_modules() -> list[str]:
    """The modules whose `register(subparsers)` add world commands to `petridish`."""
    return [f"{package.__name__}.cli" for package in PACKAGES + ENGINES]
