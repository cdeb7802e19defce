"""The settled board value and the compiled level context the turn runs against.

`Board` is what a turn maps to a turn: the objects as `(id code, kind, x, y, facing, flags)`
tuples in board order (order decides who moves first; `flags` are Keke's object layer and list
membership, `layer.py`, always 0 in the stacked model) and one value tuple per mechanic, in
mechanic-id order. Rules are not stored: they are a function of the text on the board (and of
its `UNREAD` flags), cached per context.
"""

from __future__ import annotations

from typing import Any

import attrs

from .layer import UNREAD
from .level import Level
from .mechanics.host import HOST_TYPES, HostMechanic, Value
from .profiles import Profile, get_profile
from .ruleset import RuleSet, parse_rules
from .words import TEXT_BASE

RULE_CACHE_LIMIT = 200_000
RULE_CACHE_WORDS = 100_000  # over the cached layouts' keys: about 7 MB a room at most


@attrs.frozen
class Board:
    """A settled position: objects in board order and mechanic values in mechanic-id order."""

    objects: tuple[tuple[int, int, int, int, int, int], ...]  # (id, kind, x, y, facing, flags)
    mechanics: tuple[Value, ...] = ()
    # The rules this board's text spells, carried along to skip a lookup; not part of equality.
    rules: RuleSet | None = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class Limits:
    """Complexity caps for one turn; exceeding one rejects the turn as `complexity_blocked`."""

    work: int = 200_000          # things looked at: push/pull, contact pairs, rules passes
    sentences: int = 512         # rule sentences in force


class Context:
    """A level compiled for play: profile, grid, ids, mechanic hosts and a rules cache bounded
    in layouts and in the words they hold."""

    def __init__(self, level: Level, profile: str | Profile | None = None,
                 limits: Limits | None = None, trace_phases: bool = False) -> None:
        self.level = level
        # Add the lifecycle phases run to every turn record (off: records keep their plain shape).
        self.trace_phases = trace_phases
        self.profile: Profile = (profile if isinstance(profile, Profile)
                                 else get_profile(profile or level.profile))
        self.layered = self.profile.collision == "layered"
        self.width, self.height = level.width, level.height
        self.ids = level.ids
        self.id_code = {oid: i for i, oid in enumerate(level.ids)}
        self.limits = limits or Limits()
        self.mechanics: tuple[tuple[str, HostMechanic, Any], ...] = tuple(
            (m.id, HOST_TYPES[m.type], HOST_TYPES[m.type].compile(m.config_data(), self.id_code))
            for m in level.mechanics)
        self._rules: dict[tuple[tuple[int, int, int], ...], RuleSet] = {}
        self._words = 0  # words held in `_rules`' keys

    def rules(self, objects: Any) -> RuleSet:
        """The rules the text among `objects` spells (memoized on the text layout); the layered
        (Keke) collision model reads Keke's object map (`ruleset.board_lines`)."""
        if self.layered:
            key = tuple((o[1], o[2], o[3], o[5] & UNREAD) for o in objects if o[1] >= TEXT_BASE)
        else:
            key = tuple((o[1], o[2], o[3]) for o in objects if o[1] >= TEXT_BASE)
        found = self._rules.get(key)
        if found is None:
            if len(self._rules) >= RULE_CACHE_LIMIT or self._words + len(key) > RULE_CACHE_WORDS:
                self._rules.clear()
                self._words = 0
            found = self._rules[key] = parse_rules(list(key), self.layered)
            self._words += len(key)
        return found
