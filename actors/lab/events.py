"""The lab's events, as frozen attrs values, and their JSON codec.

The durable ones are the lab's whole history in the event store: a lab was created, a
directive gene was added (with its lineage), an organism was born (a birth, a cross or
an import: its code, lineage, directive and genome) or a candidate was rejected (logged
with its reason, never inserted), an organism was proven (`render_ok`) or killed (with
the stored error), a vote was cast (with the ratings it produced, so a replay never
depends on the rating library's arithmetic). The transient ones are the seed's
in-memory records (`World.transient`): pairs dealt, strikes, benching, and the candidates
being validated off the lab's task. They are folded into the state and never stored, so
a restart forgets them.

Stored JSON is one object per event: `{"type": "born", ...fields}`.
"""

from __future__ import annotations

from typing import Any

import attrs
import cattrs

from actors.lab.directives import Directive
from actors.lab.genome import ShaderGenome
from actors.lab.panel_genome import PanelGenome
from actors.lab.ratings import Rating
from protocol.ops.lab import DEFAULT_BACKLOG


@attrs.frozen
class Created:
    """The lab exists, with the seed of its draws and the cap of its birth loop (unproven
    organisms per track; 0: no loop)."""

    seed: int
    backlog: int = DEFAULT_BACKLOG


@attrs.frozen
class DirectiveAdded:
    """A directive gene joined the lab (its parents are its lineage)."""

    directive: Directive
    t: int


@attrs.frozen
class Born:
    """An organism was admitted: it starts alive, unproven and unrated."""

    id: str
    track: str
    code: str
    title: str | None
    parents: tuple[str, ...]
    directive: str | None
    source: str  # daemon | owner | model | cross | import
    client: str  # the client key of a cross (a visitor's, or the owner's), else ""
    genome: ShaderGenome | PanelGenome | None
    prompt: str | None
    t: int


@attrs.frozen
class Rejected:
    """A candidate failed validation (or duplicated an organism): logged, never inserted.
    `code` is the head of the candidate's code (`births.MAX_REJECTED_CODE`); `id` is the
    candidate's, of its whole code (a record stored before it was kept has none: its
    code was whole)."""

    track: str
    code: str
    reason: str
    source: str
    client: str
    parents: tuple[str, ...]
    t: int
    id: str = ""


@attrs.frozen
class Proven:
    """A browser compiled and drew the organism: `render_ok` is set."""

    id: str
    surface: str  # owner | public
    client: str
    t: int


@attrs.frozen
class Killed:
    """The owner's compile gate failed: the organism is dead and keeps the error."""

    id: str
    error: str
    t: int


@attrs.frozen
class VoteCast:
    """One vote on a dealt pair, with the ratings it produced (organisms, and directives
    when the two were born of different directives)."""

    pair: str
    winner: str
    loser: str
    surface: str
    client: str
    t: int
    winner_rating: Rating
    loser_rating: Rating
    directive_ratings: tuple[tuple[str, Rating], ...] = ()


@attrs.frozen
class PairDealt:
    """In memory: a pair was dealt to a client (the owner's arena or a public judge)."""

    pair: str
    surface: str
    client: str
    left: str
    right: str
    canary: str | None
    t: int


@attrs.frozen
class Struck:
    """In memory: a judge's browser failed to draw a canary."""

    id: str
    client: str


@attrs.frozen
class Benched:
    """In memory: strikes from two distinct client keys; no longer dealt as a canary."""

    id: str


@attrs.frozen
class Validating:
    """In memory: candidate `id` is being validated off the lab's task (its outcome is a
    `Born` or a `Rejected`, or `Abandoned` when the validator itself failed)."""

    id: str
    track: str
    source: str
    client: str = ""  # the visitor's client key for a cross (its own lab.status shows it)


@attrs.frozen
class Abandoned:
    """In memory: the validation of candidate `id` failed (a bug, logged); nothing stored."""

    id: str


Event = (Created | DirectiveAdded | Born | Rejected | Proven | Killed | VoteCast | PairDealt
         | Struck | Benched | Validating | Abandoned)
TRANSIENT = (PairDealt, Struck, Benched, Validating, Abandoned)
_TYPES: dict[str, type] = {
    "created": Created, "directive_added": DirectiveAdded, "born": Born,
    "rejected": Rejected, "proven": Proven, "killed": Killed, "vote_cast": VoteCast,
    "pair_dealt": PairDealt, "struck": Struck, "benched": Benched,
    "validating": Validating, "abandoned": Abandoned,
}
_NAMES = {cls: name for name, cls in _TYPES.items()}
_GENOMES = {"ShaderGenome": ShaderGenome, "PanelGenome": PanelGenome}


def is_transient(event: Event) -> bool:
    """True for the in-memory records the seed never stores."""
    return isinstance(event, TRANSIENT)


def _converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    genome = ShaderGenome | PanelGenome | None

    def genome_out(g: ShaderGenome | PanelGenome | None) -> dict[str, Any] | None:
        return None if g is None else {"kind": type(g).__name__, **conv.unstructure(g)}

    def genome_in(data: dict[str, Any] | None, _: Any) -> ShaderGenome | PanelGenome | None:
        if data is None:
            return None
        fields = dict(data)
        return conv.structure(fields, _GENOMES[fields.pop("kind")])

    conv.register_unstructure_hook_func(lambda t: t == genome, genome_out)
    conv.register_structure_hook_func(lambda t: t == genome, genome_in)
    return conv


converter = _converter()


def encode(event: Event, _after: Any = None) -> dict[str, Any]:
    """The stored JSON object of an event."""
    return {"type": _NAMES[type(event)], **converter.unstructure(event)}


def decode(data: dict[str, Any]) -> Event:
    """The event of a stored JSON object (ValueError for an unknown type)."""
    fields = dict(data)
    kind = fields.pop("type")
    if kind not in _TYPES:
        raise ValueError(f"unknown lab event type {kind!r}")
    return converter.structure(fields, _TYPES[kind])
