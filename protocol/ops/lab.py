"""Ops of the lab arena, `lab:<name>` (`lab:main` exists by default), and its world codes.

The owner's arena and the headless gate use the owner ops (`create`, `pair`, `ok`,
`invalid`, `backlog`, `birth`, the directive ops); the public judging page and the
gallery use the spectator ops (`public_pair`, `seen`, `vote`, `gallery`, `cross`,
`status`, `lineage`), each naming the client key the browser keeps. Every field is
bounded; an info log or a source longer than its bound is a bad_request before the lab
sees it. The seed's HTTP routes (server/lab_routes.py) send the same args classes.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

import attrs

from protocol.bounds import bounded
from protocol.errors import register_world_codes
from protocol.jsontext import MAX_EXACT_INT
from protocol.registry import OpSpec

MAX_ID = 64  # organism ids are 18 characters, directive ids 15, pair ids 16
MAX_CLIENT_KEY = 64
MAX_LOG = 8_192  # an info log; only its first line is kept
MAX_CODE = 48_000  # twice the validator's ceiling, so `too long` is a logged rejection
MAX_TITLE = 80
MAX_DIRECTIVE_TEXT = 1_200  # twice the directive ceiling, so the lab says why
MAX_GALLERY = 200
MAX_SEED = MAX_EXACT_INT  # exact in a JavaScript client (a frame holds no larger integer)
DEFAULT_BACKLOG = 16  # unproven organisms per track the birth loop keeps waiting
MAX_BACKLOG = 256
MAX_LIST = 500  # organisms in one backlog listing
MAX_DEPTH = 16  # generations of one lineage listing

Verdict = Literal["proven", "struck", "benched", "no_change"]
BirthStatus = Literal["validating", "born", "rejected"]
OrganismStatus = Literal["validating", "alive", "dead", "rejected"]


@register_world_codes
class LabCode(StrEnum):
    """World codes a lab answers with, beyond the protocol's own (see docs/lab.md)."""

    UNKNOWN_ORGANISM = "unknown_organism"  # no organism of this lab the caller may see
    NOT_DEALT = "not_dealt"  # not dealt to this client key within ten minutes (or voted)
    NO_PAIR = "no_pair"  # too few organisms to deal a pair on this surface
    NOT_IN_PAIR = "not_in_pair"  # the winner is not one of the pair's two organisms
    PARENT_NOT_PROVEN = "parent_not_proven"  # a visitor cross needs two proven parents
    NOT_CROSSABLE = "not_crossable"  # not two grammar shaders of the public track
    BAD_DIRECTIVE = "bad_directive"  # the aesthetics check refused it, or tracks mismatch
    UNKNOWN_DIRECTIVE = "unknown_directive"  # the id names no directive of this lab


@attrs.frozen
class OrganismView:
    """One organism as a surface shows it: its code, lineage, state and rating."""

    id: str
    track: str
    code: str
    title: str | None
    parents: list[str]
    directive: str | None
    render_ok: bool
    status: str
    error: str | None
    mu: float
    sigma: float
    ordinal: float  # the ladder value mu - 3 sigma
    judged: int


@attrs.frozen
class LabInfo:
    """The lab's counts."""

    organisms: int
    proven: int
    dead: int
    directives: int
    rejected: int
    votes: int


@attrs.frozen
class InfoArgs:
    """The lab's counts (no arguments)."""


@attrs.frozen
class CreateArgs:
    """Create this lab; `seed` (default: derived from its name) seeds its draws; its birth
    loop breeds while fewer than `backlog` organisms of a track wait unproven (0: no loop).
    """

    seed: int | None = bounded(None, lo=0, hi=MAX_SEED)
    backlog: int = bounded(DEFAULT_BACKLOG, lo=0, hi=MAX_BACKLOG)


@attrs.frozen
class PairArgs:
    """Deal the owner's arena a pair of `track`."""

    track: Literal["shader", "panel"] = bounded("shader", length=6)


@attrs.frozen
class PublicPairArgs:
    """Deal a public judge (`client_key`, kept in the browser) a pair."""

    client_key: str = bounded(length=MAX_CLIENT_KEY, nonempty=True)


@attrs.frozen
class Pair:
    """A dealt pair: vote on it by `pair` before `expires` (ms); `canary` names the
    unproven member of a public pair, when there is one."""

    pair: str
    left: OrganismView
    right: OrganismView
    canary: str | None
    expires: int


