"""The worlds this server hosts: the one list the app, the CLI and the directory read.

A world package exposes `WORLD` (actors/world.py) and, if it has commands, a `cli.py`
with `register(subparsers)`. Package hubs load lazily, so `petridish --help` imports no
engine. The puzzle brings three worlds: its rooms, the board over every room
(`puzzle.puzzleboard`) and packs (`puzzle.puzzlepack`). The server adds one world of its
own, the owner's console (`admin:main`, server/admin.py); `serve` attaches it to itself.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from actors import counter, ecosystem, field, lab, lobby, puzzle
from actors.puzzle import puzzleboard, puzzlepack

if TYPE_CHECKING:
    from actors.runtime import ActorKind
    from actors.world import World
    from protocol.registry import Registry

PACKAGES: tuple[ModuleType, ...] = (lobby, counter, field, ecosystem, lab, puzzle, puzzleboard,
                                     puzzlepack)


def worlds() -> tuple[World, ...]:
    """Every world this server hosts: the packages', then the owner's console
    (`admin:main`, server/admin.py: a world of the server's own)."""
    from server import admin

    return (*(package.WORLD for package in PACKAGES), admin.HOSTED)


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
    return [f"{package.__name__}.cli" for package in PACKAGES
            if (Path(package.__file__ or "").parent / "cli.py").exists()]
