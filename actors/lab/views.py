"""What the lab's surfaces see, pure: organisms and directives as the protocol shows them,
the subscribers' view (counts only), and the reads (gallery, directives, status, lineage,
backlog).

A caller below the owner sees an organism only where the seed lets the public see it: a
proven shader with no stored error (the gallery's bar, less the vote). Any other id is
`unknown_organism`, the answer an id that does not exist gets, so a refusal reveals
nothing, and a cross whose child repeats such an organism is told so without its id
(`shown_birth`). The one exception is a visitor's own cross: `lab.status` shows it to the
client key that crossed it while it is validated and waits unproven (or how it was
rejected)."""

from __future__ import annotations

from typing import Any

import attrs

from actors.lab.dealing import gallery, public
from actors.lab.directives import Directive
from actors.lab.organism import Organism
from actors.lab.state import Lab
from actors.world import Ctx, Refusal
from protocol.ops import lab as ops
from protocol.ops.lab import LabCode
from protocol.roles import role_at_least

MAX_ANCESTORS = 128  # organisms in one lineage listing
HIDDEN_DUPLICATE = "duplicate of an organism that is not public"
HIDDEN_CANDIDATE = "duplicate of a candidate that is not public"
_TRACK_OF_ID = {"s": "shader", "p": "panel"}  # organism ids start with the track's initial


def organism_view(o: Organism) -> ops.OrganismView:
    """An organism as the protocol shows it."""
    return ops.OrganismView(o.id, o.track, o.code, o.title, list(o.parents), o.directive,
                            o.render_ok, o.status, o.error, o.rating.mu, o.rating.sigma,
                            o.rating.ordinal, o.judged)


def public_view(o: Organism) -> ops.OrganismView:
    """An organism as a public surface shows it: a stored error stays with the owner (a
    public voter's result, when a member of its pair died after the deal)."""
    return attrs.evolve(organism_view(o), error=None)


def directive_view(d: Directive) -> ops.DirectiveView:
    """A directive as the protocol shows it."""
    return ops.DirectiveView(d.id, d.track, d.text, list(d.parents), d.origin, d.rating.mu,
                             d.rating.sigma, d.rating.ordinal)


def info(state: Lab, *_: Any) -> ops.LabInfo:
    """The lab's counts."""
    pool = state.organisms.values()
    return ops.LabInfo(len(state.organisms), sum(o.proven for o in pool),
                       sum(o.status == "dead" for o in pool), len(state.directives),
                       state.rejected, state.votes)


def view(state: Lab) -> dict[str, Any]:
    """What subscribers see: counts only (an unproven organism's code stays private)."""
    return attrs.asdict(info(state))


def find_organism(state: Lab, oid: str) -> Organism | Refusal:
    """The organism `oid`, or `unknown_organism`."""
    found = state.organisms.get(oid)
    if found is None:
        return _unknown(oid)
    return found


def _unknown(oid: str, what: str = "organism") -> Refusal:
    return Refusal(LabCode.UNKNOWN_ORGANISM, f"there is no such {what} in this lab",
                   {"id": oid})


def _owner(ctx: Ctx) -> bool:
    return role_at_least(ctx.caller.role, "owner")


def _sees(o: Organism, ctx: Ctx, key: str) -> bool:
    """The owner sees any organism; others a public one, or their own cross (crossed
    under `key`) while it lives."""
    return _owner(ctx) or public(o) or bool(key and o.client == key and o.live)


def shown_birth(state: Lab, birth: ops.Birth, ctx: Ctx, key: str) -> ops.Birth:
    """A birth's reply as its caller (crossing under `key`) may see it: a duplicate of an
    organism the caller may not see, or of a candidate another is having validated, names
    no id (the candidate's is that organism's or candidate's)."""
    if birth.status == "validating" and not _owner(ctx):
        v = state.validating.get(birth.id or "")
        if v is not None and not (key and v.client == key):
            return ops.Birth(None, "rejected", HIDDEN_CANDIDATE)
        return birth
    o = state.organisms.get(birth.id or "")
    if birth.status != "rejected" or o is None or _sees(o, ctx, key):
        return birth
    return ops.Birth(None, "rejected", HIDDEN_DUPLICATE)


