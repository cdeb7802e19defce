"""The lab's state: the pool and the directives as a fold of the lab's events, plus the
seed's in-memory records (dealt pairs, strikes, benching) folded from transient events.

`evolve(state, event)` is the whole fold; `initial(name)` is a lab before its first
event. The durable part (`pool`: organisms, directives, the counts, the birth loop's cap
and the reasons of recent rejections) is what a replay of the stored events rebuilds; the
in-memory part (deals, strikes, benching, candidates being validated) starts empty after
a restart.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import attrs

from actors.lab.directives import Directive
from actors.lab.events import (
    Abandoned,
    Benched,
    Born,
    Created,
    DirectiveAdded,
    Event,
    Killed,
    PairDealt,
    Proven,
    Rejected,
    Struck,
    Validating,
    VoteCast,
    converter,
)
from actors.lab.organism import Organism, organism_id
from actors.lab.window import Window
from protocol.ops.lab import DEFAULT_BACKLOG

CANARY_WINDOW_MS = 600_000  # a dealt id stays reportable (and a pair votable) this long
# Pairs one window generation holds (two generations: at most twice as many, ~400 B each
# with their dealt ids; the dealt ids' window holds the two ids of as many public deals).
# A judge takes seconds a pair (each is drawn 300 ms before its vote), so 50,000 in ten
# minutes serve some 250 judges at full pace; past that the window shortens (at 440 deals
# a second an entry still lives 110 s, longer than any vote takes) instead of growing,
# and the server holds each client to `deals_per_hour` (server/budgets.py).
MAX_DEALS = 50_000
MAX_REJECTIONS = 4_096  # rejection reasons kept by candidate id (for `lab.status`)


@attrs.frozen
class Deal:
    """A dealt pair, in memory: to whom, on which surface, when, and its canary."""

    pair: str
    surface: str  # owner | public
    client: str
    left: str
    right: str
    canary: str | None
    t: int


@attrs.frozen
class Lab:
    """One lab. Mappings are never mutated: every event makes new ones."""

    name: str
    seed: int
    created: bool = False
    organisms: Mapping[str, Organism] = attrs.field(factory=dict)  # in birth order
    directives: Mapping[str, Directive] = attrs.field(factory=dict)  # in order added
    rejected: int = 0
    votes: int = 0
    backlog: int = DEFAULT_BACKLOG  # the birth loop's cap per track (0: no loop)
    # candidate id -> (reason, the visitor's client key for a cross, else "")
    rejections: Mapping[str, tuple[str, str]] = attrs.field(factory=dict)
    # the seed's in-memory records (transient events only)
    deals: Window = attrs.field(factory=lambda: Window(CANARY_WINDOW_MS, MAX_DEALS))
    # (client, id) -> when a public pair dealt it to that client
    dealt: Window = attrs.field(factory=lambda: Window(CANARY_WINDOW_MS, 2 * MAX_DEALS))
    strikes: Mapping[str, frozenset[str]] = attrs.field(factory=dict)
    benched: frozenset[str] = frozenset()
    deal_count: int = 0
    validating: Mapping[str, Validating] = attrs.field(factory=dict)  # by candidate id
    offer_count: int = 0  # candidates offered (spawns the draws of births at one revision)

    def pool(self) -> dict[str, Any]:
        """The durable part of the state (what a replay of stored events rebuilds)."""
        return {"seed": self.seed, "created": self.created, "organisms": dict(self.organisms),
                "directives": dict(self.directives), "rejected": self.rejected,
                "votes": self.votes, "backlog": self.backlog,
                "rejections": dict(self.rejections)}


def name_seed(name: str) -> int:
    """The seed of a lab created without one: derived from its name."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:6], "big")


def initial(name: str) -> Lab:
    """A lab before its first event."""
    return Lab(name, name_seed(name))


def _organism(state: Lab, oid: str, **changes: Any) -> Lab:
    organisms = dict(state.organisms)
    organisms[oid] = attrs.evolve(organisms[oid], **changes)
    return attrs.evolve(state, organisms=organisms)


def _validated(state: Lab, oid: str) -> Mapping[str, Validating]:
    if oid not in state.validating:
        return state.validating
    return {k: v for k, v in state.validating.items() if k != oid}


