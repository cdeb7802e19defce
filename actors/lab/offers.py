"""The lab's two birth ops, `lab.birth` and `lab.cross`, as two pure halves around
`validate`, which the live actor runs off its task (its compile step is a subprocess):

1. the offer: `OFFERS[op]` makes the candidate from the state, the args and `ctx.rng`
   (or refuses), and `decide_offer` records that it waits for its validation
   (`Validating`, in memory), logs a duplicate of an organism as a rejection at once, or
   changes nothing for a candidate already being validated;
2. the outcome: `decide_validated` turns the validator's verdict into `Born` or a logged
   `Rejected` (a duplicate by then too).

The birth loop offers its candidates the same way (`actor.py`). `offered` is the reply
of either half; `lab.status` tells a caller the outcome later.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from actors.lab.births import (
    Candidate,
    backlog,
    birth_events,
    cross_candidate,
    grammar_candidate,
)
from actors.lab.dealing import cross_refusal
from actors.lab.events import Born, Event, Rejected, Validating
from actors.lab.organism import Organism, organism_id
from actors.lab.seeding import PURPOSES
from actors.lab.state import Lab
from actors.lab.views import shown_organism
from actors.world import Ctx, Refusal
from protocol.errors import ErrorCode
from protocol.ops import lab as ops
from protocol.ops.lab import LabCode
from protocol.roles import role_at_least

MAX_VALIDATING = 16  # candidates of one lab being validated at once
MAX_VISITORS_VALIDATING = 8  # ... of which visitor crosses (the owner and the loop keep room)
MAX_CROSS_BACKLOG = 16  # visitors' crosses waiting to be proven, validating ones included
# Visitors' children one lab takes in any hour, validating ones included: the pool keeps
# every organism for good (the seed culls none), and a canary is proven by any judge it
# is dealt to, so the backlog alone does not bound how fast visitors grow the pool. The
# server holds each visitor to its own hourly budget (`crosses_per_hour`); this holds
# them all together.
MAX_CROSSES_PER_HOUR = 60
HOUR_MS = 3_600_000


def client_refusal(key: str) -> Refusal | None:
    """A public op needs the client key the browser keeps."""
    if not key:
        return Refusal(ErrorCode.BAD_REQUEST, "client_key is empty", {"path": "args.client_key"})
    return None


def offer_rng(state: Lab, ctx: Ctx) -> np.random.Generator:
    """The draws of one offer: the move's generator spawned by the offers made so far (a
    candidate waiting for its validation stores nothing, so it does not move the revision
    `ctx.rng` is keyed on: two grammar births in a row are two different children)."""
    return np.random.default_rng(np.random.SeedSequence(
        int(ctx.rng.integers(2**63)), spawn_key=(state.offer_count,)))


def birth_candidate(state: Lab, args: ops.BirthArgs, ctx: Ctx) -> Candidate | Refusal:
    """The owner's candidate, or a grammar child of parents chosen by the seed's rule
    (proven preferred, the whole alive pool only when none is proven). A title and a
    directive belong to the owner's code: a grammar child answers no directive."""
    if not args.code:
        for name, given in (("title", args.title), ("directive", args.directive)):
            if given:
                return Refusal(ErrorCode.BAD_REQUEST, f"args.{name}: a birth without code is "
                               f"a grammar child, which takes no {name}",
                               {"path": f"args.{name}"})
    if args.directive:
        found = state.directives.get(args.directive)
        if found is None:
            return Refusal(LabCode.UNKNOWN_DIRECTIVE, "there is no such directive in this lab",
                           {"id": args.directive})
        if found.track != args.track:
            return Refusal(LabCode.BAD_DIRECTIVE, f"args.directive: that directive is the "
                           f"{found.track} track's, not the {args.track} track's",
                           {"path": "args.directive", "id": found.id, "track": found.track})
    if args.code:
        return Candidate(args.track, args.code, args.title or None,
                         directive=args.directive or None, source="owner")
    return grammar_candidate(list(state.organisms.values()), args.track,
                             offer_rng(state, ctx), source="owner")


