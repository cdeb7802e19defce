"""Births, pure: the candidates the birth loop, the owner and a visitor cross offer, and
the events a candidate becomes once validated.

Every candidate goes through `validate` before `birth_events` sees it (the caller runs
it: the compile step is a subprocess, which the live actor will run off its task); a
candidate with a reason, or one whose code is already an organism, is logged as a
rejection and never inserted. The birth loop calls, in order: `backlogs` (it breeds while
the unproven backlog, with the canaries judges proved lately, is under its cap),
`grammar_candidate` or, with a model, `birth_directive` then `ModelBreeder.breed`, then
`validate` and `birth_events`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import attrs
import numpy as np

from actors.lab.breed import Genome, child, random_for, render
from actors.lab.dealing import breeding_parents
from actors.lab.directives import Directive
from actors.lab.events import Born, Rejected
from actors.lab.organism import Organism, organism_id
from protocol.jsontext import escape_lone_surrogates

MAX_REJECTED_CODE = 4_000  # characters of a rejected candidate's code kept with its reason
MAX_REJECTED_REASON = 500  # characters of its reason
PROOF_HOLD_MS = 3_600_000  # a judge's proof holds its place in the loop's backlog this long


@attrs.frozen
class Candidate:
    """Code offered for the pool, with what its birth would record."""

    track: str
    code: str
    title: str | None = None
    parents: tuple[str, ...] = ()
    directive: str | None = None
    genome: Genome | None = None
    prompt: str | None = None
    source: str = "daemon"
    client: str = ""


def grammar_candidate(pool: Sequence[Organism], track: str, rng: np.random.Generator,
                      source: str = "daemon") -> Candidate:
    """A model-free child of two parents chosen by the seed's rule (proven preferred, the
    whole alive pool only when none is proven). A parent the grammar did not write (no
    genome) lends a fresh random genome instead; an empty pool gets a first organism."""
    parents = breeding_parents(pool, track, rng)
    if parents is None:
        genome = random_for(track, rng)
        return Candidate(track, render(genome), genome=genome, source=source)
    a, b = parents
    genome = child(a.genome or random_for(track, rng), b.genome or random_for(track, rng), rng)
    return Candidate(track, render(genome), parents=tuple(dict.fromkeys((a.id, b.id))),
                     genome=genome, source=source)


def cross_candidate(a: Organism, b: Organism, client: str, rng: np.random.Generator,
                    source: str = "cross") -> Candidate:
    """A child of two crossable parents (see `dealing.cross_refusal`): a visitor's, or
    with `source` owner the owner's."""
    genome = child(a.genome, b.genome, rng)
    return Candidate(a.track, render(genome), parents=(a.id, b.id), genome=genome,
                     source=source, client=client)


def birth_events(organisms: Mapping[str, Organism], candidate: Candidate, reason: str | None,
                 t: int) -> list[Born | Rejected]:
    """The events of a validated candidate: born, or (with a reason, or as a duplicate of
    an organism's code) logged as a rejection."""
    c = candidate
    if reason is None:
        oid = organism_id(c.track, c.code)
        if oid not in organisms:
            return [Born(oid, c.track, c.code, c.title, c.parents, c.directive, c.source,
                         c.client, c.genome, c.prompt, t)]
        reason = f"duplicate of {oid}"
    return [rejection(c.track, c.code, reason, c.source, c.client, c.parents, t)]


def rejection(track: str, code: str, reason: str, source: str, client: str,
              parents: tuple[str, ...], t: int) -> Rejected:
    """The logged rejection of a candidate: what the seed asks of it (its track, its
    reason, who offered it) and its id, with only the head of its code (a model's reply
    may be 1 MiB, and a model answering junk is rejected again and again), as text: a
    lone surrogate (refused: not text) is kept as its escape. A reason is a short line
    (the seed's, or the compiler's first error), but may quote the reply (a fence's
    language): it is bounded too."""
    text = escape_lone_surrogates(code)  # (the id of a candidate is of text as well)
    return Rejected(track, text[:MAX_REJECTED_CODE],
                    escape_lone_surrogates(reason)[:MAX_REJECTED_REASON], source, client,
                    parents, t, organism_id(track, text))


def backlog(pool: Sequence[Organism], track: str, source: str | None = None) -> int:
    """Live unproven organisms of a track (the birth loop breeds while this is under its
    cap), or only those `source` bore."""
    return sum(1 for o in pool if o.track == track and _waits(o) and source in (None, o.source))


def backlogs(pool: Iterable[Organism], t: int) -> Counter[str]:
    """The birth loop's backlog of every track at `t`, in one pass: `backlog`, and the
    organisms a judge's report proved in the last PROOF_HOLD_MS. Any judge a canary is
    dealt to may prove it, so without the hold a visitor proving canaries would have the
    loop breed (and a model answer, at the owner's cost) as fast as it reports; with it
    judges prove at most the cap an hour. The owner's proofs refill it at once."""
    return Counter(o.track for o in pool if _waits(o) or (
        o.live and o.public_proof is not None and 0 <= t - o.public_proof < PROOF_HOLD_MS))


def _waits(o: Organism) -> bool:
    """Live and not proven: in the backlog."""
    return o.live and not o.render_ok


def birth_directive(directives: Sequence[Directive], track: str, rng: np.random.Generator
                    ) -> Directive | None:
    """The directive a model birth answers: any of the track's, uniformly."""
    mine = [d for d in directives if d.track == track]
    return mine[int(rng.integers(len(mine)))] if mine else None
