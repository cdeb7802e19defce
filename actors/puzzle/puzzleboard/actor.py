"""`BoardActor`: the board over every room takes the rooms' win claims.

A room tells a claim through the board's `ActorRef` (a message nobody waits for, which the
runtime hands to `handle` like a call); it is not an op, so no client can send one.
"""

from __future__ import annotations

from typing import Any

import attrs

from actors.runtime import WorldActor

from . import rules


class BoardActor(WorldActor):
    """`puzzleboard:main`: the table's reads, plus the claims rooms tell it."""

    state: rules.Leaders

    async def handle(self, call: Any) -> Any:
        """A room's win claim (stored once verified and better than the user's best), or a
        call for the table."""
        if isinstance(call, rules.WinClaim):
            self.fold(rules.decide_claim(self.state, call))
            return None
        return await super().handle(call)


WORLD = attrs.evolve(rules.WORLD, actor=BoardActor)
