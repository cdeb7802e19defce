"""A puzzle room driven through the world's table (decide, evolve, result and answer called
directly), keeping every decided event (tests/puzzle/test_room.py, test_hint.py)."""

from __future__ import annotations

from typing import Any

from actors.puzzle import rules
from actors.world import Caller, Ctx, Refusal
from protocol.ops import puzzle as ops

WORLD = rules.WORLD
ANN = Caller("ann", "agent")
BOB = Caller("bob", "agent")
DIRS = {"u": "up", "d": "down", "l": "left", "r": "right", "s": "wait"}


class Room:
    """A room driven through the world's table, keeping every decided event."""

    def __init__(self, **create: Any) -> None:
        self.state = WORLD.initial("puzzle:test")
        self.events: list[Any] = []
        self.reply = self.write("puzzle.create", ops.CreateArgs(**create))
        assert not isinstance(self.reply, Refusal), self.reply

    def ctx(self, caller: Caller) -> Ctx:
        return Ctx(caller, t=0, rev=self.state.rev)

    def write(self, op: str, args: Any, caller: Caller = ANN) -> Any:
        move = WORLD.moves[op]
        decided = move.decide(self.state, args, self.ctx(caller))
        if isinstance(decided, Refusal):
            return decided
        for event in decided:
            self.state = WORLD.evolve(self.state, event)
        self.events.extend(decided)
        return move.result(self.state, decided, args)

    def move(self, letters: str, caller: Caller = ANN) -> Any:
        reply = None
        for letter in letters:
            reply = self.write("puzzle.move", ops.MoveArgs(DIRS[letter], self.state.rev), caller)
            if isinstance(reply, Refusal):
                return reply
        return reply

    def read(self, op: str, args: Any, caller: Caller = BOB) -> Any:
        return WORLD.reads[op].answer(self.state, args, self.ctx(caller))
