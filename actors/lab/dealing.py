"""Dealing rules: which organisms each surface may show, and the canary report rules.

Pure functions over `Organism` records; time is always a parameter. The public
surfaces publish the shader track only.

| surface          | requirement                                                         |
| ---------------- | ------------------------------------------------------------------- |
| owner's arena    | alive, no stored error; unproven organisms are dealt here            |
| breeding parents | proven preferred; the whole alive pool only when none is proven     |
| public pairs     | proven, no stored error, plus at most one canary                    |
| public gallery   | proven, no stored error, judged at least once                       |
| visitor cross    | both parents proven; the child is born unproven                     |
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence

import attrs
import numpy as np

from actors.lab.organism import Organism, token_similarity

PUBLIC_TRACK = "shader"
CANARY_WINDOW = 600.0  # seconds a dealt id stays reportable by its client
NEAREST_ON_LADDER = 5  # a canary's partner is drawn from this many nearest proven
TOKEN_NEAR = 0.9  # token-set Jaccard at or above which two sources are near copies
STRIKES_TO_BENCH = 2  # distinct client keys


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


def canary_backlog(pool: Sequence[Organism]) -> list[Organism]:
    """Unproven public-track organisms that may be dealt as canaries."""
    return [
        o for o in pool if o.track == PUBLIC_TRACK and o.live and not o.render_ok and not o.benched
    ]


def public_pair(pool: Sequence[Organism], rng: np.random.Generator) -> PublicPair | None:
    """A public pair: two proven, or (when a backlog exists) one canary and a proven partner.

    The partner is drawn from the proven nearest the canary on the ladder (conservative
    ordinal), preferring those that are not token-near copies of it.
    """
    proven = [o for o in pool if o.track == PUBLIC_TRACK and o.proven]
    backlog = canary_backlog(pool)
    if backlog and proven:
        canary = backlog[int(rng.integers(len(backlog)))]
        nearest = sorted(
            proven, key=lambda o: (abs(o.rating.ordinal - canary.rating.ordinal), o.id)
        )[:NEAREST_ON_LADDER]
        distinct = [o for o in nearest if token_similarity(o.code, canary.code) < TOKEN_NEAR]
        choices = distinct or nearest
        partner = choices[int(rng.integers(len(choices)))]
        left, right = (canary, partner) if rng.random() < 0.5 else (partner, canary)
        return PublicPair(left, right, canary.id)
    pair = _pick_two(rng, proven, proven)
    return PublicPair(*pair) if pair else None


def gallery(pool: Sequence[Organism]) -> list[Organism]:
    """The public gallery, best first: proven, no stored error, judged at least once."""
    shown = [o for o in pool if o.track == PUBLIC_TRACK and o.proven and o.judged >= 1]
    return sorted(shown, key=lambda o: (-o.rating.ordinal, o.id))


def cross_refusal(a: Organism, b: Organism) -> str | None:
    """Why a visitor may not cross `a` and `b`, or None; the child is born unproven."""
    if not (a.proven and b.proven):
        return "parent not proven"
    if a.track != b.track:
        return "parents on different tracks"
    return None


# --- canary reports ----------------------------------------------------------------------


class Verdict(enum.Enum):
    """What a canary render report did."""

    REFUSED = "refused"  # not dealt to this client within the window: does nothing
    NO_CHANGE = "no_change"  # accepted, but the organism is already proven or not alive
    PROVEN = "proven"  # the caller sets render_ok
    STRUCK = "struck"  # an in-memory strike, nothing more
    BENCHED = "benched"  # second distinct client's strike: the caller sets benched


@attrs.frozen
class CanaryBook:
    """In-memory record of dealt ids per client key and of negative reports (strikes)."""

    dealt: Mapping[tuple[str, str], float] = attrs.field(factory=dict)
    strikes: Mapping[str, frozenset[str]] = attrs.field(factory=dict)

    def deal(self, client: str, organism_ids: Sequence[str], now: float) -> CanaryBook:
        """The book after dealing `organism_ids` to `client` at `now`."""
        dealt = dict(self.dealt)
        dealt.update({(client, oid): now for oid in organism_ids})
        return attrs.evolve(self, dealt=dealt)

    def was_dealt(self, client: str, organism_id: str, now: float) -> bool:
        """True when `organism_id` was dealt to exactly `client` within the window."""
        at = self.dealt.get((client, organism_id))
        return at is not None and 0.0 <= now - at <= CANARY_WINDOW

    def accepts_vote(self, client: str, organism_id: str, now: float) -> bool:
        """A vote naming a canary counts when it comes from the client it was dealt to,
        whether or not the render report has arrived."""
        return self.was_dealt(client, organism_id, now)

    def report(
        self, client: str, organism: Organism, drew: bool, now: float
    ) -> tuple[CanaryBook, Verdict]:
        """Apply one render report; returns the new book and what the caller must persist."""
        if not self.was_dealt(client, organism.id, now):
            return self, Verdict.REFUSED
        if organism.render_ok or not organism.live:
            return self, Verdict.NO_CHANGE
        if drew:
            return self, Verdict.PROVEN
        clients = self.strikes.get(organism.id, frozenset()) | {client}
        book = attrs.evolve(self, strikes={**self.strikes, organism.id: clients})
        benched = len(clients) >= STRIKES_TO_BENCH and not organism.benched
        return book, Verdict.BENCHED if benched else Verdict.STRUCK

    def prune(self, now: float) -> CanaryBook:
        """The book without deals older than the window (strikes are kept)."""
        return attrs.evolve(
            self, dealt={k: t for k, t in self.dealt.items() if now - t <= CANARY_WINDOW}
        )
