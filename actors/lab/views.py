"""What the lab's surfaces see, pure: organisms and directives as the protocol shows them,
the subscribers' view (counts only), and the reads (gallery, directives, status, lineage,
backlog)."""

from __future__ import annotations

from typing import Any

import attrs

from actors.lab.dealing import gallery
from actors.lab.directives import Directive
from actors.lab.organism import Organism
from actors.lab.state import Lab
from actors.world import Ctx, Refusal
from protocol.ops import lab as ops
from protocol.ops.lab import LabCode

MAX_ANCESTORS = 128  # organisms in one lineage listing
_TRACK_OF_ID = {"s": "shader", "p": "panel"}  # organism ids start with the track's initial


def organism_view(o: Organism) -> ops.OrganismView:
    """An organism as the protocol shows it."""
    return ops.OrganismView(o.id, o.track, o.code, o.title, list(o.parents), o.directive,
                            o.render_ok, o.status, o.error, o.rating.mu, o.rating.sigma,
                            o.rating.ordinal, o.judged)


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
        return Refusal(LabCode.UNKNOWN_ORGANISM, "there is no such organism in this lab",
                       {"id": oid})
    return found


def answer_gallery(state: Lab, args: ops.GalleryArgs, _ctx: Ctx) -> ops.Gallery:
    """Proven, judged shaders, best first."""
    return ops.Gallery([organism_view(o) for o in
                        gallery(list(state.organisms.values()))[: args.limit]])


def answer_directives(state: Lab, args: ops.DirectivesArgs, _ctx: Ctx) -> ops.Directives:
    """A track's directives, oldest first."""
    return ops.Directives([directive_view(d) for d in state.directives.values()
                           if d.track == args.track])


def answer_status(state: Lab, args: ops.StatusArgs, _ctx: Ctx) -> ops.Status | Refusal:
    """Where an organism or a candidate stands; never its code."""
    o = state.organisms.get(args.id)
    if o is not None:
        status = "alive" if o.status == "alive" else "dead"
        return ops.Status(o.id, o.track, status, o.render_ok, o.error)
    track = _TRACK_OF_ID.get(args.id[:1], "shader")
    if args.id in state.validating:
        return ops.Status(args.id, track, "validating", False, None)
    if args.id in state.rejections:
        return ops.Status(args.id, track, "rejected", False, state.rejections[args.id])
    return Refusal(LabCode.UNKNOWN_ORGANISM, "there is no such organism or candidate in this "
                   "lab", {"id": args.id})


def answer_lineage(state: Lab, args: ops.LineageArgs, _ctx: Ctx) -> ops.Lineage | Refusal:
    """The organism and its ancestors breadth first, `depth` generations back (at most
    MAX_ANCESTORS of them)."""
    root = find_organism(state, args.id)
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
    return ops.Lineage([_ancestor(state.organisms[oid], generation[oid]) for oid in order],
                       truncated)


def _ancestor(o: Organism, generation: int) -> ops.Ancestor:
    return ops.Ancestor(o.id, generation, o.title, list(o.parents), o.directive, o.source,
                        o.status, o.render_ok, o.rating.ordinal, o.judged)


def answer_backlog(state: Lab, args: ops.BacklogArgs, _ctx: Ctx) -> ops.Backlog:
    """The live unproven organisms of a track (or both), oldest first."""
    waiting = [o for o in state.organisms.values() if o.live and not o.render_ok
               and args.track in ("all", o.track)]
    return ops.Backlog([organism_view(o) for o in waiting[: args.limit]], len(waiting))
