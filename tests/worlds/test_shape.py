"""Every world has the same shape: a hub exporting `WORLD` lazily, a table that answers
every op once, a bound on every argument, and domain modules that touch no trio, no
thread and no clock."""

from __future__ import annotations

import enum
import importlib
import re
import subprocess
import sys
import types
import typing
from pathlib import Path

import attrs
import pytest

from actors.runtime import ActorKind
from protocol.bounds import bounds_of
from server import worlds

REPO = Path(__file__).resolve().parents[2]
# Modules allowed to use trio and threads: the runtime, each world's effect actor, the
# server, the reference client (protocol/client.py: it runs in the agent's process), and
# the model endpoints' exchange (actors/chat_completions.py: blocking HTTP that a worker
# thread runs, its deadline a timer thread).
EFFECTS = re.compile(r"^(actors/runtime/.*|actors/[a-z_]+/actor\.py|server/.*|"
                     r"protocol/client\.py|actors/chat_completions\.py)$")
TRIO = re.compile(r"^\s*(import trio|from trio|import threading|from threading)\b", re.MULTILINE)
THREAD = re.compile(r"\bthreading\.|\bThread\(")
CLOCK = re.compile(r"\btime\.(time|monotonic|perf_counter|process_time)|\bdatetime\.now\b|"
                   r"\bdate\.today\b|\bdatetime\.utcnow\b|^\s*import time\b|"
                   r"\bdefault_rng\(\s*\)|\brandom\.(random|randint|choice|seed)\(", re.MULTILINE)


def _sources(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (REPO / folder).rglob("*.py"))


@pytest.mark.parametrize("path", _sources("actors", "protocol"),
                         ids=lambda p: str(p.relative_to(REPO)))
def test_only_the_runtime_and_effect_actors_use_trio_or_threads(path: Path) -> None:
    rel = str(path.relative_to(REPO))
    if EFFECTS.match(rel) or path.name == "cli.py":
        return  # a world's cli.py is a command-line edge, like the server (lab import)
    text = path.read_text()
    assert not TRIO.search(text), f"{rel} imports trio or threading"
    assert not THREAD.search(text), f"{rel} starts a thread"


@pytest.mark.parametrize("package", worlds.PACKAGES, ids=lambda p: p.__name__)
def test_no_world_reads_the_clock_or_makes_an_unseeded_generator(package) -> None:
    folder = Path(package.__file__).parent
    for path in sorted(folder.rglob("*.py")):
        if path.name == "cli.py":
            continue  # the command line is an edge, like the server: it may time a budget
        text = path.read_text()
        found = CLOCK.search(text)
        assert found is None, f"{path.relative_to(REPO)} reads the clock: {found.group(0)!r}"


@pytest.mark.parametrize("package", worlds.PACKAGES, ids=lambda p: p.__name__)
def test_each_world_hub_exports_its_world_lazily(package) -> None:
    code = (f"import sys, {package.__name__} as p; assert 'trio' not in sys.modules; "
            f"assert p.__all__ == ['WORLD'] and p.WORLD.kind == {package.__name__!r}"
            f".rpartition('.')[2]")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def _unbounded(cls: type, path: str) -> list[str]:
    """The fields of args class `cls` (and of the classes inside it) without bounds: every
    number, text, list and map needs one; booleans and choices do not."""
    hints = typing.get_type_hints(cls)
    out = []
    for field in attrs.fields(cls):
        tp = hints[field.name]
        union = typing.get_origin(tp) in (typing.Union, types.UnionType)
        for alt in typing.get_args(tp) if union else (tp,):
            if alt is type(None) or alt is bool or typing.get_origin(alt) is typing.Literal:
                continue
            if isinstance(alt, type) and issubclass(alt, enum.Enum):
                continue
            if attrs.has(alt):
                out += _unbounded(alt, f"{path}.{field.name}")
            elif bounds_of(field) is None:
                out.append(f"{path}.{field.name}")
    return out


@pytest.mark.parametrize("world", worlds.worlds(), ids=lambda w: w.kind)
def test_each_world_answers_every_op_and_bounds_every_argument(world) -> None:
    ActorKind.of(world)  # every op answered exactly once by a move, read or effect
    unbounded = [f"{spec.name}: {path}" for spec in world.ops
                 for path in _unbounded(spec.args, "args")]
    assert not unbounded, f"arguments without bounds (protocol/bounds.py): {unbounded}"


def test_an_effect_read_must_be_an_effect() -> None:
    """`effect_reads` marks ops as reads (served past `stored_per_hour`, sent again between
    processes): one that is not the host's effect is refused when the kind is hosted."""
    world = next(w for w in worlds.worlds() if w.kind == "lobby")

    class Host(world.actor):
        effect_reads = frozenset({"lobby.list", "lobby.nothing"})

    with pytest.raises(ValueError, match="effect reads"):
        ActorKind.of(attrs.evolve(world, actor=Host))
    assert "lobby.list" in ActorKind.of(world).reads


def test_the_registry_lists_each_world_once() -> None:
    kinds = [w.kind for w in worlds.worlds()]
    assert len(kinds) == len(set(kinds))
    assert {spec.kind for spec in worlds.registry()} == set(kinds)
    for package in worlds.PACKAGES:
        importlib.import_module(package.__name__)
