"""A pure stand-in for the host in ecosystem tests: the world's table called as the host calls
it (role, strict args, decide, evolve, stored JSON, reply), and a run created on it
(tests/ecosystem/test_rules.py, test_snapshot.py, test_carrion.py)."""

from __future__ import annotations

import json
from typing import Any

from actors.ecosystem.rules import WORLD, advance
from actors.world import Caller, Ctx, Refusal
from protocol.convert import structure, unstructure
from protocol.errors import ErrorCode
from protocol.roles import role_at_least

OWNER, OTHER = "ada", "bob"
ANSWERS = {"world": "A quiet pond where algae bloom and snails graze",
           "threat": "A hungry pike stalks the snails", "reward": "Keep all three alive"}
SPECS = {spec.name: spec for spec in WORLD.ops}


class Table:
    """A pure stand-in for the host: role, strict args, decide, evolve, stored JSON, reply."""

    def __init__(self, name: str = "ecosystem:pond") -> None:
        self.state = WORLD.initial(name)
        self.stored: list[dict[str, Any]] = []

    def call(self, op: str, args: dict[str, Any], caller: str = OWNER, role: str = "agent"
             ) -> Any:
        spec = SPECS[op]
        if not role_at_least(role, spec.role):
            return Refusal(ErrorCode.FORBIDDEN, f"{op} needs the {spec.role} role")
        value = structure(args, spec.args)
        if op in WORLD.reads:
            ctx = Ctx(Caller(caller, role), 0, self.state.rev, WORLD.seed(self.state))
            out = WORLD.reads[op].answer(self.state, value, ctx)
            return out if isinstance(out, Refusal) else unstructure(out)
        move = WORLD.moves[op]
        ctx = Ctx(Caller(caller, role), 0, self.state.rev, WORLD.seed(self.state), move.purpose)
        events = move.decide(self.state, value, ctx)
        if isinstance(events, Refusal):
            return events
        self.fold(events)
        return unstructure(move.result(self.state, events, value))

    def fold(self, events: list[Any]) -> None:
        for event in events:
            self.state = WORLD.evolve(self.state, event)
            self.stored.append(json.loads(json.dumps(WORLD.codec.encode(event, self.state))))

    def tick(self) -> list[Any]:
        """What the generation timer will do: fold `advance`."""
        events = advance(self.state)
        self.fold(events)
        return events

    def run_to(self, generation: int) -> None:
        while self.state.generation < generation:
            assert self.tick()


def created(seed: int = 11, size: int = 16) -> Table:
    table = Table()
    info = table.call("ecosystem.create", {"answers": ANSWERS, "seed": seed, "size": size})
    assert info["generation"] == 0
    return table


def self_patch(species: str, value: str) -> dict[str, str]:
    return {"kind": "self", "species": species, "value": value}
