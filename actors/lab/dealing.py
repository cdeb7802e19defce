"""Which organisms each surface may show: the seed's surface table, as pure functions over
`Organism` records. The public surfaces publish the shader track only.

| surface          | requirement                                                         |
| ---------------- | ------------------------------------------------------------------- |
| owner's arena    | alive, no stored error; unproven organisms are dealt here            |
| breeding parents | proven preferred; the whole alive pool only when none is proven     |
| public pairs     | proven, no stored error, plus at most one canary                    |
| public gallery   | proven, no stored error, judged at least once                       |
| visitor cross    | both parents proven; the child is born unproven                     |
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

import attrs
import numpy as np

from actors.lab.organism import Organism, token_similarity
from actors.world import Refusal
from protocol.ops.lab import LabCode

PUBLIC_TRACK = "shader"
NEAREST_ON_LADDER = 5  # a canary's partner is drawn from this many nearest proven
TOKEN_NEAR = 0.9  # token-set Jaccard at or above which two sources are near copies


def public(o: Organism) -> bool:
    """What the public surfaces may show (a canary apart): a proven shader, no stored error."""
    return o.track == PUBLIC_TRACK and o.proven


def _pick_two(
    rng: np.random.Generator, first: Sequence[Organism], partners: Sequence[Organism]
) -> tuple[Organism, Organism] | None:
    if not first:
        return None
    a = first[int(rng.integers(len(first)))]
    others = [o for o in partners if o.id != a.id]
    if not others:
        return None
    return a, others[int(rng.integers(len(others)))]


def owner_pair(
    pool: Sequence[Organism], track: str, rng: np.random.Generator
) -> tuple[Organism, Organism] | None:
    """A pair for the owner's arena: alive with no stored error; an unproven one when any exists."""
    live = [o for o in pool if o.track == track and o.live]
    unproven = [o for o in live if not o.render_ok]
    return _pick_two(rng, unproven or live, live)


def breeding_parents(
    pool: Sequence[Organism], track: str, rng: np.random.Generator
) -> tuple[Organism, Organism] | None:
    """Two parents: from the proven when any is proven, else from the whole alive pool.

    With a single candidate it is paired with itself (the child is then a mutant of it).
    """
    proven = [o for o in pool if o.track == track and o.proven]
    candidates = proven or [o for o in pool if o.track == track and o.status == "alive"]
    if not candidates:
        return None
    picks = rng.choice(len(candidates), size=min(2, len(candidates)), replace=False)
    a = candidates[int(picks[0])]
    return a, candidates[int(picks[-1])]


@attrs.frozen
class PublicPair:
    """A public pair; `canary` names the unproven member when there is one."""

    left: Organism
    right: Organism
    canary: str | None = None


def canary_backlog(pool: Sequence[Organism], skipped: AbstractSet[str]) -> list[Organism]:
    """Unproven public-track organisms that may be dealt as canaries (a stored error keeps
    an organism out, and so does an id in `skipped`: benched by two clients' strikes, or
    struck by the client being dealt to)."""
    return [
        o for o in pool
        if o.track == PUBLIC_TRACK and o.live and not o.render_ok and o.id not in skipped
    ]


def public_pair(pool: Sequence[Organism], skipped: AbstractSet[str], rng: np.random.Generator
                ) -> PublicPair | None:
    """A public pair: two proven, or (when a backlog outside `skipped` exists) one canary
    and a proven partner.

    The partner is drawn from the proven nearest the canary on the ladder (conservative
    ordinal), preferring those that are not token-near copies of it.
    """
    proven = [o for o in pool if public(o)]
    backlog = canary_backlog(pool, skipped)
    if backlog and proven:
        canary = backlog[int(rng.integers(len(backlog)))]
        ladder = canary.rating.ordinal
        nearest = heapq.nsmallest(  # (as sorted(...)[:n], without sorting the pool)
            NEAREST_ON_LADDER, proven, key=lambda o: (abs(o.rating.ordinal - ladder), o.id))
        distinct = [o for o in nearest if token_similarity(o.code, canary.code) < TOKEN_NEAR]
        choices = distinct or nearest
        partner = choices[int(rng.integers(len(choices)))]
        left, right = (canary, partner) if rng.random() < 0.5 else (partner, canary)
        return PublicPair(left, right, canary.id)
    pair = _pick_two(rng, proven, proven)
    return PublicPair(*pair) if pair else None


def gallery(pool: Sequence[Organism]) -> list[Organism]:
    """The public gallery, best first: proven, no stored error, judged at least once."""
    shown = [o for o in pool if public(o) and o.judged >= 1]
    return sorted(shown, key=lambda o: (-o.rating.ordinal, o.id))


def cross_refusal(a: Organism, b: Organism) -> Refusal | None:
    """Why a visitor may not cross `a` and `b`, or None; the child is born unproven."""
    if not (a.proven and b.proven):
        unproven = [o.id for o in (a, b) if not o.proven]
        return Refusal(LabCode.PARENT_NOT_PROVEN, "both parents of a cross must be proven",
                       {"unproven": unproven})
    if a.track != PUBLIC_TRACK or b.track != PUBLIC_TRACK:
        return Refusal(LabCode.NOT_CROSSABLE, "visitors cross shaders only",
                       {"tracks": [a.track, b.track]})
    if a.genome is None or b.genome is None:
        return Refusal(LabCode.NOT_CROSSABLE,
                       "only organisms the grammar wrote carry the genes a cross needs",
                       {"without_genome": [o.id for o in (a, b) if o.genome is None]})
    return None