def visitor_candidate(state: Lab, args: ops.CrossArgs, ctx: Ctx) -> Candidate | Refusal:
    """A visitor's child of two proven shaders the grammar wrote (born unproven);
    `overloaded` while MAX_CROSS_BACKLOG crosses wait to be proven, or past
    MAX_CROSSES_PER_HOUR. A parent the caller may not see (below the owner: not a proven
    shader) is `unknown_organism`, as a lab.status of it would be. The owner's cross is
    the owner's birth (`source` owner): those caps bound what visitors make the lab keep,
    so it neither counts toward them nor is refused by them."""
    refused = client_refusal(args.client_key)
    if refused:
        return refused
    a, b = shown_organism(state, args.a, ctx), shown_organism(state, args.b, ctx)
    for found in (a, b):
        if isinstance(found, Refusal):
            return found
    refused = cross_refusal(a, b)
    if refused:
        return refused
    if role_at_least(ctx.caller.role, "owner"):
        return cross_candidate(a, b, args.client_key, offer_rng(state, ctx), source="owner")
    pool = list(state.organisms.values())
    validating = sum(v.source == "cross" for v in state.validating.values())
    waiting = backlog(pool, a.track, "cross") + validating
    if waiting >= MAX_CROSS_BACKLOG:  # each child is kept until the arena judges it
        return Refusal(ErrorCode.OVERLOADED, f"{waiting} visitors' crosses of this lab wait "
                       "to be proven; try again once the owner's arena has judged some",
                       {"crosses": waiting, "limit": MAX_CROSS_BACKLOG})
    return (_hourly_refusal(pool, validating, ctx.t)
            or cross_candidate(a, b, args.client_key, offer_rng(state, ctx)))


def _hourly_refusal(pool: Sequence[Organism], validating: int, t: int) -> Refusal | None:
    """`overloaded` while MAX_CROSSES_PER_HOUR visitors' children were born (or are being
    validated) in the hour before `t`; `retry_after` says when the oldest leaves it."""
    lately = [o.born for o in pool if o.source == "cross" and 0 <= t - o.born < HOUR_MS]
    if len(lately) + validating < MAX_CROSSES_PER_HOUR:
        return None
    wait = (min(lately) + HOUR_MS - t) / 1000 if lately else 60.0
    return Refusal(ErrorCode.OVERLOADED, f"{MAX_CROSSES_PER_HOUR} visitors' crosses were "
                   "born in this lab in the last hour; try again later",
                   {"crosses_last_hour": len(lately) + validating,
                    "limit": MAX_CROSSES_PER_HOUR, "retry_after": round(wait, 3)})


Offer = Callable[[Lab, object, Ctx], Candidate | Refusal]
# op -> (its candidate, the purpose of its ctx.rng)
OFFERS: dict[str, tuple[Offer, int]] = {
    "lab.birth": (birth_candidate, PURPOSES["birth"]),
    "lab.cross": (visitor_candidate, PURPOSES["crossover"]),
}


def decide_offer(state: Lab, candidate: Candidate, t: int) -> list[Event] | Refusal:
    """The first half: the candidate waits for its validation, is a duplicate of an
    organism (logged as a rejection now), or is being validated already (no event).
    `overloaded` while too many candidates wait."""
    oid = organism_id(candidate.track, candidate.code)
    if oid in state.validating:
        return []
    if oid in state.organisms:
        return birth_events(state.organisms, candidate, None, t)
    waiting = len(state.validating)
    visitors = sum(v.source == "cross" for v in state.validating.values())
    if waiting >= MAX_VALIDATING or (candidate.source == "cross"
                                     and visitors >= MAX_VISITORS_VALIDATING):
        return Refusal(ErrorCode.OVERLOADED, "too many candidates of this lab are being "
                       "validated; try again shortly", {"validating": waiting})
    return [Validating(oid, candidate.track, candidate.source, candidate.client)]


def decide_validated(state: Lab, candidate: Candidate, reason: str | None, t: int
                     ) -> list[Event]:
    """The second half: born, or (with a reason, or as a duplicate by now) logged as a
    rejection and never inserted."""
    return birth_events(state.organisms, candidate, reason, t)


def offered(candidate: Candidate, events: Sequence[Event]) -> ops.Birth:
    """Where a candidate stands after the events of either half."""
    oid = organism_id(candidate.track, candidate.code)
    for event in events:
        if isinstance(event, Rejected):
            return ops.Birth(oid, "rejected", event.reason)
        if isinstance(event, Born):
            return ops.Birth(oid, "born")
    return ops.Birth(oid, "validating")
