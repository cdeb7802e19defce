"""The lobby's pure rules."""

from __future__ import annotations

import pytest

from actors.lobby.catalog import Catalog, LiveFigures, apply, decide_create, listing
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops.lobby import CreateArgs, WorldInfo

ROLES = {"scratch": "agent", "field": "owner"}


def test_create_decides_one_event_and_apply_records_it() -> None:
    actor_id, events = decide_create(Catalog(), CreateArgs("scratch", "a"), "agent", "ann", ROLES)
    assert actor_id == "scratch:a"
    assert events == [{"type": "world_created", "kind": "scratch", "id": "scratch:a",
                       "by": "ann"}]
    before = Catalog()
    after = apply(before, events[0])
    assert after.worlds == {"scratch:a": "scratch"} and before.worlds == {}


@pytest.mark.parametrize(("args", "role", "code", "message"), [
    (CreateArgs("nope", "a"), "owner", ErrorCode.BAD_REQUEST,
     "args.kind: there is no world kind 'nope'"),
    (CreateArgs("field", "a"), "agent", ErrorCode.FORBIDDEN,
     "creating a field world needs the owner role"),
    (CreateArgs("scratch", "a"), "spectator", ErrorCode.FORBIDDEN,
     "creating a scratch world needs the agent role"),
    (CreateArgs("scratch", "bad name"), "agent", ErrorCode.BAD_REQUEST,
     "args.name: 1-80 letters, digits, '_', '.', '-', not starting with '.'"),
    (CreateArgs("scratch", "taken"), "agent", ErrorCode.ALREADY_EXISTS,
     "the world 'scratch:taken' exists"),
])
def test_create_refusals(args: CreateArgs, role: str, code: ErrorCode, message: str) -> None:
    catalog = Catalog({"scratch:taken": "scratch"})
    with pytest.raises(ProtocolError) as err:
        decide_create(catalog, args, role, "ann", ROLES)
    assert (err.value.code, err.value.message) == (code, message)


def test_listing_merges_catalogued_and_live_worlds() -> None:
    catalog = Catalog({"scratch:a": "scratch", "scratch:b": "scratch"})
    live = [LiveFigures("scratch:b", "scratch", 7, 2), LiveFigures("field:x", "field", 3, 0)]
    assert listing(catalog, live) == [
        WorldInfo("field", "field:x", 3, 0, True),
        WorldInfo("scratch", "scratch:a", -1, 0, False),
        WorldInfo("scratch", "scratch:b", 7, 2, True),
    ]
