"""A hint is searched off the room's task: the room answers moves while its hint runs (in a
worker process, or a thread), a second hint meanwhile is `searching`, and a room that stops
before its hint ends refuses it `unavailable` (a deferred answer is never left hanging). A win
claim is replayed off the board's task, and a room records its own wins without a replay."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import trio

from actors.puzzle import WORLD
from actors.puzzle.actor import PuzzleActor
from actors.puzzle.catalog import bundled
from actors.puzzle.level import parse_level
from actors.puzzle.pack import pack_of
from actors.puzzle.puzzleboard import WORLD as BOARD_WORLD
from actors.puzzle.puzzleboard.rules import BOARD
from actors.puzzle.share import ShareError, make_link, open_link
from actors.runtime import ActorKind, Call, open_directory
from actors.runtime.mailbox import Pending
from actors.store import MemoryEventStore
from protocol.errors import ProtocolError
from protocol.ops import puzzle as ops
from protocol.text import stored_texts
from tests.puzzle.boards import crowd_level

ROOM = "puzzle:off"
DIRS = {"u": "up", "d": "down", "l": "left", "r": "right", "s": "wait"}


def call(op: str, args: Any) -> Call:
    return Call(op, args, "agent", "ann")


@contextmanager
def replays_here() -> Iterator[list[int]]:
    """Count the engine's replays (`game.replay`) run on this thread meanwhile."""
    count = [0]

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event == "call" and frame.f_code.co_name == "replay" and (
                frame.f_code.co_filename.endswith("puzzle/game.py")):
            count[0] += 1

    before = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield count
    finally:
        sys.setprofile(before)


async def test_a_win_is_replayed_off_the_tasks_of_the_room_and_the_board() -> None:
    kinds = [ActorKind.of(WORLD), ActorKind.of(BOARD_WORLD)]
    solution = bundled("starter").levels[0].solution or ""
    async with open_directory(MemoryEventStore(), kinds) as directory:
        view = await directory.ask(ROOM, call("puzzle.create", ops.CreateArgs()))
        rev = view.revision
        with replays_here() as replays:
            for letter in solution:
                moved = await directory.ask(ROOM, call("puzzle.move", ops.MoveArgs(
                    DIRS[letter], rev)))
                rev = moved.room.revision
            with trio.fail_after(30):
                while not (rows := await directory.ask(BOARD, Call(
                        "puzzleboard.level", ops.BoardLevelArgs(moved.room.key, 10),
                        "spectator", "bob"))).fewest:
                    await trio.sleep(0.05)
        assert moved.room.won and moved.room.solved == ["first-steps"]
        assert rows.fewest == [ops.Best("ann", len(solution))], "the board counted it"
        assert replays[0] == 0, "no replay on the server's thread"


@pytest.mark.parametrize("in_process", [True, False], ids=["process", "thread"])
async def test_the_room_answers_moves_while_its_hint_runs(in_process: bool,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PuzzleActor, "search_in_process", in_process)
    link = make_link(pack_of(parse_level(crowd_level())))
    async with open_directory(MemoryEventStore(), [ActorKind.of(WORLD)]) as directory:
        view = await directory.ask(ROOM, call("puzzle.create", ops.CreateArgs(link=link)))
        hint = Pending()
        await directory.deliver(ROOM, call("puzzle.hint", ops.HintArgs(1000)), hint)
        with pytest.raises(ProtocolError) as busy:
            await directory.ask(ROOM, call("puzzle.hint", ops.HintArgs(100)))
        assert busy.value.code == "searching"
        moved = await directory.ask(ROOM, call("puzzle.move", ops.MoveArgs(
            "right", view.revision)))
        assert moved.room.revision == 2 and not hint.done.is_set(), "answered during the search"
        with trio.fail_after(30):
            await hint.done.wait()
        assert hint.error is None and hint.value.status == "unknown"
        assert hint.value.revision == 1, "the hint names the board it searched"


async def test_a_room_that_stops_refuses_its_pending_hint() -> None:
    link = make_link(pack_of(parse_level(crowd_level())))
    async with open_directory(MemoryEventStore(), [ActorKind.of(WORLD)]) as directory:
        await directory.ask(ROOM, call("puzzle.create", ops.CreateArgs(link=link)))
        hint = Pending()
        await directory.deliver(ROOM, call("puzzle.hint", ops.HintArgs(2000)), hint)
        await trio.sleep(0.1)
        actor = directory.alive(ROOM)
        assert actor is not None
        actor.stop()
        with trio.fail_after(10):
            await hint.done.wait()
        assert hint.error is not None and hint.error.code == "unavailable"


async def test_a_room_stored_under_the_code_point_bounds_still_loads() -> None:
    """A pack named by its level's name of 99 letters and an emoji was 100 characters when
    texts counted code points, 101 UTF-16 units now (over MAX_NAME_CHARS): the stored room
    still folds."""
    data = {**crowd_level(), "name": "a" * 99 + "\N{CRAB}"}
    with stored_texts():  # the bounds of its day
        link = make_link(pack_of(parse_level(data)))
    with pytest.raises(ShareError):
        open_link(link)
    store = MemoryEventStore()
    await store.append("puzzle:old", 0, [{"type": "created", "player": "ann", "pack": "old",
                                          "link": link, "level": 0, "profile": ""}])
    async with open_directory(store, [ActorKind.of(WORLD)]) as directory:
        view = await directory.ask("puzzle:old", call("puzzle.view", ops.ViewArgs()))
    assert (view.revision, view.title) == (1, data["name"])
