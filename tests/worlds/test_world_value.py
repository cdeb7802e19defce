"""A brand-new world from a `World` value alone (no actor subclass), played over a real
socket: create, moves, a refusal that changes nothing, a read, pushes, and a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from actors.runtime import ActorKind
from actors.world import Codec, Ctx, Move, Read, Refusal, World
from protocol.bounds import bounded
from protocol.errors import ErrorCode
from protocol.registry import OpSpec, Registry
from server import worlds
from tests.server.ws_harness import error, raw_client, result, running_server


@attrs.frozen
class Nothing:
    """No arguments."""


@attrs.frozen
class Say:
    """Say a word (1..12 characters)."""

    word: str = bounded(length=12)


@attrs.frozen
class Words:
    """Every word said, in order."""

    words: list[str]


@attrs.frozen
class Said:
    word: str


@attrs.frozen
class Made:
    by: str


@attrs.frozen
class Echo:
    by: str | None = None  # who made it
    words: tuple[str, ...] = ()


def decide_make(s: Echo, _a: Nothing, ctx: Ctx) -> list[Any] | Refusal:
    if s.by is not None:
        return Refusal(ErrorCode.ALREADY_EXISTS, "this echo exists")
    return [Made(ctx.caller.name)]


def decide_say(s: Echo, a: Say, _ctx: Ctx) -> list[Any] | Refusal:
    if not a.word or a.word in s.words:
        return Refusal(ErrorCode.BAD_REQUEST, f"args.word: {a.word!r} was said already",
                       {"path": "args.word"})
    return [Said(a.word)]


def evolve(s: Echo, ev: Any) -> Echo:
    if isinstance(ev, Said):
        return attrs.evolve(s, words=(*s.words, ev.word))
    return Echo(ev.by)


def all_words(s: Echo, *_: Any) -> Words:
    return Words(list(s.words))


OPS = (OpSpec("echo.make", Nothing, Words, "agent", "Create."),
       OpSpec("echo.say", Say, Words, "agent", "Say a new word."),
       OpSpec("echo.words", Nothing, Words, "spectator", "The words."))

ECHO = World(
    kind="echo",
    initial=lambda _name: Echo(),
    evolve=evolve,
    codec=Codec(lambda ev, _after: {"said": ev.word} if isinstance(ev, Said) else
                {"made": ev.by},
                lambda d: Said(d["said"]) if "said" in d else Made(d["made"])),
    view=lambda s: {"words": list(s.words)},
    ops=OPS,
    moves={"echo.make": Move(decide_make, all_words), "echo.say": Move(decide_say, all_words)},
    reads={"echo.words": Read(all_words)},
    create="echo.make",
    create_role="agent",
)


def _server(path: Path) -> Any:
    return running_server(path, kinds=[*worlds.kinds(), ActorKind.of(ECHO)],
                          registry=Registry([*worlds.registry(), *OPS]), open_mode=True)


async def test_a_world_from_a_value_alone_plays_over_a_socket(tmp_path: Path) -> None:
    async with _server(tmp_path) as srv, raw_client(srv) as c, raw_client(srv) as watcher:
        assert error(await c.call("echo.say", "echo:a", word="hi"))["code"] == "unknown_actor"
        assert result(await c.call("echo.make", "echo:a")) == {"words": []}
        await watcher.send({"id": 1, "op": "subscribe", "to": "echo:a"})
        assert result(await watcher.recv())["rev"] == 1
        assert (await watcher.recv())["data"] == {"words": []}
        assert result(await c.call("echo.say", "echo:a", word="hi")) == {"words": ["hi"]}
        refused = error(await c.call("echo.say", "echo:a", word="hi"))
        assert refused == {"code": "bad_request", "message": "args.word: 'hi' was said already",
                           "detail": {"path": "args.word"}}
        assert error(await c.call("echo.say", "echo:a", word="x" * 13))["message"] == \
            "args.word: at most 12 characters"
        assert result(await c.call("echo.say", "echo:a", word="ho")) == {"words": ["hi", "ho"]}
        pushes = [await watcher.recv() for _ in range(2)]
        assert [e for p in pushes for e in p["data"]] == [{"said": "hi"}, {"said": "ho"}]
        assert error(await c.call("echo.make", "echo:a"))["code"] == "already_exists"
        stored = await srv.state.directory.store.read("echo:a")
        # An anonymous caller is a name of its own, one per connection.
        assert stored[0].data["made"].startswith("anonymous~")
        assert [e.data for e in stored[1:]] == [{"said": "hi"}, {"said": "ho"}]
    async with _server(tmp_path) as srv, raw_client(srv) as c:  # a restart
        assert result(await c.call("echo.words", "echo:a")) == {"words": ["hi", "ho"]}
