"""`Window`: an immutable map of what happened in the last window of time (the pairs a lab
dealt, and to whom it dealt each organism), cheap to extend.

The lab's state is never mutated, so a plain dict would be copied whole on every deal:
with a thousand judges that is a copy of every deal of the last ten minutes per deal.
A `Window` is two generations of a persistent hash map (rpds `HashTrieMap`: a new map
in O(log n), sharing the rest): entries go into `young`; once `young` began a window
ago, or holds `limit` entries, it becomes `old` and the previous `old` is dropped whole.
So an entry lives at least one window (unless `limit` entries came after it within one
window) and at most two; callers still check each entry's own time.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import attrs
from rpds import HashTrieMap

_EMPTY: HashTrieMap = HashTrieMap()


@attrs.frozen
class Window:
    """Keys to values added within about `span` ms (see the module docstring)."""

    span: int
    limit: int
    young: HashTrieMap = _EMPTY
    old: HashTrieMap = _EMPTY
    since: int = 0  # when `young` began (ms)

    def put(self, key: Hashable, value: Any, t: int) -> Window:
        """This window with `key` -> `value` added at time `t`."""
        young, old, since = self.young, self.old, self.since
        if t - since >= self.span or len(young) >= self.limit:
            young, old, since = _EMPTY, young, t
        if key in old:
            old = old.discard(key)
        return Window(self.span, self.limit, young.insert(key, value), old, since)

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value of `key`, or `default`."""
        found = self.young.get(key, _MISSING)
        if found is _MISSING:
            found = self.old.get(key, default)
        return found

    def remove(self, key: Hashable) -> Window:
        """This window without `key`."""
        return attrs.evolve(self, young=self.young.discard(key), old=self.old.discard(key))

    def __getitem__(self, key: Hashable) -> Any:
        found = self.get(key, _MISSING)
        if found is _MISSING:
            raise KeyError(key)
        return found

    def __contains__(self, key: Hashable) -> bool:
        return key in self.young or key in self.old

    def __len__(self) -> int:
        return len(self.young) + len(self.old)


_MISSING = object()
