"""The lab world, `lab:<name>`, as one `World` value: its moves and reads. Pure.

The state and its fold are `state.py`, the events and their codec `events.py`; which
organisms a surface may show is `dealing.py`, the canary rules `canary.py`, the reads
and views `views.py`. Time comes from `ctx.t` (ms); randomness from `ctx.rng`, spawned
per deal by the number of pairs dealt so far (deals are in-memory events, which do not
move the revision `ctx.rng` is keyed on); a pair's token binds that draw to the deal.

Effects the table cannot hold belong to the live actor (`actor.py`): the birth loop's
timer and model births, and `validate` (whose compile step is a subprocess) run off the
actor's task. So the two birth ops, `lab.birth` and `lab.cross`, are not moves of this
table: `offers.py` holds their two pure halves, which the actor calls around the
validator. `WORLD` here is the table; `actor.WORLD` adds the actor.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from actors.lab import canary
from actors.lab.dealing import owner_pair, public_pair
from actors.lab.directives import Directive, directive_reason, explore, mutate
from actors.lab.directives import Rejected as DirectiveRejected
from actors.lab.directives import directive_id as make_directive_id
from actors.lab.events import (
    Created,
    DirectiveAdded,
    Event,
    Killed,
    PairDealt,
    Proven,
    VoteCast,
    decode,
    encode,
    is_transient,
)
from actors.lab.offers import client_refusal
from actors.lab.organism import Organism
from actors.lab.ratings import update
from actors.lab.seeding import PURPOSES
from actors.lab.state import CANARY_WINDOW_MS, Lab, dump, evolve, initial, load
from actors.lab.views import (
    answer_backlog,
    answer_directives,
    answer_gallery,
    answer_lineage,
    answer_status,
    directive_view,
    find_organism,
    info,
    organism_view,
    public_view,
    view,
)
from actors.world import Codec, Ctx, Move, Read, Refusal, StateCodec, World
from protocol.errors import ErrorCode
from protocol.ops import lab as ops
from protocol.ops.lab import LabCode
from protocol.text import utf16_clip

MAX_ERROR = 500  # characters of an info log's first line kept as the stored error

# --- helpers --------------------------------------------------------------------------


def _pool(state: Lab) -> list[Organism]:
    return list(state.organisms.values())


def _deal_rng(state: Lab, ctx: Ctx) -> np.random.Generator:
    """A generator for this deal: the move's, spawned by the count of pairs dealt.

    Its draws repeat once the lab loads again (the count is in memory, and a deal moves no
    revision), and the in-memory benching that shaped a deal is gone by then, so the same
    draw may deal another pair. That is harmless because the token is not the draw alone
    (`_token`): a repeated token names the same client, surface and organisms."""
    return np.random.default_rng(np.random.SeedSequence(
        int(ctx.rng.integers(2**63)), spawn_key=(state.deal_count,)))


def _token(draw: int, *deal: str | None) -> str:
    """A pair's token: a digest of the deal's draw and what it deals to whom, so a vote
    carrying it counts for that deal only, whatever was dealt under the draw since."""
    text = json.dumps([draw, *deal])
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _dealt(surface: str, client: str, left: Organism, right: Organism, canary_id: str | None,
           ctx: Ctx, rng: np.random.Generator) -> list[Event]:
    pair = _token(int(rng.integers(2**62)), surface, client, left.id, right.id, canary_id)
    return [PairDealt(pair, surface, client, left.id, right.id, canary_id, ctx.t)]


def pair_result(state: Lab, events: Sequence[Event], _args: Any) -> ops.Pair:
    """The pair a deal recorded."""
    deal = state.deals[events[0].pair]
    return ops.Pair(deal.pair, organism_view(state.organisms[deal.left]),
                    organism_view(state.organisms[deal.right]), deal.canary,
                    deal.t + CANARY_WINDOW_MS)


# --- the owner's arena ----------------------------------------------------------------


DECLARED = frozenset({"main"})  # labs that exist without being created


def decide_create(state: Lab, args: ops.CreateArgs, _ctx: Ctx) -> list[Event] | Refusal:
    """Create the lab once (`lab:main` is declared: it exists without this)."""
    if state.created or state.organisms or state.directives or state.name in DECLARED:
        return Refusal(ErrorCode.ALREADY_EXISTS, "this lab exists")
    return [Created(state.seed if args.seed is None else args.seed, args.backlog)]


def decide_pair(state: Lab, args: ops.PairArgs, ctx: Ctx) -> list[Event] | Refusal:
    """Two live organisms of the track, an unproven one first when any exists."""
    rng = _deal_rng(state, ctx)
    found = owner_pair(_pool(state), args.track, rng)
    if found is None:
        return Refusal(LabCode.NO_PAIR, "fewer than two live organisms on this track",
                       {"track": args.track})
    return _dealt("owner", canary.owner_client(ctx.caller), *found, None, ctx, rng)


def decide_ok(state: Lab, args: ops.OkArgs, ctx: Ctx) -> list[Event] | Refusal:
    """Set render_ok; nothing changes for an organism proven already or no longer live."""
    o = find_organism(state, args.id)
    if isinstance(o, Refusal):
        return o
    return [] if o.render_ok or not o.live else [Proven(o.id, "owner", "", ctx.t)]


def first_line(log: str) -> str:
    """The stored error: the first non-blank line of an info log."""
    line = next((x.strip() for x in log.splitlines() if x.strip()), "")
    return utf16_clip(line, MAX_ERROR) or "compile or link failed with an empty info log"


def decide_invalid(state: Lab, args: ops.InvalidArgs, ctx: Ctx) -> list[Event] | Refusal:
    """The organism dies and keeps the log's first line (a dead one keeps its first error)."""
    o = find_organism(state, args.id)
    if isinstance(o, Refusal):
        return o
    return [] if o.status == "dead" else [Killed(o.id, first_line(args.log), ctx.t)]


