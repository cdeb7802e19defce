"""The lobby's rules: which worlds exist, who may create one, and how the list reads. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from protocol.envelope import ACTOR_ID_RE
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops.lobby import CreateArgs, WorldInfo
from protocol.roles import role_at_least


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


def decide_create(catalog: Catalog, args: CreateArgs, role: str, caller: str,
                  create_roles: Mapping[str, str]) -> tuple[str, list[dict[str, Any]]]:
    """The new world's id and the lobby's event, or a refusal.

    `create_roles` maps each creatable kind to the minimum role that may create it.
    """
    if args.kind not in create_roles:
        raise ProtocolError(ErrorCode.BAD_REQUEST,
                            f"args.kind: there is no world kind {args.kind[:40]!r}",
                            {"path": "args.kind", "kinds": sorted(create_roles)})
    required = create_roles[args.kind]
    if not role_at_least(role, required):
        raise ProtocolError(ErrorCode.FORBIDDEN,
                            f"creating a {args.kind} world needs the {required} role",
                            {"role": role, "required": required})
    actor_id = f"{args.kind}:{args.name}"
    if not ACTOR_ID_RE.match(actor_id):
        raise ProtocolError(ErrorCode.BAD_REQUEST,
                            "args.name: 1-80 letters, digits, '_', '.', '-', not starting with "
                            "'.'", {"path": "args.name"})
    if actor_id in catalog.worlds:
        raise ProtocolError(ErrorCode.ALREADY_EXISTS, f"the world {actor_id!r} exists",
                            {"actor": actor_id})
    return actor_id, [{"type": "world_created", "kind": args.kind, "id": actor_id,
                       "by": caller}]


def apply(catalog: Catalog, event: dict[str, Any]) -> Catalog:
    """The catalog after one event."""
    if event["type"] == "world_created":
        return Catalog({**catalog.worlds, event["id"]: event["kind"]})
    return catalog


def listing(catalog: Catalog, live: Iterable[LiveFigures]) -> list[WorldInfo]:
    """Every catalogued or live world, sorted by id; a catalogued world not live shows rev -1.

    A world that is not loaded has no revision in memory; -1 says "not known until it
    is opened" rather than inventing one.
    """
    rows = {f.actor_id: WorldInfo(f.kind, f.actor_id, f.rev, f.subscribers, True) for f in live}
    for actor_id, kind in catalog.worlds.items():
        rows.setdefault(actor_id, WorldInfo(kind, actor_id, -1, 0, False))
    return [rows[i] for i in sorted(rows)]