@attrs.frozen
class OkArgs:
    """The owner's arena drew organism `id` for 300 ms: it is proven."""

    id: str = bounded(length=MAX_ID)


@attrs.frozen
class InvalidArgs:
    """Organism `id` failed to compile or link; `log` is the info log."""

    id: str = bounded(length=MAX_ID)
    log: str = bounded(length=MAX_LOG)


@attrs.frozen
class Marked:
    """An organism after `lab.ok` / `lab.invalid`; `changed` is False when it was
    already proven (ok) or already dead (invalid)."""

    id: str
    changed: bool
    render_ok: bool
    status: str
    error: str | None


@attrs.frozen
class SeenArgs:
    """A public judge's render report on organism `id`: it drew (`ok`) or it did not."""

    id: str = bounded(length=MAX_ID)
    client_key: str = bounded(length=MAX_CLIENT_KEY, nonempty=True)
    ok: bool


@attrs.frozen
class Seen:
    """What the report did: proven, an in-memory strike, benched, or nothing."""

    id: str
    verdict: Verdict


@attrs.frozen
class VoteArgs:
    """The judge (`client_key`; the owner's arena may leave it empty) prefers `winner`
    of the dealt `pair`."""

    pair: str = bounded(length=MAX_ID)
    winner: str = bounded(length=MAX_ID)
    client_key: str = bounded("", length=MAX_CLIENT_KEY)


@attrs.frozen
class Voted:
    """The winner and loser with their ratings after the vote."""

    winner: OrganismView
    loser: OrganismView


@attrs.frozen
class GalleryArgs:
    """The `limit` best of the gallery."""

    limit: int = bounded(50, lo=1, hi=MAX_GALLERY)


@attrs.frozen
class Gallery:
    """Proven shaders without a stored error, judged at least once, best first."""

    organisms: list[OrganismView]


@attrs.frozen
class CrossArgs:
    """A visitor (`client_key`) crosses two proven organisms `a` and `b`."""

    a: str = bounded(length=MAX_ID)
    b: str = bounded(length=MAX_ID)
    client_key: str = bounded(length=MAX_CLIENT_KEY, nonempty=True)


@attrs.frozen
class BirthArgs:
    """A birth on `track`: the owner's `code` (with a title and the directive it answers),
    or, with no code, a grammar child of parents the lab chooses."""

    track: Literal["shader", "panel"] = bounded("shader", length=6)
    code: str = bounded("", length=MAX_CODE)
    title: str = bounded("", length=MAX_TITLE)
    directive: str = bounded("", length=MAX_ID)


@attrs.frozen
class Birth:
    """A candidate's id (its content hash) and where it stands: `validating` (the
    validator runs off the lab's task; `lab.status` tells the outcome), `born`, or
    `rejected` with the reason it was logged as a rejection. The id is null for a
    visitor's cross whose child repeats an organism the visitor may not see."""

    id: str | None
    status: BirthStatus
    reason: str | None = None


@attrs.frozen
class StatusArgs:
    """Where organism or candidate `id` stands; a visitor names its `client_key` to see its
    own cross before the child is proven."""

    id: str = bounded(length=MAX_ID)
    client_key: str = bounded("", length=MAX_CLIENT_KEY)


@attrs.frozen
class Status:
    """A candidate being validated, an organism alive or dead (with `render_ok`), or a
    candidate logged as rejected (with its reason); never the code."""

    id: str
    track: str
    status: OrganismStatus
    render_ok: bool
    reason: str | None  # a rejection's reason, or a dead organism's stored error


@attrs.frozen
class BacklogArgs:
    """The unproven backlog of `track` (or of both tracks), oldest first."""

    track: Literal["shader", "panel", "all"] = bounded("all", length=6)
    limit: int = bounded(100, lo=1, hi=MAX_LIST)


@attrs.frozen
class Backlog:
    """Live organisms waiting for the owner's arena to prove them, oldest first."""

    organisms: list[OrganismView]
    total: int  # the whole backlog, beyond `limit` too


@attrs.frozen
class LineageArgs:
    """The ancestors of organism `id`, `depth` generations back."""

    id: str = bounded(length=MAX_ID)
    depth: int = bounded(6, lo=1, hi=MAX_DEPTH)


