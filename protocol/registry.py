"""One registry of ops: name -> args class, result class, minimum role, one line of doc.

Each world kind declares its ops in `protocol/ops/<kind>.py` as a tuple `OPS` of
`OpSpec`; its `World` carries them, and `server/worlds.py` builds the server's registry
from the worlds it hosts. An op is named `<kind>.<verb>` and is handled by an actor of
that kind. A new op is one attrs class pair and one entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import attrs

from protocol.errors import ErrorCode, ProtocolError
from protocol.roles import ROLES


@attrs.frozen
class OpSpec:
    """One op: its name, args and result attrs classes, minimum role and doc line."""

    name: str
    args: type
    result: type
    role: str
    doc: str
    default_to: str | None = None  # the actor a request without `to` goes to

    def __attrs_post_init__(self) -> None:
        # The dot also keeps op names apart from the envelope's hello/subscribe/unsubscribe.
        kind, dot, verb = self.name.partition(".")
        if not (dot and kind and verb):
            raise ValueError(f"op name {self.name!r} is not '<kind>.<verb>'")
        if self.role not in ROLES:
            raise ValueError(f"op {self.name!r}: unknown role {self.role!r}")
        if not (attrs.has(self.args) and attrs.has(self.result)):
            raise TypeError(f"op {self.name!r}: args and result must be attrs classes")

    @property
    def kind(self) -> str:
        """The world kind whose actors handle this op."""
        return self.name.partition(".")[0]


class Registry:
    """Ops by name; each name registered once."""

    def __init__(self, specs: Iterable[OpSpec] = ()) -> None:
        self._ops: dict[str, OpSpec] = {}
        for spec in specs:
            self.add(spec)

    def add(self, spec: OpSpec) -> None:
        """Register `spec`; ValueError if the name is taken."""
        if spec.name in self._ops:
            raise ValueError(f"op {spec.name!r} is already registered")
        self._ops[spec.name] = spec

    def get(self, name: str) -> OpSpec:
        """The op `name`, or an `unknown_op` ProtocolError."""
        try:
            return self._ops[name]
        except KeyError:
            raise ProtocolError(ErrorCode.UNKNOWN_OP, f"there is no op {name[:80]!r}",
                                {"op": name[:80]}) from None

    def __iter__(self) -> Iterator[OpSpec]:
        return iter(sorted(self._ops.values(), key=lambda s: s.name))

    def __len__(self) -> int:
        return len(self._ops)
