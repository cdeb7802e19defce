"""A pure stand-in for the host in lab tests: runs the lab `World`'s table as the host
does (args through the strict converter, the op's minimum role, decide, fold, result),
keeps the stored events as the codec's JSON and the revision they make, and replays.

The two birth ops are the live actor's effects (the validator runs off its task); here
their two halves (`actors/lab/offers.py`) run back to back with `validate` in between,
so a reply is the outcome (`born` or `rejected`), never `validating`."""

from __future__ import annotations

import json
from typing import Any

from actors.lab.offers import OFFERS, decide_offer, decide_validated, offered
from actors.lab.rules import WORLD
from actors.lab.state import Lab
from actors.lab.validation import validate
from actors.lab.views import shown_birth
from actors.world import Caller, Ctx, Refusal
from protocol.convert import structure
from protocol.errors import ErrorCode
from protocol.roles import ROLES

OWNER = Caller("owner", "owner")
JUDGE = Caller("browser", "spectator")
SPECS = {spec.name: spec for spec in WORLD.ops}


class LabRun:
    """One lab driven through its table; `t` is the host's clock (ms)."""

    def __init__(self, name: str = "main", t: int = 1_000_000) -> None:
        self.state: Lab = WORLD.initial(name)
        self.name = name
        self.t = t
        self.rev = 0
        self.stored: list[str] = []  # the JSON of every stored event, in order
        self.transient = 0

    def __call__(self, op: str, caller: Caller = OWNER, **args: Any) -> Any:
        """The reply of one op: its result value, or the Refusal (nothing changed)."""
        spec = SPECS[op]
        if ROLES.index(caller.role) < ROLES.index(spec.role):
            return Refusal(ErrorCode.FORBIDDEN, f"{op} needs the {spec.role} role")
        value = structure(args, spec.args)
        if op in WORLD.reads:
            return WORLD.reads[op].answer(self.state, value, Ctx(caller, self.t, self.rev))
        if op in OFFERS:
            return self._offer(op, value, caller)
        move = WORLD.moves[op]
        ctx = Ctx(caller, self.t, self.rev, WORLD.seed(self.state), move.purpose)
        events = move.decide(self.state, value, ctx)
        if isinstance(events, Refusal):
            return events
        self._fold(events)
        return move.result(self.state, events, value)

    def _offer(self, op: str, value: Any, caller: Caller) -> Any:
        make, purpose = OFFERS[op]
        ctx = Ctx(caller, self.t, self.rev, WORLD.seed(self.state), purpose)
        candidate = make(self.state, value, ctx)
        if isinstance(candidate, Refusal):
            return candidate
        events = decide_offer(self.state, candidate, self.t)
        if isinstance(events, Refusal):
            return events
        self._fold(events)
        if offered(candidate, events).status == "validating":
            events = decide_validated(self.state, candidate,
                                      validate(candidate.track, candidate.code), self.t)
            self._fold(events)
        return shown_birth(self.state, offered(candidate, events), ctx, candidate.client)

    def _fold(self, events: list) -> None:
        for event in events:
            self.state = WORLD.evolve(self.state, event)
            if WORLD.transient(event):
                self.transient += 1
            else:
                self.stored.append(json.dumps(WORLD.codec.encode(event, self.state)))
                self.rev += 1

    def replay(self) -> Lab:
        """The state a restart rebuilds: the stored events folded from nothing."""
        state = WORLD.initial(self.name)
        for text in self.stored:
            state = WORLD.evolve(state, WORLD.codec.decode(json.loads(text)))
        return state


def born(run: LabRun, n: int, track: str = "shader") -> list[str]:
    """The ids of `n` grammar children of `track`, each born."""
    ids = []
    for _ in range(n):
        reply = run("lab.birth", track=track)
        assert reply.reason is None, reply
        ids.append(reply.id)
    return ids
