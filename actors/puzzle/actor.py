"""The room's effects, for what its table (rules.py) cannot express.

- `puzzle.hint`: the solver from the current board, off the actor's task. The search holds
  the GIL for its whole budget, which in a worker thread stalled every other room's replies
  (measured in `python -m bench puzzle_room`), so it runs in a worker process
  (`offload(process=True)`); the answer is deferred until it ends. One hint per room at a
  time; only the player asks.
- Wins: after a winning move the room tells the board over every room (`puzzleboard:main`)
  the claim (user, level, moves); the board counts it once its moves replay to a win. A room
  tells its best wins again each time it loads, so a claim lost with a crash comes back.
- `puzzle.create {installed}`: asks the pack world `puzzlepack:<installed>` for its share
  link, then creates the room from that link as from any other.
- `puzzle.leaderboard`: the board's rows for this room's level and pack.

`WORLD` also carries the room's MCP tools and prompt (`tools.py`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs

from actors.runtime import Call, WorldActor, refused
from actors.runtime.deferred import Deferred
from actors.runtime.host import Effect
from actors.runtime.offload import work_clock
from actors.world import Refusal
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops import puzzle as ops

from . import rules
from .hint import hint_job, run_hint
from .puzzleboard.rules import BOARD, WinClaim
from .room import Room
from .tools import PROMPTS, TOOLS

log = logging.getLogger("petridish.puzzle")


@attrs.frozen
class _Hinted:
    """A hint search ended."""

    result: ops.HintResult


@attrs.frozen
class _HintFailed:
    """A hint search raised (logged by the runtime)."""


class PuzzleActor(WorldActor):
    """One room: the table's ops, plus hints, win claims, installed packs and the board."""

    state: Room
    search_in_process: ClassVar[bool] = True  # False: a worker thread (bench comparison)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._hinting: Deferred | None = None

    async def on_start(self) -> None:
        """Tell the board this room's best wins (it keeps only what beats its rows)."""
        for key in self.state.wins:
            self._claim(key)

    def _claim(self, key: str) -> None:
        """Tell the board the win of `key` once it is durable (a room that restarts without
        it claims nothing)."""
        room = self.state
        level = room.level_of(key)
        assert level is not None
        claim = WinClaim(room.player, key, room.wins[key], level, room.profile or level.profile,
                         room.pack_name)
        self.tell_when_durable(BOARD, claim)

    # ---- effects ----------------------------------------------------------------------

    async def _create(self, call: Call) -> ops.RoomView:
        """Create the room; an installed pack is first resolved into its share link."""
        args: ops.CreateArgs = call.args
        if args.installed and not args.link:
            link = await self._installed(args.installed, call)
            call = attrs.evolve(call, args=attrs.evolve(args, link=link))
        return self.play(self.world.moves["puzzle.create"], call)

    async def _installed(self, name: str, call: Call) -> str:
        """The share link of the installed pack `puzzlepack:<name>`."""
        try:
            pack = await self.context.directory.ask(
                f"puzzlepack:{name}", Call("puzzlepack.view", ops.ViewArgs(), call.role,
                                           call.caller))
        except ProtocolError as error:
            raise self.refuse(ErrorCode.BAD_REQUEST, f"no installed pack {name!r}: "
                              f"{error.message}", path="args.installed") from None
        if not pack.link:
            raise self.refuse(ErrorCode.BAD_REQUEST, f"the pack {name!r} holds no level yet",
                              path="args.installed")
        return pack.link

    async def _move(self, call: Call) -> ops.TurnResult:
        """A turn; a win is claimed on the board over every room."""
        wins = self.state.wins
        result = self.play(self.world.moves["puzzle.move"], call)
        if self.state.wins is not wins:
            self._claim(self.state.key(self.state.play.level))
        return result

    async def _hint(self, call: Call) -> None:
        """Start a hint search from the current board (answered when it ends)."""
        room = self.state
        refusal = rules.writable(room, self.ctx(call), None)
        if refusal is not None:
            raise refused(refusal)
        if self._hinting is not None:
            raise self.refuse(ops.PuzzleCode.SEARCHING, "a hint for this room is still being "
                              "searched; wait for its answer")
        assert room.play is not None
        job = hint_job(room.play, call.args.budget_ms, room.rev)
        if isinstance(job, Refusal):
            raise refused(job)
        self._hinting = self.defer()
        self.offload(functools.partial(run_hint, job, work_clock), _Hinted, _HintFailed,
                     process=self.search_in_process)

    async def on_message(self, message: Any) -> None:
        """The end of a hint search."""
        if not isinstance(message, _Hinted | _HintFailed):
            await super().on_message(message)
            return
        answer, self._hinting = self._hinting, None
        if answer is None:
            return
        if isinstance(message, _Hinted):
            answer.succeed(message.result)
        else:
            answer.fail(ProtocolError(ErrorCode.INTERNAL, "the solver failed on this board; "
                                      "the failure was logged"))

    async def _leaderboard(self, call: Call) -> ops.LeaderboardResult:
        """The board over every room for a level of this room's pack."""
        room = self.state
        missing = rules.created(room)
        if missing is not None:
            raise refused(missing)
        assert room.pack is not None
        levels = {lv.id: lv for lv in room.pack.levels}
        level_id = call.args.level or room.level_id
        if level_id not in levels:
            raise self.refuse(ErrorCode.BAD_REQUEST, f"no level {level_id!r} in this room's "
                              "pack", path="args.level", levels=list(levels))
        key = room.key(levels[level_id])
        ask = self.context.directory.ask
        rows = await ask(BOARD, Call("puzzleboard.level", ops.BoardLevelArgs(
            key, ops.MAX_BOARD_ROWS), call.role, call.caller))
        users = await ask(BOARD, Call("puzzleboard.users", ops.BoardUsersArgs(
            [room.key(lv) for lv in room.pack.levels], ops.MAX_BOARD_ROWS), call.role,
            call.caller))
        return ops.LeaderboardResult(level_id, key, rows.fewest, users.solved)

    effects: ClassVar[Mapping[str, Effect]] = {
        "puzzle.create": _create, "puzzle.move": _move, "puzzle.hint": _hint,
        "puzzle.leaderboard": _leaderboard}
    effect_reads: ClassVar[frozenset[str]] = frozenset({"puzzle.leaderboard"})


WORLD = attrs.evolve(rules.WORLD, actor=PuzzleActor, tools=TOOLS, prompts=PROMPTS)
