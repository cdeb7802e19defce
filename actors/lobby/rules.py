"""The lobby's rules: which worlds it created, who may create one, how the list reads. Pure.

The lobby is mostly effects (it asks the directory to create worlds, reads the store's
streams and the live figures, hears worlds' summaries; see actor.py); what is pure is
here: the catalog it folds, the decision to create, and the listing.

The listing is every world that exists: each stream in the store (a world exists once
its first event is stored, however long ago it was unloaded) and each live world (a
field being generated is live before it is stored), the featured ones (today's daily
field) first. A name that was only requested never started anything, so it is never
listed; nor is today's daily field before anyone opened it (the lobby's page links it
all the same: it starts when opened).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from itertools import islice
from typing import Any

import attrs

from actors.lobby.events import WorldCreated, decode, encode
from actors.world import Codec, Ctx, Refusal, StateCodec, World
from protocol.envelope import ACTOR_ID_RE
from protocol.errors import ErrorCode
from protocol.ops import lobby as ops
from protocol.roles import role_at_least

NAME = "main"  # the one lobby, lobby:main


@attrs.frozen
class Catalog:
    """Worlds created through the lobby: id -> kind."""

    worlds: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class LiveFigures:
    """What the directory says about one live world."""

    actor_id: str
    kind: str
    rev: int
    subscribers: int


def decide_create(catalog: Catalog, args: ops.CreateArgs, ctx: Ctx,
                  create_roles: Mapping[str, str]) -> list[WorldCreated] | Refusal:
    """The lobby's event for a new world `kind:name`, or a refusal.

    `create_roles` maps each creatable kind to the minimum role that may create it.
    """
    if args.kind not in create_roles:
        return Refusal(ErrorCode.BAD_REQUEST,
                       f"args.kind: there is no world kind {args.kind[:40]!r}",
                       {"path": "args.kind", "kinds": sorted(create_roles)})
    required = create_roles[args.kind]
    if not role_at_least(ctx.caller.role, required):
        return Refusal(ErrorCode.FORBIDDEN,
                       f"creating a {args.kind} world needs the {required} role",
                       {"role": ctx.caller.role, "required": required})
    actor_id = f"{args.kind}:{args.name}"
    if not ACTOR_ID_RE.match(actor_id):
        return Refusal(ErrorCode.BAD_REQUEST,
                       "args.name: 1-80 letters, digits, '_', '.', '-', not starting with '.'",
                       {"path": "args.name"})
    if actor_id in catalog.worlds:
        return Refusal(ErrorCode.ALREADY_EXISTS, f"the world {actor_id!r} exists",
                       {"actor": actor_id})
    return [WorldCreated(args.kind, actor_id, ctx.caller.name)]


def evolve(catalog: Catalog, event: WorldCreated) -> Catalog:
    """The catalog after one event."""
    return Catalog({**catalog.worlds, event.id: event.kind})


class Stored:
    """The stored worlds (id -> durable revision) and their ids in listing order, all and
    per kind: sorted once per read of the store, so that a page need not sort them."""

    def __init__(self, revisions: Mapping[str, int]) -> None:
        self.revisions = revisions
        self.order: dict[str | None, list[str]] = {None: sorted(revisions)}
        for actor_id in self.order[None]:
            self.order.setdefault(actor_id.partition(":")[0], []).append(actor_id)


def listing(stored: Stored, live: Iterable[LiveFigures],
            seen: Mapping[str, Mapping[str, Any]], featured: Iterable[str] = (),
            kind: str | None = None, offset: int = 0, limit: int = ops.PAGE) -> ops.ListResult:
    """A page of the worlds that exist: stored streams and live worlds, with the last
    summary each world gave (`seen`: id -> summary); the `featured` ids that exist first,
    then by id; `kind` keeps one kind. The page is the worlds `offset` .. `offset + limit
    - 1` of that order. It costs the page's end and the live worlds, not every stored one
    (a watched lobby lists every half second, and anyone may ask for a page)."""
    def of_kind(actor_id: str) -> bool:
        return kind is None or actor_id.partition(":")[0] == kind

    live_by_id = {f.actor_id: f for f in live if of_kind(f.actor_id)}
    order = stored.order.get(kind, [])
    extra = sorted(i for i in live_by_id if i not in stored.revisions)
    first = [i for i in dict.fromkeys(featured)
             if i in live_by_id or (i in stored.revisions and of_kind(i))]
    end = offset + limit
    rest = (i for i in heapq.merge(order, extra) if i not in first)
    ids = first + list(islice(rest, max(end - len(first), 0)))
    worlds = []
    for actor_id in ids[offset:end]:
        f = live_by_id.get(actor_id)
        row = (ops.WorldInfo(f.kind, actor_id, f.rev, f.subscribers, True) if f is not None
               else ops.WorldInfo(actor_id.partition(":")[0], actor_id,
                                  stored.revisions[actor_id], 0, False))
        summary = seen.get(actor_id)
        worlds.append(row if summary is None else attrs.evolve(row, summary=dict(summary)))
    return ops.ListResult(worlds, len(order) + len(extra), offset)


def _declared(name: str, _t: int) -> bool:
    return name == NAME


def _no_view(_catalog: Catalog) -> Any:
    raise NotImplementedError("the lobby's view is its listing, built by its actor")


WORLD = World(
    kind="lobby",
    initial=lambda _name: Catalog(),
    evolve=evolve,
    codec=Codec(encode, decode),
    view=_no_view,
    ops=ops.OPS,
    declared=_declared,
    resident=True,
    snapshot=StateCodec(lambda c: dict(c.worlds), lambda d: Catalog(dict(d))),
    listed=False,
)