def shown_organism(state: Lab, oid: str, ctx: Ctx) -> Organism | Refusal:
    """The organism `oid` if the caller may see it (the owner any, others a public one),
    or `unknown_organism`."""
    found = state.organisms.get(oid)
    if found is None or not _sees(found, ctx, ""):
        return _unknown(oid)
    return found


def answer_gallery(state: Lab, args: ops.GalleryArgs, _ctx: Ctx) -> ops.Gallery:
    """Proven, judged shaders, best first."""
    return ops.Gallery([organism_view(o) for o in
                        gallery(list(state.organisms.values()))[: args.limit]])


def answer_directives(state: Lab, args: ops.DirectivesArgs, _ctx: Ctx) -> ops.Directives:
    """A track's directives, oldest first."""
    return ops.Directives([directive_view(d) for d in state.directives.values()
                           if d.track == args.track])


def answer_status(state: Lab, args: ops.StatusArgs, ctx: Ctx) -> ops.Status | Refusal:
    """Where an organism or a candidate stands; never its code. Below the owner: a public
    organism, or the caller's own cross (named by `client_key`) until it is proven."""
    owner, key = _owner(ctx), args.client_key
    o = state.organisms.get(args.id)
    if o is not None:  # (a rejection under an organism's id is a duplicate's: hidden with it)
        if not _sees(o, ctx, key):
            return _unknown(args.id, "organism or candidate")
        status = "alive" if o.status == "alive" else "dead"
        return ops.Status(o.id, o.track, status, o.render_ok, o.error)
    track = _TRACK_OF_ID.get(args.id[:1], "shader")
    validating = state.validating.get(args.id)
    if validating is not None and (owner or (key and validating.client == key)):
        return ops.Status(args.id, track, "validating", False, None)
    reason, client = state.rejections.get(args.id, (None, ""))
    if reason is not None and (owner or (key and client == key)):
        return ops.Status(args.id, track, "rejected", False, reason)
    return _unknown(args.id, "organism or candidate")


def answer_lineage(state: Lab, args: ops.LineageArgs, ctx: Ctx) -> ops.Lineage | Refusal:
    """The organism and its ancestors breadth first, `depth` generations back (at most
    MAX_ANCESTORS of them). Below the owner: of a public organism, its public ancestors."""
    owner = _owner(ctx)
    root = shown_organism(state, args.id, ctx)
    if isinstance(root, Refusal):
        return root
    generation = {root.id: 0}
    order = [root.id]
    truncated = False
    for oid in order:
        if generation[oid] >= args.depth:
            continue
        for parent in state.organisms[oid].parents:
            if parent in generation or parent not in state.organisms:
                continue
            if len(order) >= MAX_ANCESTORS:
                truncated = True
                break
            generation[parent] = generation[oid] + 1
            order.append(parent)
    shown = [state.organisms[oid] for oid in order]
    return ops.Lineage([_ancestor(o, generation[o.id]) for o in shown if owner or public(o)],
                       truncated)


def _ancestor(o: Organism, generation: int) -> ops.Ancestor:
    return ops.Ancestor(o.id, generation, o.title, list(o.parents), o.directive, o.source,
                        o.status, o.render_ok, o.rating.ordinal, o.judged)


def answer_backlog(state: Lab, args: ops.BacklogArgs, _ctx: Ctx) -> ops.Backlog:
    """The live unproven organisms of a track (or both), oldest first."""
    waiting = [o for o in state.organisms.values() if o.live and not o.render_ok
               and args.track in ("all", o.track)]
    return ops.Backlog([organism_view(o) for o in waiting[: args.limit]], len(waiting))
