"""The board over every room as a `World`: wins the rooms claim, verified by replay. Pure.

    {"type": "won", "user", "key", "moves", "level_id", "title", "pack"}

A `won` event is a claim that beat the user's best on the level `key` (a `leaderboard.level_key`)
and whose moves replayed to a win on their last move; the moves are kept, so the stream can be
checked again offline. The state is the standings (`leaderboard.Standings`) and, per key, the
level's id, title and pack for the listing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import attrs

from actors.world import Codec, Ctx, Read, StateCodec, World
from protocol.ops import puzzle as ops

from ..leaderboard import Claim, Standings, record, verified
from ..level import Level, parse_level

KIND = "puzzleboard"
BOARD = f"{KIND}:main"  # the one board


@attrs.frozen
class WinClaim:
    """What a room tells the board when its player wins a level (not an op: only rooms
    send it, on this process or, in a cluster, through the peer links of the processes,
    which no client reaches; `World.internal`)."""

    wire: ClassVar[str] = "puzzleboard.claim"

    user: str
    key: str
    moves: str
    level: Level
    profile: str
    pack: str

    def to_wire(self) -> dict[str, Any]:
        """The claim as JSON (the level in its own format)."""
        return {"user": self.user, "key": self.key, "moves": self.moves,
                "level": self.level.to_json(), "profile": self.profile, "pack": self.pack}

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> WinClaim:
        """The claim of `to_wire`'s JSON (its level checked again)."""
        return cls(str(data["user"]), str(data["key"]), str(data["moves"]),
                   parse_level(data["level"]), str(data["profile"]), str(data["pack"]))


@attrs.frozen
class Won:
    """A verified win that beat `user`'s best on level `key`."""

    user: str
    key: str
    moves: str
    level_id: str
    title: str
    pack: str


@attrs.frozen
class Entry:
    """What the board shows of a level: its id, title and pack."""

    level_id: str
    title: str
    pack: str


@attrs.frozen
class Leaders:
    """The board: revision, standings, and each level's entry by key."""

    rev: int = 0
    standings: Standings = attrs.field(factory=Standings)
    levels: Mapping[str, Entry] = attrs.field(factory=dict)


def improves(state: Leaders, claim: WinClaim) -> bool:
    """Whether `claim` would beat the user's best (the cheap test, made before the replay)."""
    best = state.standings.fewest.get(claim.key, {}).get(claim.user)
    return best is None or len(claim.moves) < best


def replays(claim: WinClaim) -> bool:
    """Whether the claim's moves replay to a win on their last move (`leaderboard.verified`):
    up to 2,000 turns, so the actor runs it in a worker process."""
    return verified(Claim(claim.user, claim.key, claim.moves), claim.level, claim.profile)


def decide_claim(state: Leaders, claim: WinClaim, replayed: bool) -> list[Won]:
    """The event of a claim whose moves `replayed` to a win, or none when they did not or
    it does not beat the user's best (any more: claims are replayed side by side)."""
    if not (replayed and improves(state, claim)):
        return []
    return [Won(claim.user, claim.key, claim.moves, claim.level.id, claim.level.name,
                claim.pack)]


def evolve(state: Leaders, event: Won) -> Leaders:
    """The board after one verified win."""
    return Leaders(state.rev + 1, record(state.standings, event.user, event.key,
                                         len(event.moves)),
                   {**state.levels, event.key: Entry(event.level_id, event.title, event.pack)})


def answer_level(state: Leaders, args: ops.BoardLevelArgs, _ctx: Ctx) -> ops.BoardLevel:
    """`puzzleboard.level`: the level's best rows (empty before anyone won it)."""
    entry = state.levels.get(args.key, Entry("", "", ""))
    rows = state.standings.board(args.key)[:args.limit]
    return ops.BoardLevel(args.key, entry.level_id, entry.title, entry.pack,
                          [ops.Best(user, n) for user, n in rows])


def answer_users(state: Leaders, args: ops.BoardUsersArgs, _ctx: Ctx) -> ops.BoardUsers:
    """`puzzleboard.users`: levels solved per user among `keys` (all levels when empty)."""
    keys = frozenset(args.keys) if args.keys else None
    counts = [(user, len(solved if keys is None else solved & keys))
              for user, solved in state.standings.solved.items()]
    rows = sorted(((u, n) for u, n in counts if n), key=lambda r: (-r[1], r[0]))[:args.limit]
    return ops.BoardUsers(len(state.levels) if keys is None else len(keys),
                          [ops.Solved(user, n) for user, n in rows])


def encode(event: Won, _after: Leaders) -> dict[str, Any]:
    """The stored JSON of a win."""
    return {"type": "won", **attrs.asdict(event)}


def decode(data: dict[str, Any]) -> Won:
    """The win of stored JSON."""
    return Won(data["user"], data["key"], data["moves"], data["level_id"], data["title"],
               data["pack"])


def view(state: Leaders) -> dict[str, Any]:
    """What subscribers see: how many levels and users the board holds."""
    return {"revision": state.rev, "levels": len(state.levels),
            "users": len(state.standings.solved)}


def dump(state: Leaders) -> dict[str, Any]:
    """The board as JSON (its snapshot)."""
    return {"rev": state.rev,
            "fewest": {k: dict(v) for k, v in state.standings.fewest.items()},
            "solved": {u: sorted(keys) for u, keys in state.standings.solved.items()},
            "levels": {k: attrs.asdict(e) for k, e in state.levels.items()}}


def load(data: dict[str, Any]) -> Leaders:
    """The board of `dump`'s JSON."""
    standings = Standings({k: dict(v) for k, v in data["fewest"].items()},
                          {u: frozenset(keys) for u, keys in data["solved"].items()})
    return Leaders(data["rev"], standings, {k: Entry(**e) for k, e in data["levels"].items()})


WORLD = World(
    kind=KIND,
    initial=lambda _name: Leaders(),
    evolve=evolve,
    codec=Codec(encode, decode),
    view=view,
    ops=ops.BOARD_OPS,
    reads={"puzzleboard.level": Read(answer_level), "puzzleboard.users": Read(answer_users)},
    declared=lambda name, _t: name == "main",
    codes=ops.PuzzleCode,
    snapshot=StateCodec(dump, load),
    listed=False,
    internal=(WinClaim,),
)
