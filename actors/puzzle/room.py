"""A puzzle room's state, one player's play of a pack, and its transitions (pure values).

`Room` holds the pack (from the share link its `created` event carries), the level being
played and that level's `Play`: the settled engine board, the moves made (`udlrs`), won/lost
and the undo stack. A turn is `turn.advance`, the engine's only transition; undo and reset go
through the engine's snapshot and restore: an undo entry is the state codec's key of the board
before (`codec.py`), and undoing decodes it, which adopts that board as it is (inert: no
transform, no automaton step, no mechanic phase), as `Game.restore` does. Every step keeps the
engine's `Game` semantics (`game.py`): reset is undoable, a won level takes no turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from protocol.ops.puzzle import MAX_MOVES

from .board import Board, Context
from .codec import StateCodec, create_codec
from .game import restored, status
from .leaderboard import Standings, level_key, record
from .level import Level
from .pack import Pack
from .share import open_link
from .turn import Outcome, advance, settle_initial
from .words import MOVE_LETTERS

LETTERS = {action: letter for letter, action in MOVE_LETTERS.items()}


@attrs.frozen
class Play:
    """One level's play: the board, the moves that led to it, won/lost, the undo stack.

    `undo` holds (codec key of the board before, moves before) per undoable step, oldest
    first, at most `MAX_MOVES`. `last` is the record of the last step for the reply (the
    engine's turn record, or `{"cause": ...}` with the restored mechanics); it is not state.
    """

    ctx: Context = attrs.field(eq=False, repr=False)
    codec: StateCodec = attrs.field(eq=False, repr=False)
    start: Board
    board: Board
    moves: str = ""
    won: bool = False
    lost: bool = False
    undo: tuple[tuple[bytes, str], ...] = ()
    last: dict[str, Any] = attrs.field(factory=dict, eq=False, repr=False)
    # [board, action, outcome] of the last `try_move`, so that folding the move a decision
    # just tried does not play the turn again (a memo: each new Play starts empty).
    _tried: list[Any] = attrs.field(factory=list, init=False, eq=False, repr=False)

    @classmethod
    def begin(cls, level: Level, profile: str) -> Play:
        """The play of `level` at its start, under `profile` ("" keeps the level's)."""
        ctx = Context(level, profile or None)
        start = settle_initial(ctx, level.objects)
        won, lost = status(ctx, start)
        return cls(ctx, create_codec(ctx), start, start, won=won, lost=lost)

    @property
    def level(self) -> Level:
        """The level being played."""
        return self.ctx.level

    def try_move(self, action: str) -> Outcome:
        """The engine's outcome of `action` from here (a refusal when not taken)."""
        out = advance(self.ctx, self.board, action)
        self._tried[:] = [self.board, action, out]
        return out

    def moved(self, action: str) -> Play:
        """The play after the accepted turn `action`."""
        tried = self._tried
        if tried and tried[0] is self.board and tried[1] == action:
            out = tried[2]
        else:
            out = advance(self.ctx, self.board, action)
        assert out.refusal is None and out.record is not None
        return attrs.evolve(self, board=out.board, moves=self.moves + LETTERS[action],
                            won=out.won, lost=out.lost, undo=self._pushed(),
                            last={**out.record, "turn": len(self.moves) + 1})

    def reset(self) -> Play:
        """Back at the start (undoable)."""
        return self._jump(self.start, "", self._pushed(), "reset")

    def undone(self) -> Play:
        """Back to before the last turn or reset."""
        key, moves = self.undo[-1]
        return self._jump(self.codec.decode(key), moves, self.undo[:-1], "undo")

    def at_start(self) -> bool:
        """Whether nothing was played since the start (or a reset)."""
        return self.board == self.start and not self.moves

    def board_after(self, count: int) -> Board | None:
        """The board after this play's first `count` moves, without replaying them; None when
        the undo stack no longer holds it. The stack's top `len(moves)` entries hold the board
        before each move since the start or the last reset (a move pushes one, a reset starts
        a new run of them above its own, an undo pops one), unless its oldest went at the cap."""
        if count == len(self.moves):
            return self.board
        if count == 0:
            return self.start  # no move since the start or a reset: the board is the start's
        at = len(self.undo) - len(self.moves) + count
        if at < 0:
            return None
        key, before = self.undo[at]
        assert before == self.moves[:count], "the undo stack holds every kept move's board"
        return self.codec.decode(key)

    def _pushed(self) -> tuple[tuple[bytes, str], ...]:
        return (*self.undo[-(MAX_MOVES - 1):], (self.codec.encode(self.board), self.moves))

    def _jump(self, board: Board, moves: str, undo: tuple[tuple[bytes, str], ...],
              cause: str) -> Play:
        won, lost = status(self.ctx, board)
        last: dict[str, Any] = {"cause": cause, "turn": len(moves)}
        records = restored(self.ctx, self.board, board, cause)
        if records:
            last["mechanics"] = records
        return attrs.evolve(self, board=board, moves=moves, won=won, lost=lost, undo=undo,
                            last=last)


@attrs.frozen
class Room:
    """A room: revision, player, the pack (and the link it came in), the level index and its
    play, the room's standings (its player's wins, `leaderboard.py`) and, per level key, the
    player's fewest winning moves (the claims the room tells the board over every room)."""

    rev: int = 0
    player: str = ""
    pack_name: str = ""
    link: str = ""
    profile: str = ""
    pack: Pack | None = None
    level: int = 0
    play: Play | None = None
    standings: Standings = attrs.field(factory=Standings)
    wins: Mapping[str, str] = attrs.field(factory=dict)
    keys: Mapping[str, str] = attrs.field(factory=dict, eq=False, repr=False)  # id -> key

    @property
    def level_id(self) -> str:
        """The id of the level being played."""
        assert self.play is not None
        return self.play.level.id

    def key(self, level: Level) -> str:
        """The leaderboard key of one of the pack's levels as this room plays it."""
        return self.keys[level.id]

    @classmethod
    def created(cls, player: str, pack_name: str, link: str, level: int, profile: str) -> Room:
        """The room a `created` event makes (revision 1)."""
        pack = open_link(link)
        keys = {lv.id: level_key(lv, profile or lv.profile) for lv in pack.levels}
        return cls(1, player, pack_name, link, profile, pack, level,
                   Play.begin(pack.levels[level], profile), keys=keys)

    def with_play(self, play: Play) -> Room:
        """The room with `play` for its level, one revision on; a win is recorded in the
        standings (the board over every room replays its moves before it counts them)."""
        standings, wins = self.standings, self.wins
        if play.won and not (self.play is not None and self.play.won):
            key = self.key(play.level)
            before = standings
            if play.moves:  # (no replay: this engine played them, turn by turn, to the win)
                standings = record(standings, self.player, key, len(play.moves))
            if standings != before and (key not in wins or len(play.moves) < len(wins[key])):
                wins = {**wins, key: play.moves}
        return attrs.evolve(self, rev=self.rev + 1, play=play, standings=standings, wins=wins)

    def advanced(self, level: int | None = None) -> Room:
        """On to the pack's next level (or to level index `level`), one revision on."""
        assert self.pack is not None
        level = self.level + 1 if level is None else level
        return attrs.evolve(self, rev=self.rev + 1, level=level,
                            play=Play.begin(self.pack.levels[level], self.profile))

    def level_of(self, key: str) -> Level | None:
        """The pack's level with leaderboard key `key`."""
        assert self.pack is not None
        return next((lv for lv in self.pack.levels if self.key(lv) == key), None)
