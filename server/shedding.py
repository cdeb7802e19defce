"""A bound shared by every client address (`max_ungreeted` in server/budgets.py,
`max_connections` in server/tcp_guard.py), kept so that a few addresses cannot lock
everyone else out: at the bound, the address holding the most gives up its oldest for a
newcomer from an address holding fewer.
"""

from __future__ import annotations

from typing import Any, Protocol

from protocol.errors import ProtocolError


class Shed(Protocol):
    """A connection that can be let go to make room for another (server/budgets.py
    `Ledger.connect`)."""

    def shed(self, refusal: ProtocolError) -> None:
        """End the connection (with `refusal` as its reason)."""


class Holders:
    """What each key (a client address) holds of a bound shared by everyone, oldest first,
    and the keys by how many they hold, so that the one holding the most is found at once:
    at the bound it gives up its oldest for a newcomer holding fewer, and a few addresses
    cannot keep everyone else out."""

    __slots__ = ("held", "levels")

    def __init__(self) -> None:
        self.held: dict[str, dict[Any, None]] = {}  # key -> what it holds, oldest first
        self.levels: dict[int, dict[str, None]] = {}  # n -> the keys holding n (in order)

    def add(self, key: str, item: Any) -> None:
        """`key` holds `item` too."""
        items = self.held.setdefault(key, {})
        self._level(key, len(items), len(items) + 1)
        items[item] = None

    def remove(self, key: str, item: Any) -> bool:
        """`key` no longer holds `item`; False when it did not (given up already)."""
        items = self.held.get(key)
        if items is None or item not in items:
            return False
        del items[item]
        self._level(key, len(items) + 1, len(items))
        if not items:
            del self.held[key]
        return True

    def heaviest(self, above: int) -> tuple[str, Any] | None:
        """The oldest item of the key holding the most, if it holds more than `above`."""
        if not self.levels or max(self.levels) <= above:
            return None
        key = next(iter(self.levels[max(self.levels)]))
        return key, next(iter(self.held[key]))

    def _level(self, key: str, old: int, new: int) -> None:
        if old:
            keys = self.levels[old]
            del keys[key]
            if not keys:
                del self.levels[old]
        if new:
            self.levels.setdefault(new, {})[key] = None