def marked(state: Lab, events: Sequence[Event], args: ops.OkArgs | ops.InvalidArgs
           ) -> ops.Marked:
    """An organism after the owner's verdict."""
    o = state.organisms[args.id]
    return ops.Marked(o.id, bool(events), o.render_ok, o.status, o.error)


# --- public judging -------------------------------------------------------------------


def decide_public_pair(state: Lab, args: ops.PublicPairArgs, ctx: Ctx
                       ) -> list[Event] | Refusal:
    """Two proven shaders, or one canary against a proven partner near it on the ladder."""
    refused = client_refusal(args.client_key)
    if refused:
        return refused
    rng = _deal_rng(state, ctx)
    found = public_pair(_pool(state), canary.not_canaries_for(state, args.client_key), rng)
    if found is None:
        return Refusal(LabCode.NO_PAIR, "fewer than two proven shaders to judge")
    return _dealt("public", args.client_key, found.left, found.right, found.canary, ctx, rng)


def decide_seen(state: Lab, args: ops.SeenArgs, ctx: Ctx) -> list[Event] | Refusal:
    """A render report, under the seed's four rules (`canary.py`)."""
    return client_refusal(args.client_key) or canary.report(state, args.client_key, args.id, args.ok,
                                                     ctx.t)


def seen(_state: Lab, events: Sequence[Event], args: ops.SeenArgs) -> ops.Seen:
    """What the report did."""
    kinds = {type(e).__name__ for e in events}
    verdict = ("benched" if "Benched" in kinds else "struck" if "Struck" in kinds
               else "proven" if "Proven" in kinds else "no_change")
    return ops.Seen(args.id, verdict)


def decide_vote(state: Lab, args: ops.VoteArgs, ctx: Ctx) -> list[Event] | Refusal:
    """One vote on a pair dealt to the voter: both ratings move, and the directives'
    when the two organisms answer different directives. A key is needed below the owner
    (only the owner's arena votes without one)."""
    refused = None if ctx.caller.role == "owner" else client_refusal(args.client_key)
    if refused:
        return refused
    deal = canary.voted_deal(state, args.pair, args.winner, args.client_key, ctx.caller, ctx.t)
    if isinstance(deal, Refusal):
        return deal
    loser = deal.right if args.winner == deal.left else deal.left
    w, lo = state.organisms[args.winner], state.organisms[loser]
    rw, rl = update(w.rating, lo.rating)
    directives: tuple = ()
    if (w.directive in state.directives and lo.directive in state.directives
            and w.directive != lo.directive):
        dw, dl = update(state.directives[w.directive].rating,
                        state.directives[lo.directive].rating)
        directives = ((w.directive, dw), (lo.directive, dl))
    return [VoteCast(deal.pair, w.id, lo.id, deal.surface, deal.client, ctx.t, rw, rl,
                     directives)]


