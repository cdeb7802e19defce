"""Prompt evolution: aesthetic directives are genes with a rating and a lineage.

Only the directive evolves; the contract is a constant. `mutate(winner, loser)` and
`explore(pool)` write new directives, either through a model (`writer`, any function
from prompt text to reply text, such as `ModelBreeder.complete`) or, without one, by a
seeded recombination of phrases from an aesthetic lexicon. Either way the result must
pass `directive_reason`, which refuses a directive that talks about the technical
contract: that is the contract's job, and the validator never reads directives anyway.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from actors.lab.ratings import Rating
from protocol.text import utf16_len

MIN_DIRECTIVE_CHARS = 20
MAX_DIRECTIVE_CHARS = 600

# Words that belong to the technical contract, never to an aesthetic directive.
_TECHNICAL = re.compile(
    r"\bu_\w+|\bfragColor\b|\bgl_\w+|#\s*\w+|<\s*/?\s*[a-z]+|@import|\burl\s*\(|"
    r"\b(?:uniforms?|glsl|shader code|main\s*\(|highp|mediump|lowp|samplers?|texture\s*\(|"
    r"textures? (?:lookups?|sampling|samplers?)|(?:for|while|infinite|unbounded|nested)[- ]loops?|"
    r"loop (?:bounds?|counts?)|compil\w+|webgl|javascript|scripts? tags?|html|css|stylesheets?|"
    r"selectors?|https?|network|fetch\w*|font-face|web ?fonts?|external (?:fonts?|images?)|"
    r"iframes?|sandbox|contract|clauses?|validat\w*|fenced|code blocks?|TITLE:|"
    r"\d+\s*(?:lines|characters|chars)|ignore (?:all|any|the|previous)\b)",
    re.IGNORECASE,
)

# The model-free operators draw whole phrases from these axes.
LEXICON: dict[str, tuple[str, ...]] = {
    "mood": (
        "Calm and meditative",
        "Restless and electric",
        "Eerie and quiet",
        "Joyful and bright",
        "Solemn and heavy",
        "Dreamlike and drifting",
    ),
    "palette": (
        "in deep teals and bruised purples",
        "in warm ambers and rust",
        "in pale pastels on near-black",
        "in acid greens against ink",
        "in monochrome silver",
        "in sunset oranges and magentas",
    ),
    "form": (
        "built from soft cellular blobs",
        "built from crisp geometric tiles",
        "built from thin flowing filaments",
        "built from concentric ripples",
        "built from shattered mirror shards",
        "built from layered paper-like bands",
    ),
    "motion": (
        "that breathe slowly",
        "that swirl like smoke",
        "that crawl like living tissue",
        "that orbit a hidden centre",
        "that ebb like tides",
        "that unfold and refold",
    ),
    "composition": (
        "with a strong central focus.",
        "with generous empty space.",
        "with dense, even texture edge to edge.",
        "with a bold diagonal flow.",
        "with mirrored symmetry.",
        "with one small surprising accent.",
    ),
}
_AXES = tuple(LEXICON)
_PHRASE_AXIS = {p: axis for axis, phrases in LEXICON.items() for p in phrases}


@attrs.frozen
class Directive:
    """An aesthetic directive: the prompt gene a birth is judged on."""

    id: str
    track: str
    text: str
    parents: tuple[str, ...] = ()
    origin: str = "seed"  # "seed" | "mutate" | "explore"
    rating: Rating = attrs.field(factory=Rating)


@attrs.frozen
class Rejected:
    """A proposed directive that failed `directive_reason`."""

    text: str
    reason: str


def directive_id(track: str, text: str) -> str:
    """Content-derived id: the same text on a track is the same directive."""
    return f"d{track[0]}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def directive_reason(text: str) -> str | None:
    """Why `text` may not be a directive, or None: length bounds and aesthetics only."""
    stripped = text.strip()
    if utf16_len(stripped) < MIN_DIRECTIVE_CHARS:
        return "directive too short"
    if utf16_len(stripped) > MAX_DIRECTIVE_CHARS:
        return "directive too long"
    m = _TECHNICAL.search(stripped)
    if m:
        return f"directive talks about the technical contract: {m.group(0)!r}"
    return None


def _phrases(text: str) -> dict[str, str]:
    """The lexicon phrases present in `text`, by axis."""
    return {axis: p for p, axis in _PHRASE_AXIS.items() if p in text}


def _compose(chosen: dict[str, str]) -> str:
    return " ".join(chosen[a] for a in _AXES)


def _make(track: str, text: str, parents: tuple[str, ...], origin: str) -> Directive | Rejected:
    text = " ".join(text.strip().strip('"').split())
    reason = directive_reason(text)
    if reason:
        return Rejected(text, reason)
    return Directive(directive_id(track, text), track, text, parents, origin)


def mutation_prompt(winner: Directive, loser: Directive) -> str:
    """The prompt asking a model to push the winner further away from the loser."""
    return (
        "Two aesthetic directives for generated abstract artworks were judged against each "
        "other.\n"
        f"WINNER: {winner.text}\nLOSER: {loser.text}\n"
        "Write one new directive that keeps what made the winner better and moves further "
        "from the loser. Talk about aesthetics only: mood, colour, form, motion, composition. "
        "Never mention code, technical limits or how it is built. Reply with the directive "
        f"alone, under {MAX_DIRECTIVE_CHARS} characters."
    )


def exploration_prompt(pool: Sequence[Directive]) -> str:
    """The prompt asking a model for a directive unlike any in the pool."""
    listed = "\n".join(f"- {d.text}" for d in pool)
    return (
        "These aesthetic directives already exist for generated abstract artworks:\n"
        f"{listed}\n"
        "Write one new directive that explores territory none of them occupies. Talk about "
        "aesthetics only: mood, colour, form, motion, composition. Never mention code, "
        "technical limits or how it is built. Reply with the directive alone, under "
        f"{MAX_DIRECTIVE_CHARS} characters."
    )


def mutate(
    winner: Directive,
    loser: Directive,
    rng: np.random.Generator,
    writer: Callable[[str], str] | None = None,
) -> Directive | Rejected:
    """A child directive of `winner`, moved away from `loser`.

    Without a writer: keep the winner's phrases, redraw one axis (an axis the loser
    shares, when there is one, since sharing it did not win) from the lexicon.
    """
    parents = (winner.id, loser.id)
    if writer is not None:
        return _make(winner.track, writer(mutation_prompt(winner, loser)), parents, "mutate")
    mine, theirs = _phrases(winner.text), _phrases(loser.text)
    chosen = {a: mine.get(a) or LEXICON[a][int(rng.integers(len(LEXICON[a])))] for a in _AXES}
    shared = [a for a in _AXES if mine.get(a) and mine.get(a) == theirs.get(a)]
    axes = shared or list(_AXES)
    axis = axes[int(rng.integers(len(axes)))]
    fresh = [p for p in LEXICON[axis] if p not in (chosen[axis], theirs.get(axis))]
    chosen[axis] = fresh[int(rng.integers(len(fresh)))]
    return _make(winner.track, _compose(chosen), parents, "mutate")


def explore(
    pool: Sequence[Directive],
    track: str,
    rng: np.random.Generator,
    writer: Callable[[str], str] | None = None,
) -> Directive | Rejected:
    """A directive for unoccupied territory.

    Without a writer: on every axis, one of the phrases the pool uses least.
    """
    if writer is not None:
        return _make(track, writer(exploration_prompt(pool)), (), "explore")
    used = Counter(p for d in pool for p in _phrases(d.text).values())
    chosen = {}
    for axis in _AXES:
        least = min(used[p] for p in LEXICON[axis])
        rare = [p for p in LEXICON[axis] if used[p] == least]
        chosen[axis] = rare[int(rng.integers(len(rare)))]
    return _make(track, _compose(chosen), (), "explore")


def seed_directive(track: str, rng: np.random.Generator) -> Directive:
    """A first directive drawn from the lexicon (always passes the aesthetics check)."""
    # the lexicon is aesthetic by construction (tests check every phrase passes)
    text = _compose({a: LEXICON[a][int(rng.integers(len(LEXICON[a])))] for a in _AXES})
    return Directive(directive_id(track, text), track, text, (), "seed")
