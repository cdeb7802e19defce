"""Leaderboards of win claims: per level the fewest moves by user, and the levels each user
solved.

A claim is (user, level key, moves). The board over every room counts it only when the moves
replay to a win, on exactly their last move, in the engine (`game.replay`) under the level's
profile (`verified`); a room records its own player's wins as its engine played them. A level's key names its content (`level_key`): the same
level id in two packs, or one level played under two profiles, are different boards.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import attrs

from .game import replay
from .level import Level
from .share import canonical_json


def level_key(level: Level, profile: str) -> str:
    """`<level id>@<16 hex digits>`, the digits naming the level's canonical JSON and profile."""
    digest = hashlib.sha256(canonical_json([level.to_json(), profile])).hexdigest()[:16]
    return f"{level.id}@{digest}"


@attrs.frozen
class Claim:
    """`user` won the level `level` (a `level_key`) with `moves` (over u d l r s)."""

    user: str
    level: str
    moves: str


@attrs.frozen
class Standings:
    """Per level key, each user's fewest winning moves; per user, the level keys solved."""

    fewest: Mapping[str, Mapping[str, int]] = attrs.field(factory=dict)
    solved: Mapping[str, frozenset[str]] = attrs.field(factory=dict)

    def board(self, level: str) -> list[tuple[str, int]]:
        """(user, fewest moves) for a level, best first (ties by user name)."""
        return sorted(self.fewest.get(level, {}).items(), key=lambda e: (e[1], e[0]))

    def counts(self) -> dict[str, int]:
        """Levels solved per user."""
        return {user: len(keys) for user, keys in sorted(self.solved.items())}


def wins(level: Level, profile: str, moves: str) -> bool:
    """Whether `moves` replay to a win on exactly their last move."""
    result = replay(level, moves, profile)
    return result["won"] and result["won_at"] == len(moves)


def verified(claim: Claim, level: Level, profile: str) -> bool:
    """Whether `claim` names `level` under `profile` and its moves replay to a win there."""
    return claim.level == level_key(level, profile) and wins(level, profile, claim.moves)


def record(standings: Standings, user: str, level: str, moves: int) -> Standings:
    """The standings with a verified win of `user` on level key `level` in `moves` moves."""
    board = standings.fewest.get(level, {})
    best = board.get(user)
    fewest = dict(standings.fewest)
    if best is None or moves < best:
        fewest[level] = {**board, user: moves}
    solved = dict(standings.solved)
    solved[user] = standings.solved.get(user, frozenset()) | {level}
    return Standings(fewest, solved)