def voted(state: Lab, events: Sequence[Event], _args: ops.VoteArgs) -> ops.Voted:
    """Both organisms with their new ratings (a public voter's without a stored error)."""
    vote = events[0]
    show = organism_view if vote.surface == "owner" else public_view
    return ops.Voted(show(state.organisms[vote.winner]), show(state.organisms[vote.loser]))


# --- directives -----------------------------------------------------------------------


def _directive_events(state: Lab, made: Directive | DirectiveRejected, t: int) -> list[Event] | Refusal:
    if isinstance(made, DirectiveRejected):
        return Refusal(LabCode.BAD_DIRECTIVE, made.reason, {"text": made.text[:200]})
    if made.id in state.directives:
        return Refusal(ErrorCode.ALREADY_EXISTS, "this directive exists", {"id": made.id})
    return [DirectiveAdded(made, t)]


def decide_directive_add(state: Lab, args: ops.DirectiveAddArgs, ctx: Ctx
                         ) -> list[Event] | Refusal:
    """A seed directive, if it talks about aesthetics only."""
    text = " ".join(args.text.split())
    reason = directive_reason(text)
    made = (DirectiveRejected(text, reason) if reason
            else Directive(make_directive_id(args.track, text), args.track, text))
    return _directive_events(state, made, ctx.t)


def _directive(state: Lab, did: str) -> Directive | Refusal:
    found = state.directives.get(did)
    if found is None:
        return Refusal(LabCode.UNKNOWN_DIRECTIVE, "there is no such directive in this lab",
                       {"id": did})
    return found


def decide_directive_mutate(state: Lab, args: ops.DirectiveMutateArgs, ctx: Ctx
                            ) -> list[Event] | Refusal:
    """A child of the winner, away from the loser (model-free here; a model writer is the
    live actor's effect)."""
    winner, loser = _directive(state, args.winner), _directive(state, args.loser)
    for found in (winner, loser):
        if isinstance(found, Refusal):
            return found
    if winner.track != loser.track or winner.id == loser.id:
        return Refusal(LabCode.BAD_DIRECTIVE, "a mutation needs two directives of one track",
                       {"winner": winner.id, "loser": loser.id})
    return _directive_events(state, mutate(winner, loser, ctx.rng), ctx.t)


def decide_directive_explore(state: Lab, args: ops.DirectiveExploreArgs, ctx: Ctx
                             ) -> list[Event] | Refusal:
    """A directive for territory the track's directives leave empty."""
    mine = [d for d in state.directives.values() if d.track == args.track]
    return _directive_events(state, explore(mine, args.track, ctx.rng), ctx.t)


def directive_added(state: Lab, events: Sequence[Event], _args: Any) -> ops.DirectiveView:
    """The new directive."""
    return directive_view(state.directives[events[0].directive.id])


WORLD = World(
    kind="lab",
    initial=initial,
    evolve=evolve,
    codec=Codec(encode, decode),
    view=view,
    ops=ops.OPS,
    moves={
        "lab.create": Move(decide_create, info),
        "lab.pair": Move(decide_pair, pair_result, PURPOSES["dealing"]),
        "lab.ok": Move(decide_ok, marked),
        "lab.invalid": Move(decide_invalid, marked),
        "lab.public_pair": Move(decide_public_pair, pair_result, PURPOSES["dealing"]),
        "lab.seen": Move(decide_seen, seen),
        "lab.vote": Move(decide_vote, voted),
        "lab.directive_add": Move(decide_directive_add, directive_added),
        "lab.directive_mutate": Move(decide_directive_mutate, directive_added,
                                     PURPOSES["directive"]),
        "lab.directive_explore": Move(decide_directive_explore, directive_added,
                                      PURPOSES["directive"]),
    },
    reads={"lab.info": Read(info), "lab.gallery": Read(answer_gallery),
           "lab.directives": Read(answer_directives), "lab.status": Read(answer_status),
           "lab.lineage": Read(answer_lineage), "lab.backlog": Read(answer_backlog)},
    create="lab.create",
    create_role="owner",
    followable=False,  # its records carry the code of unproven organisms (the seed confines
    # them to the owner's arena); pages read lab.info, lab.pair and lab.gallery instead
    declared=lambda name, _t: name in DECLARED,
    codes=LabCode,
    seed=lambda state: state.seed,
    transient=is_transient,
    snapshot=StateCodec(dump, load),
)
