"""The field's events: frozen attrs values the referee decides and the fold applies.

Every change to a field is one of these, stored in the event store and pushed to
spectators as JSON (`event_to_json` / `event_from_json`, a strict round trip:
unknown keys and unknown kinds raise). An event records a decision; the fold
applies it without deciding anything again. Time `t` is milliseconds since the
epoch, supplied by the caller (domain code reads no clock).
"""

from __future__ import annotations

from typing import Literal

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from actors.field.geometry import Manifest, TileShape

GuessPolicy = Literal["accept", "reject"]
CellClass = Literal["forced", "guess"]
RejectReason = Literal["wrong", "guess"]  # guess: correct but unforced, policy reject
MAX_DEPTH = 2  # bifurcation nests: each level multiplies the referee's work per commit


@attrs.frozen
class GameRules:
    """How a field is refereed: the guess policy, the propagation depth and fog."""

    guess: GuessPolicy = attrs.field(default="accept",
                                     validator=attrs.validators.in_(("accept", "reject")))
    depth: int = attrs.field(default=0, validator=[attrs.validators.instance_of(int),
                                                   attrs.validators.in_(range(MAX_DEPTH + 1))])
    fog: bool = False


@attrs.frozen
class Accepted:
    """A correct committed cell: `cls` forced (with the rules that fixed it) or guess."""

    id: int
    v: int
    cls: CellClass
    rules: tuple[str, ...] = ()


@attrs.frozen
class Rejected:
    """A refused committed cell: `wrong` (v is not the solution) or `guess` (correct but
    not forced, on a field that rejects guesses)."""

    id: int
    reason: RejectReason
    v: int


@attrs.frozen
class Ignored:
    """A cell the referee passed over, with why (known, hole, duplicate, not_revealed, ...)."""

    id: int
    reason: str


@attrs.frozen
class Solved:
    """A tile that became fully known, attributed to `agent`, earning `reward` (its cell count)."""

    tile: int
    agent: str
    reward: int


@attrs.frozen
class Meet:
    """`agent` solved `tile`, which touches `other_tile` solved by `other`'s group: they merge."""

    agent: str
    other: str
    tile: int
    other_tile: int


@attrs.frozen
class ManifestEvent:
    """The field exists: its manifest and rules (revision 1 of every game)."""

    rev: int
    t: int
    manifest: Manifest
    rules: GameRules


@attrs.frozen
class JoinEvent:
    """An agent joined and was seated on `seed_tile`."""

    rev: int
    t: int
    agent: str
    name: str
    model: str
    user: str
    harness: str
    seed_tile: int
    machine: str = ""  # a digest of the joiner's machine id ("" without one)


@attrs.frozen
class RevealEvent:
    """`agent` revealed `tile`: its givens not yet known become known."""

    rev: int
    t: int
    agent: str
    tile: int
    givens: tuple[tuple[int, int], ...]
    step: tuple[str, ...]  # which strategy criteria this reveal met (see analysis.py)
    solved: tuple[Solved, ...] = ()
    meets: tuple[Meet, ...] = ()
    intent: str = ""  # the agent's one line, shown verbatim to spectators


@attrs.frozen
class CommitEvent:
    """A batch the referee judged; only `accepted` cells become known."""

    rev: int
    t: int
    agent: str
    intent: str
    accepted: tuple[Accepted, ...]
    rejected: tuple[Rejected, ...] = ()
    ignored: tuple[Ignored, ...] = ()
    solved: tuple[Solved, ...] = ()
    meets: tuple[Meet, ...] = ()
    dt_ms: int | None = None  # since the agent's previous commit


@attrs.frozen
class RetractEvent:
    """`agent` took back its own accepted cells on unsolved tiles."""

    rev: int
    t: int
    agent: str
    retracted: tuple[int, ...]
    ignored: tuple[Ignored, ...] = ()
    intent: str = ""  # the agent's one line, shown verbatim to spectators


@attrs.frozen
class GrowEvent:
    """A ring of new tiles (ids continue) and its seed tiles; no tiles means the game ended."""

    rev: int
    t: int
    tiles: tuple[TileShape, ...]
    seed_ring: tuple[int, ...]


Event = ManifestEvent | JoinEvent | RevealEvent | CommitEvent | RetractEvent | GrowEvent

KINDS: dict[str, type] = {
    "manifest": ManifestEvent, "join": JoinEvent, "reveal": RevealEvent,
    "commit": CommitEvent, "retract": RetractEvent, "grow": GrowEvent,
}
_KIND_OF = {cls: kind for kind, cls in KINDS.items()}


def _converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    conv.register_unstructure_hook(TileShape, TileShape.to_json)
    conv.register_structure_hook(TileShape, lambda d, _t: TileShape.from_json(d))
    conv.register_unstructure_hook(Manifest, Manifest.to_dict)
    conv.register_structure_hook(Manifest, lambda d, _t: Manifest.from_dict(d))
    # The seed names the class field "class"; Python cannot.
    conv.register_unstructure_hook(
        Accepted, make_dict_unstructure_fn(Accepted, conv, cls=override(rename="class")))
    conv.register_structure_hook(
        Accepted, make_dict_structure_fn(Accepted, conv, cls=override(rename="class"),
                                         _cattrs_forbid_extra_keys=True))
    # Fields added later are left out at their defaults, so older events are stored (and
    # pushed) exactly as they were.
    conv.register_unstructure_hook(
        JoinEvent, make_dict_unstructure_fn(JoinEvent, conv,
                                            machine=override(omit_if_default=True)))
    for cls in (RevealEvent, RetractEvent):
        conv.register_unstructure_hook(
            cls, make_dict_unstructure_fn(cls, conv, intent=override(omit_if_default=True)))
    return conv


_CONV = _converter()


def event_to_json(ev: Event) -> dict:
    """The event as a plain JSON value with its `kind`."""
    return {"kind": _KIND_OF[type(ev)], **_CONV.unstructure(ev)}


def event_from_json(data: dict) -> Event:
    """Inverse of `event_to_json`; raises ValueError on an unknown kind or a bad field."""
    if not isinstance(data, dict) or data.get("kind") not in KINDS:
        raise ValueError(f"unknown event kind {data.get('kind') if isinstance(data, dict) else data!r}")
    body = {k: v for k, v in data.items() if k != "kind"}
    try:
        return _CONV.structure(body, KINDS[data["kind"]])
    except (cattrs.BaseValidationError, KeyError, TypeError) as exc:
        raise ValueError(f"bad {data['kind']} event: {exc}") from exc


def as_kept(ev: Event) -> Event:
    """`ev` as it is stored, pushed and kept in history: a commit or retract without its
    `ignored` list, which is its reply's alone (up to MAX_BATCH entries, several times the
    bytes of the request that made them; the fold and every reader of history skip it)."""
    if isinstance(ev, CommitEvent | RetractEvent) and ev.ignored:
        return attrs.evolve(ev, ignored=())
    return ev


def is_noop(ev: Event) -> bool:
    """A commit that accepted and rejected nothing, or a retract that took nothing back.

    Such a decision changes no cell and no health; the actor replies with it (its
    ignored list) but does not append it, so no-ops never enter history.
    """
    if isinstance(ev, CommitEvent):
        return not ev.accepted and not ev.rejected
    if isinstance(ev, RetractEvent):
        return not ev.retracted
    return False
