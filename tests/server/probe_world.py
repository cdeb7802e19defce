"""The runtime tests' probe counter as a protocol world (its ops in a registry beside every
world's), for the server's tests over real sockets: a handler that raises, a result that
cannot be written as JSON (tests/server/test_ws_crash.py, test_ws_lifecycle.py)."""

from __future__ import annotations

from typing import Any

import attrs

from actors.runtime import ActorKind, Call
from protocol.registry import OpSpec, Registry
from server import worlds
from tests.runtime.probe import Add, Crash, Create, ProbeActor


@attrs.frozen
class Empty:
    """No arguments."""


@attrs.frozen
class Figures:
    """The counter's total and revision."""

    total: int
    rev: int


@attrs.frozen
class Odd:
    """Ask for a result that cannot be written as JSON (a server bug, on purpose)."""


class ProbeWorld(ProbeActor):
    """The runtime tests' counter, answering with Figures so it can be a protocol world."""

    async def handle(self, call: Call | Any) -> Any:
        if isinstance(call, Call) and isinstance(call.args, Empty):
            return Figures(self.total, self.rev)
        if isinstance(call, Call) and isinstance(call.args, Odd):
            return Figures(object(), self.rev)  # type: ignore[arg-type]
        await super().handle(call)
        return Figures(self.total, self.rev)


def probe_registry() -> Registry:
    registry = Registry(worlds.registry())
    registry.add(OpSpec("probe.create", Create, Figures, "agent", "Create."))
    registry.add(OpSpec("probe.add", Add, Figures, "agent", "Add."))
    registry.add(OpSpec("probe.crash", Crash, Figures, "agent", "Raise in the handler."))
    registry.add(OpSpec("probe.get", Empty, Figures, "spectator", "Read."))
    registry.add(OpSpec("probe.odd", Odd, Figures, "spectator", "Answer with a bug."))
    return registry


KINDS = [*worlds.kinds(), ActorKind("probe", ProbeWorld, create_role="agent",
                                    create_op="probe.create", create_args=Create)]
