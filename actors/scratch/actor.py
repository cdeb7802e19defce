"""The scratch world's actor: dispatch `scratch.add` / `scratch.get`, persist, publish."""

from __future__ import annotations

from typing import Any

from actors.runtime import Actor, Call
from actors.scratch import fold
from protocol.ops.scratch import Total

KIND = "scratch"


class ScratchActor(Actor):
    """One scratch world."""

    kind = KIND

    def reset(self) -> None:
        """A new world's state."""
        self.state = fold.setup()

    def apply(self, event: dict[str, Any]) -> None:
        """Fold one event."""
        self.state = fold.apply(self.state, event)

    def snapshot(self) -> dict[str, int]:
        """The whole state is two numbers."""
        return {"total": self.state.total, "adds": self.state.adds}

    def restore(self, data: dict[str, int]) -> None:
        """The state from `snapshot`."""
        self.state = fold.ScratchState(data["total"], data["adds"])

    def view(self) -> dict[str, int]:
        """What subscribers see: the total, the adds and the revision."""
        return {"total": self.state.total, "adds": self.state.adds, "revision": self.rev}

    async def handle(self, call: Call) -> Total:
        """`scratch.add` commits one event; `scratch.get` reads."""
        if call.op == "scratch.add":
            await self.commit(fold.decide_add(self.state, call.args))
        return Total(self.state.total, self.state.adds, self.rev)