def evolve(state: Lab, event: Event) -> Lab:
    """The state after one event (a decided event never fails to fold)."""
    if isinstance(event, Born):
        organisms = dict(state.organisms)
        organisms[event.id] = Organism(
            event.id, event.track, event.code, event.title, event.parents, event.directive,
            event.source, event.genome, event.t, client=event.client)
        return attrs.evolve(state, organisms=organisms,
                            validating=_validated(state, event.id))
    if isinstance(event, Proven):
        return _organism(state, event.id, render_ok=True,
                         public_proof=event.t if event.surface == "public" else None)
    if isinstance(event, Killed):
        return _organism(state, event.id, status="dead", error=event.error)
    if isinstance(event, VoteCast):
        return _vote(state, event)
    if isinstance(event, PairDealt):
        return _deal(state, event)
    if isinstance(event, Struck):
        strikes = dict(state.strikes)
        strikes[event.id] = strikes.get(event.id, frozenset()) | {event.client}
        return attrs.evolve(state, strikes=strikes)
    if isinstance(event, Benched):
        return attrs.evolve(state, benched=state.benched | {event.id})
    if isinstance(event, Rejected):
        return _rejected(state, event)
    if isinstance(event, Validating):
        return attrs.evolve(state, validating={**state.validating, event.id: event},
                            offer_count=state.offer_count + 1)
    if isinstance(event, Abandoned):
        return attrs.evolve(state, validating=_validated(state, event.id))
    if isinstance(event, DirectiveAdded):
        return attrs.evolve(state, directives={**state.directives,
                                               event.directive.id: event.directive})
    assert isinstance(event, Created)
    return attrs.evolve(state, created=True, seed=event.seed, backlog=event.backlog)


def _rejected(state: Lab, event: Rejected) -> Lab:
    """Count a rejection and keep its reason by the candidate's id (the newest few)."""
    oid = event.id or organism_id(event.track, event.code)
    rejections = {k: v for k, v in state.rejections.items() if k != oid}
    rejections[oid] = (event.reason, event.client)
    if len(rejections) > MAX_REJECTIONS:
        rejections = dict(list(rejections.items())[-MAX_REJECTIONS:])
    return attrs.evolve(state, rejected=state.rejected + 1, rejections=rejections,
                        validating=_validated(state, oid))


def _vote(state: Lab, event: VoteCast) -> Lab:
    organisms = dict(state.organisms)
    for oid, rating in ((event.winner, event.winner_rating), (event.loser, event.loser_rating)):
        o = organisms[oid]
        organisms[oid] = attrs.evolve(o, rating=rating, judged=o.judged + 1)
    directives = dict(state.directives)
    for did, rating in event.directive_ratings:
        directives[did] = attrs.evolve(directives[did], rating=rating)
    return attrs.evolve(state, organisms=organisms, directives=directives,
                        deals=state.deals.remove(event.pair),  # one vote per pair
                        votes=state.votes + 1)


def _deal(state: Lab, event: PairDealt) -> Lab:
    """Record a dealt pair and, for a public pair, its ids (a Window forgets them after the
    ten minutes)."""
    deals = state.deals.put(event.pair, Deal(event.pair, event.surface, event.client,
                                             event.left, event.right, event.canary, event.t),
                            event.t)
    dealt = state.dealt
    # Only a public deal makes its ids reportable: the arena's verdicts are lab.ok and
    # lab.invalid, and a visitor's client key may spell the arena's `owner:NAME`.
    for oid in (event.left, event.right) if event.surface == "public" else ():
        dealt = dealt.put((event.client, oid), event.t, event.t)
    return attrs.evolve(state, deals=deals, dealt=dealt, deal_count=state.deal_count + 1)


def dump(state: Lab) -> dict[str, Any]:
    """The durable part of a state as a JSON snapshot (the in-memory records stay out)."""
    return {
        "name": state.name, "seed": state.seed, "created": state.created,
        "rejected": state.rejected, "votes": state.votes, "backlog": state.backlog,
        "organisms": [converter.unstructure(o, Organism) for o in state.organisms.values()],
        "directives": [converter.unstructure(d) for d in state.directives.values()],
        "rejections": [[k, *v] for k, v in state.rejections.items()],
    }


def load(data: dict[str, Any]) -> Lab:
    """A state from `dump`'s snapshot."""
    organisms = [converter.structure(o, Organism) for o in data["organisms"]]
    directives = [converter.structure(d, Directive) for d in data["directives"]]
    return Lab(data["name"], data["seed"], data["created"],
               {o.id: o for o in organisms}, {d.id: d for d in directives},
               data["rejected"], data["votes"], data["backlog"],
               # a snapshot taken before rejections kept their client has pairs
               {r[0]: (r[1], r[2] if len(r) > 2 else "") for r in data["rejections"]})
