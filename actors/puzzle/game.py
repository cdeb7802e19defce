"""The game API (the seed's `createGame()` contract): `create_game(level)` and `Game`.

`step(action)` plays one of "up", "down", "left", "right", "wait" and returns a settled result:
`{"accepted": true, "action", "turn", "moves", "rules", "rules_changed", "transforms",
"destroyed", "automata", "won", "lost"}`, plus `mechanics` (transition records) only when some
mechanic reported a transition, and `phases` (lifecycle phases run) when asked for. A
rejected turn returns an `actors.world.Refusal` (code a `PuzzleCode`: bad_action,
nothing_can_move, no_change, complexity_blocked, game_over) and changes nothing: no state, no
history, no undo entry. `undo()` (refused with nothing_to_undo), `reset()` and
`restore(snapshot)` return results of the same shape family; `get_state()` returns a fresh snapshot (see snapshot.py) that callers may mutate
freely. Every returned dict is built anew, so nothing a caller holds aliases game state.
"""

from __future__ import annotations

from typing import Any

from actors.world import Refusal
from protocol.ops.puzzle import PuzzleCode

from .board import Board, Context, Limits
from .contacts import has_you, victory
from .diagnostics import Diagnostic
from .level import Level, parse_level
from .profiles import Profile
from .snapshot import RestoreError, board_to_state, state_to_board
from .turn import Work, advance, refusal, settle_initial

ACTIONS = frozenset({"up", "down", "left", "right", "wait"})


class Game:
    """One play session of a level: the settled board, its move list and the undo stack."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.initial: Board = settle_initial(ctx, ctx.level.objects)
        self._board = self.initial
        self._moves: tuple[str, ...] = ()
        self._undo: list[tuple[Board, tuple[str, ...]]] = []
        self._won, self._lost = status(ctx, self._board)

    # ------------------------------------------------------------------ reading
    @property
    def board(self) -> Board:
        """The settled board (an immutable value)."""
        return self._board

    @property
    def history(self) -> tuple[str, ...]:
        """The actions that led from the authored start to the current state."""
        return self._moves

    @property
    def won(self) -> bool:
        """True once a YOU stands on a WIN."""
        return self._won

    @property
    def lost(self) -> bool:
        """True when nothing is YOU and the level is not won."""
        return self._lost

    def get_state(self) -> dict[str, Any]:
        """A fresh snapshot of the settled state (safe to mutate)."""
        state = {"level": self.ctx.level.id, "profile": self.ctx.profile.name,
                 "turn": len(self._moves), "moves": list(self._moves)}
        state.update(board_to_state(self.ctx, self._board))
        state.update(won=self._won, lost=self._lost)
        return state

    # ------------------------------------------------------------------ playing
    def step(self, action: str) -> dict[str, Any] | Refusal:
        """Play one action; see the module docstring for the result."""
        if self._won:
            return refusal(PuzzleCode.GAME_OVER)
        out = advance(self.ctx, self._board, action)
        if out.refusal is not None:
            return out.refusal
        assert out.record is not None
        self._undo.append((self._board, self._moves))
        self._board, self._moves = out.board, self._moves + (action,)
        self._won, self._lost = out.won, out.lost
        return {**out.record, "turn": len(self._moves)}

    def undo(self) -> dict[str, Any] | Refusal:
        """Return to the state before the last accepted turn, reset or restore."""
        if not self._undo:
            return refusal(PuzzleCode.NOTHING_TO_UNDO)
        board, moves = self._undo.pop()
        return self._jump(board, moves, "undo")

    def reset(self) -> dict[str, Any]:
        """Return to the authored start (undoable); a no-op when already there."""
        return self._push_and_jump(self.initial, (), "reset")

    def restore(self, snapshot: Any) -> dict[str, Any]:
        """Adopt a snapshot's state as is: no transform, no automaton step, no lifecycle phase.

        Raises `snapshot.RestoreError` on an invalid snapshot (state unchanged), including one of
        another level. A snapshot without `moves` keeps the current move list. Undoable; a
        snapshot equal to the current state changes nothing.
        """
        board = state_to_board(self.ctx, snapshot)
        problems = []
        if snapshot.get("level", self.ctx.level.id) != self.ctx.level.id:
            problems.append(Diagnostic("level", f"snapshot of level {snapshot['level']!r}, "
                                       f"this game plays {self.ctx.level.id!r}"))
        moves = snapshot.get("moves", list(self._moves))
        if not (isinstance(moves, list) and all(isinstance(m, str) and m in ACTIONS for m in moves)):
            problems.append(Diagnostic("moves", "must be a list of up, down, left, right, wait"))
        if problems:
            raise RestoreError(problems)
        return self._push_and_jump(board, tuple(moves), "restore")

    # ------------------------------------------------------------------ internals
    def _push_and_jump(self, board: Board, moves: tuple[str, ...], cause: str) -> dict[str, Any]:
        if board == self._board and moves == self._moves:
            return {"accepted": True, "cause": cause, "changed": False, "turn": len(moves)}
        self._undo.append((self._board, self._moves))
        return self._jump(board, moves, cause)

    def _jump(self, board: Board, moves: tuple[str, ...], cause: str) -> dict[str, Any]:
        old = self._board
        self._board, self._moves = board, moves
        self._won, self._lost = status(self.ctx, board)
        result: dict[str, Any] = {"accepted": True, "cause": cause, "changed": True,
                                  "turn": len(moves), "won": self._won, "lost": self._lost}
        records = restored(self.ctx, old, board, cause)
        if records:
            result["mechanics"] = records
        return result


def status(ctx: Context, board: Board) -> tuple[bool, bool]:
    """(won, lost) of a settled board: a YOU on a WIN; nothing YOU and not won."""
    work = Work(ctx, board, record=False)
    won = victory(work)
    return won, not won and not has_you(work)


def restored(ctx: Context, old: Board, new: Board, cause: str) -> list[dict[str, Any]]:
    """The `restored` transition records of the mechanics whose value differs from `old` to
    `new` (an undo, reset or restore: `cause`)."""
    return [
        {"mechanic": mid, "type": "restored", "subject": None,
         "from": dict(zip([n for n, _ in host.schema], a, strict=True)),
         "to": dict(zip([n for n, _ in host.schema], b, strict=True)), "cause": cause}
        for (mid, host, _), a, b in zip(ctx.mechanics, old.mechanics, new.mechanics, strict=True)
        if a != b]


def create_game(level: Level | dict[str, Any], profile: str | Profile | None = None,
                limits: Limits | None = None, *, trace_phases: bool = False) -> Game:
    """A new game of `level` (a `Level` or level JSON data, validated) under `profile`
    (default: the level's own) with complexity `limits`; `trace_phases` adds the lifecycle
    phases run to every step result (for tests and the seed's phase-order scenario)."""
    if not isinstance(level, Level):
        level = parse_level(level)
    return Game(Context(level, profile, limits, trace_phases))


def replay(level: Level | dict[str, Any], moves: str, profile: str | Profile | None = None
           ) -> dict[str, Any]:
    """Play a move string over `u d l r s` from the start; stops at the first win.

    Returns `{"won", "won_at" (1-based step or None), "lost", "steps"}` where `steps` counts the
    moves read (rejected no-op turns included, as Keke counts them).
    """
    from .words import MOVE_LETTERS

    game = create_game(level, profile)
    steps = 0
    for letter in moves.lower():
        steps += 1
        game.step(MOVE_LETTERS[letter])
        if game.won:
            return {"won": True, "won_at": steps, "lost": False, "steps": steps}
    return {"won": False, "won_at": None, "lost": game.lost, "steps": steps}
