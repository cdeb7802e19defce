"""`BoardActor`: the board over every room takes the rooms' win claims.

A room tells a claim through the board's `ActorRef` (a message nobody waits for, which the
runtime hands to `handle` like a call); it is not an op, so no client can send one. In a
cluster it reaches the board on whichever process hosts it, over the processes' own links
(`WinClaim` is one of the board's `World.internal` messages). A claim
that would beat the user's best is replayed in a worker process (`offload(process=True)`:
up to 2,000 turns would stall every world on the server's thread), then decided.
"""

from __future__ import annotations

import functools
from typing import Any

import attrs

from actors.runtime import WorldActor

from . import rules


@attrs.frozen
class _Replayed:
    """A claim's replay ended: `won` when its moves won on their last move."""

    claim: rules.WinClaim
    won: bool = False  # (also when the replay raised: logged by the runtime)


class BoardActor(WorldActor):
    """`puzzleboard:main`: the table's reads, plus the claims rooms tell it."""

    state: rules.Leaders

    async def handle(self, call: Any) -> Any:
        """A room's win claim (replayed off the task when it would beat the user's best), or
        a call for the table."""
        if isinstance(call, rules.WinClaim):
            if rules.improves(self.state, call):
                replayed = functools.partial(_Replayed, call)
                self.offload(functools.partial(rules.replays, call), replayed, replayed,
                             process=True)
            return None
        return await super().handle(call)

    async def on_message(self, message: Any) -> None:
        """A claim's replay ended: the win is stored if it still beats the user's best."""
        if isinstance(message, _Replayed):
            self.fold(rules.decide_claim(self.state, message.claim, message.won))
            return
        await super().on_message(message)


WORLD = attrs.evolve(rules.WORLD, actor=BoardActor)