@attrs.frozen
class Ancestor:
    """One organism of a lineage (no code): `generation` 0 is the organism asked about."""

    id: str
    generation: int
    title: str | None
    parents: list[str]
    directive: str | None
    source: str
    status: str
    render_ok: bool
    ordinal: float
    judged: int


@attrs.frozen
class Lineage:
    """An organism and its ancestors, nearest first (at most 128; `truncated` beyond)."""

    ancestors: list[Ancestor]
    truncated: bool


@attrs.frozen
class DirectiveAddArgs:
    """A seed directive: aesthetic `text` for `track`."""

    text: str = bounded(length=MAX_DIRECTIVE_TEXT)
    track: Literal["shader", "panel"] = bounded("shader", length=6)


@attrs.frozen
class DirectiveMutateArgs:
    """A child of directive `winner`, moved away from `loser`."""

    winner: str = bounded(length=MAX_ID)
    loser: str = bounded(length=MAX_ID)


@attrs.frozen
class DirectiveExploreArgs:
    """A directive for territory no directive of `track` occupies."""

    track: Literal["shader", "panel"] = bounded("shader", length=6)


@attrs.frozen
class DirectiveView:
    """One directive: its text, lineage, origin and rating."""

    id: str
    track: str
    text: str
    parents: list[str]
    origin: str
    mu: float
    sigma: float
    ordinal: float


@attrs.frozen
class DirectivesArgs:
    """The directives of `track`."""

    track: Literal["shader", "panel"] = bounded("shader", length=6)


@attrs.frozen
class Directives:
    """A track's directives, oldest first."""

    directives: list[DirectiveView]


OPS = (
    OpSpec("lab.create", CreateArgs, LabInfo, "owner",
           "Create this lab (`lab:main` exists without it)."),
    OpSpec("lab.info", InfoArgs, LabInfo, "spectator",
           "The lab's counts (a lab's stream is not followed: its events carry unproven code)."),
    OpSpec("lab.pair", PairArgs, Pair, "owner",
           "Deal the owner's arena two live organisms of a track, an unproven one first."),
    OpSpec("lab.ok", OkArgs, Marked, "owner",
           "The arena drew the organism for 300 ms: set render_ok."),
    OpSpec("lab.invalid", InvalidArgs, Marked, "owner",
           "The organism failed to compile or link: it dies with the log's first line."),
    OpSpec("lab.public_pair", PublicPairArgs, Pair, "spectator",
           "Deal a public judge two proven shaders, or one canary against a proven partner."),
    OpSpec("lab.seen", SeenArgs, Seen, "spectator",
           "A judge's render report on an organism dealt to that client key."),
    OpSpec("lab.vote", VoteArgs, Voted, "spectator",
           "One vote on a pair dealt to the voter; both ratings move."),
    OpSpec("lab.gallery", GalleryArgs, Gallery, "spectator",
           "Proven, judged shaders by rating."),
    OpSpec("lab.cross", CrossArgs, Birth, "spectator",
           "A visitor crosses two proven shaders; the child is born unproven."),
    OpSpec("lab.status", StatusArgs, Status, "spectator",
           "Where an organism or a candidate stands (validating, alive, dead, rejected); "
           "below the owner, a proven shader or the caller's own cross only."),
    OpSpec("lab.lineage", LineageArgs, Lineage, "spectator",
           "An organism's ancestors, without code; below the owner, proven shaders only."),
    OpSpec("lab.backlog", BacklogArgs, Backlog, "owner",
           "The unproven backlog the owner's arena (and the headless gate) proves."),
    OpSpec("lab.birth", BirthArgs, Birth, "owner",
           "Offer a candidate (or breed one): validated, then born or logged as rejected."),
    OpSpec("lab.directive_add", DirectiveAddArgs, DirectiveView, "owner",
           "Add a seed directive."),
    OpSpec("lab.directive_mutate", DirectiveMutateArgs, DirectiveView, "owner",
           "A child directive of a winner, moved away from a loser."),
    OpSpec("lab.directive_explore", DirectiveExploreArgs, DirectiveView, "owner",
           "A directive for unoccupied aesthetic territory."),
    OpSpec("lab.directives", DirectivesArgs, Directives, "owner",
           "A track's directives with their lineage and ratings."),
)
