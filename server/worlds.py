"""The worlds this server hosts: the one list the app, the CLI and the directory read.

A world package exposes `WORLD` (actors/world.py) and, if it has commands, a `cli.py`
with `register(subparsers)`. `ENGINES` are world packages whose live world is not built
yet: only their commands are offered. Package hubs load lazily, so `petridish --help`
imports no engine. The puzzle brings three worlds: its rooms, the board over every room
(`puzzle.puzzleboard`) and packs (`puzzle.puzzlepack`).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from actors import counter, ecosystem, field, lab, lobby, puzzle
from actors.puzzle import puzzleboard, puzzlepack

if TYPE_CHECKING:
    from actors.ecosystem.endpoint import ModelEndpoint
    from actors.runtime import ActorKind
    from actors.world import World
    from protocol.registry import Registry

PACKAGES: tuple[ModuleType, ...] = (lobby, counter, field, ecosystem, puzzle, puzzleboard,
                                     puzzlepack)
ENGINES: tuple[ModuleType, ...] = (lab,)


def worlds(model: ModelEndpoint | None = None) -> tuple[World, ...]:
    """Every world this server hosts; `model` (the server's model endpoint) goes to each
    world whose effect actor takes one (a classmethod `with_model(endpoint)`)."""
    return tuple(_with_model(package.WORLD, model) for package in PACKAGES)


def _with_model(world: World, model: ModelEndpoint | None) -> World:
    taker = getattr(world.actor, "with_model", None)
    if model is None or taker is None:
        return world
    import attrs

    return attrs.evolve(world, actor=taker(model))


def kinds(model: ModelEndpoint | None = None) -> list[ActorKind]:
    """The directory's kinds, one per world (`model`: see `worlds`)."""
    from actors.runtime import ActorKind

    return [ActorKind.of(world) for world in worlds(model)]


def registry() -> Registry:
    """Every op of every world."""
    from protocol.registry import Registry

    return Registry(spec for world in worlds() for spec in world.ops)


def command_modules() -> list[str]:
    """The modules whose `register(subparsers)` add world commands to `petridish`."""
    return [f"{package.__name__}.cli" for package in PACKAGES + ENGINES
            if (Path(package.__file__ or "").parent / "cli.py").exists()]
