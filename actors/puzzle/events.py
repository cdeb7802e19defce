"""The events of a puzzle room and their stored JSON.

    {"type": "created", "player", "pack", "link", "level", "profile"}
    {"type": "moved", "dir"}            (+ "won": true, "level_id", "moves" on a winning move)
    {"type": "undone"}  {"type": "reset"}  {"type": "advanced"}   (+ "level": n after a select)

`created` carries the room's whole pack as a data-only share link (`share.py`), so a stream
replays the same levels even after the bundled pack file changes. A winning `moved` is stored
with the level and the full move string (fields derived from the state after it, for folds over
stored streams such as leaderboards); `decode` ignores them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from .room import Room


@attrs.frozen
class Created:
    """The room exists: `player` plays level `level` of the pack in `link` (named `pack`),
    under `profile` ("" keeps each level's own)."""

    player: str
    pack: str
    link: str
    level: int
    profile: str = ""


@attrs.frozen
class Moved:
    """One turn: `dir` is up, down, left, right or wait."""

    dir: str


@attrs.frozen
class Undone:
    """The last turn or reset was undone."""


@attrs.frozen
class Reset:
    """The level went back to its start (undoable)."""


@attrs.frozen
class Advanced:
    """The player went on to the pack's next level, or to level index `level` (a select)."""

    level: int | None = None


Event = Created | Moved | Undone | Reset | Advanced
_PLAIN = {"undone": Undone, "reset": Reset}
_NAMES = {cls: name for name, cls in _PLAIN.items()}


def encode(event: Event, after: Room) -> dict[str, Any]:
    """The stored JSON of an event (`after`: the room once it is folded in)."""
    if isinstance(event, Created):
        return {"type": "created", "player": event.player, "pack": event.pack,
                "link": event.link, "level": event.level, "profile": event.profile}
    if isinstance(event, Moved):
        out: dict[str, Any] = {"type": "moved", "dir": event.dir}
        if after.play is not None and after.play.won:
            out.update(won=True, level_id=after.level_id, moves=after.play.moves)
        return out
    if isinstance(event, Advanced):
        return {"type": "advanced"} if event.level is None else {"type": "advanced",
                                                                 "level": event.level}
    return {"type": _NAMES[type(event)]}


def decode(data: dict[str, Any]) -> Event:
    """The event of stored JSON (derived fields are ignored)."""
    kind = data["type"]
    if kind == "created":
        return Created(data["player"], data["pack"], data["link"], data["level"],
                       data.get("profile", ""))
    if kind == "moved":
        return Moved(data["dir"])
    if kind == "advanced":
        return Advanced(data.get("level"))
    return _PLAIN[kind]()
