"""A world tells another of a change only once the change is durable (`Actor.once_durable`):
a room's win reaches the board, and a field's summary the lobby, after the batch's append;
when that append fails, nobody hears of what the store does not keep."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio

from actors import field, lobby
from actors.lobby.actor import SEEN, Seen
from actors.puzzle import WORLD as ROOM_WORLD
from actors.puzzle.catalog import bundled
from actors.puzzle.puzzleboard import WORLD as BOARD_WORLD
from actors.puzzle.puzzleboard.rules import BOARD
from actors.runtime import ActorKind, Call, open_directory
from actors.runtime.mailbox import Pending
from actors.store import MemoryEventStore, StoreUnavailable
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops import puzzle as ops
from protocol.ops.field import JoinArgs, RulesArgs, StartArgs
from protocol.ops.lobby import LOBBY_ID
from tests.runtime.failing import CRASH, FailsOneAppend, crash_calls

DIRS = {"u": "up", "d": "down", "l": "left", "r": "right", "s": "wait"}


async def test_a_win_whose_move_was_not_stored_is_not_claimed_on_the_board() -> None:
    store = FailsOneAppend()
    store.stream = room_id = "puzzle:claim"
    solution = bundled("starter").levels[0].solution or ""
    kinds = [ActorKind.of(ROOM_WORLD), ActorKind.of(BOARD_WORLD)]
    async with open_directory(store, kinds) as directory:
        view = await directory.ask(room_id, Call("puzzle.create", ops.CreateArgs(), "agent",
                                                 "ann"))
        rev = view.revision
        for letter in solution[:-1]:
            rev = (await directory.ask(room_id, Call("puzzle.move", ops.MoveArgs(
                DIRS[letter], rev), "agent", "ann"))).room.revision
        store.fail = OSError("the disk said no")
        try:
            await directory.ask(room_id, Call("puzzle.move", ops.MoveArgs(
                DIRS[solution[-1]], rev), "agent", "ann"))
        except ProtocolError as error:
            assert error.code == ErrorCode.ACTOR_RESTARTED
        else:
            raise AssertionError("the winning move's append failed: it must be refused")
        room = directory.alive(room_id)
        assert room is not None and not room.state.wins, "the room restarted without the win"
        await directory.ask(BOARD, Call("puzzleboard.level", ops.BoardLevelArgs(
            room.state.key(room.state.play.level), 10), "spectator", "bob"))
        await trio.sleep(0.5)  # (a claim told would be replayed off the board's task)
        assert await store.revision(BOARD) == 0, "the board heard of a win nobody keeps"
        # The move again, stored this time: the board hears of it.
        won = await directory.ask(room_id, Call("puzzle.move", ops.MoveArgs(
            DIRS[solution[-1]], rev), "agent", "ann"))
        assert won.room.won
        with trio.fail_after(30):
            while not await store.revision(BOARD):
                await trio.sleep(0.05)


FIELD_KINDS = [ActorKind.of(field.WORLD), ActorKind.of(lobby.WORLD)]


async def started(directory: Any, field_id: str) -> Any:
    """The field `field_id`, started and generated."""
    await directory.ask(field_id, Call("field.start", StartArgs(size=20, seed=3), "agent",
                                       "ann"))
    actor = await directory.get(field_id)
    with trio.fail_after(30):
        while True:
            try:
                await actor.ask(Call("field.rules", RulesArgs(), "agent", "ann"))
                return actor
            except ProtocolError:
                await trio.sleep(0.05)


async def told_agents(store: MemoryEventStore, field_id: str) -> Any:
    """The agents the lobby's stored summary of `field_id` counts."""
    await trio.sleep(0.3)  # (the lobby takes its tells in its own batches)
    seen = await store.load_snapshot(SEEN)
    return seen and seen.data.get(field_id, {}).get("agents")


async def test_a_join_the_store_did_not_keep_never_reaches_the_lobby() -> None:
    store = FailsOneAppend()
    store.stream = field_id = "field:told"
    async with open_directory(store, FIELD_KINDS) as directory:
        actor = await started(directory, field_id)
        assert await told_agents(store, field_id) == 0
        store.fail = StoreUnavailable("the store is down", sent=False)
        try:
            await actor.ask(Call("field.join", JoinArgs(name="bob"), "agent", "bob"))
        except ProtocolError as error:
            assert error.code == ErrorCode.UNAVAILABLE
        else:
            raise AssertionError("the join's append failed: it must be refused")
        assert await told_agents(store, field_id) == 0, \
            "the lobby heard of a join the store did not keep"
        await directory.ask(field_id, Call("field.join", JoinArgs(name="bob"), "agent", "bob"))
        assert await told_agents(store, field_id) == 1


async def test_a_crash_keeps_the_tells_of_the_batchs_earlier_messages(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A join, then a message whose handler crashes, in one batch: the join's events are
    kept and stored after the restart, and so the lobby hears of it."""
    store, field_id = MemoryEventStore(), "field:kept"
    crash_calls(monkeypatch)
    async with open_directory(store, FIELD_KINDS) as directory:
        actor = await started(directory, field_id)
        assert await told_agents(store, field_id) == 0
        join, crash = Pending(), Pending()
        actor.send(Call("field.join", JoinArgs(name="bob"), "agent", "bob"), join)
        actor.send(Call("field.rules", RulesArgs(), "agent", CRASH), crash)  # one batch
        with trio.fail_after(10):
            await join.done.wait()
            await crash.done.wait()
        assert join.error is None and crash.error is not None
        assert crash.error.code == ErrorCode.ACTOR_RESTARTED
        assert (await store.read(field_id))[-1].data["kind"] == "join"
        assert await told_agents(store, field_id) == 1, "the stored join was never told"


async def test_a_tell_to_a_full_mailbox_is_logged_at_debug(
        caplog: pytest.LogCaptureFixture) -> None:
    """Clients can fill a world's mailbox (the lobby's, with `lobby.list`): a tell it then
    refuses is logged at debug, or every field's summary would be a warning line."""
    async with open_directory(MemoryEventStore(), FIELD_KINDS) as directory:
        actor = await started(directory, "field:full")
        await directory.get(LOBBY_ID)
        lobby = directory.ref(LOBBY_ID)
        with pytest.raises(ProtocolError, match="mailbox"):
            for _ in range(100_000):  # (its task does not run meanwhile: it fills)
                lobby.tell(Seen("counter:x", {}))
        caplog.set_level(logging.DEBUG, "petridish.actors")
        actor.tell_when_durable(LOBBY_ID, Seen("field:full", {}))
        told = [r.levelno for r in caplog.records if "could not tell" in r.getMessage()]
        assert told == [logging.DEBUG]
