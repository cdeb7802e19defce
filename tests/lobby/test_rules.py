"""The lobby's pure rules."""

from __future__ import annotations

import pytest

from actors.lobby.events import WorldCreated, decode, encode
from actors.lobby.rules import Catalog, LiveFigures, Stored, decide_create, evolve, listing
from actors.world import Caller, Ctx, Refusal
from protocol.convert import structure
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops.lobby import CreateArgs, ListArgs, WorldInfo

ROLES = {"counter": "agent", "field": "owner"}


def _ctx(role: str) -> Ctx:
    return Ctx(Caller("ann", role), t=0, rev=0)


def test_create_decides_one_event_and_apply_records_it() -> None:
    events = decide_create(Catalog(), CreateArgs("counter", "a"), _ctx("agent"), ROLES)
    assert events == [WorldCreated("counter", "counter:a", "ann")]
    assert encode(events[0], None) == {"type": "world_created", "kind": "counter",
                                       "id": "counter:a", "by": "ann"}
    assert decode(encode(events[0], None)) == events[0]
    before = Catalog()
    after = evolve(before, events[0])
    assert after.worlds == {"counter:a": "counter"} and before.worlds == {}


@pytest.mark.parametrize(("args", "role", "code", "message"), [
    (CreateArgs("nope", "a"), "owner", ErrorCode.BAD_REQUEST,
     "args.kind: there is no world kind 'nope'"),
    (CreateArgs("field", "a"), "agent", ErrorCode.FORBIDDEN,
     "creating a field world needs the owner role"),
    (CreateArgs("counter", "a"), "spectator", ErrorCode.FORBIDDEN,
     "creating a counter world needs the agent role"),
    (CreateArgs("counter", "bad name"), "agent", ErrorCode.BAD_REQUEST,
     "args.name: 1-80 letters, digits, '_', '.', '-', not starting with '.'"),
    (CreateArgs("counter", "taken"), "agent", ErrorCode.ALREADY_EXISTS,
     "the world 'counter:taken' exists"),
])
def test_create_refusals(args: CreateArgs, role: str, code: ErrorCode, message: str) -> None:
    catalog = Catalog({"counter:taken": "counter"})
    refusal = decide_create(catalog, args, _ctx(role), ROLES)
    assert isinstance(refusal, Refusal)
    assert (refusal.code, refusal.message) == (code, message)


def test_listing_is_the_stored_and_live_worlds_featured_first() -> None:
    stored = {"counter:a": 4, "counter:b": 6, "field:old": 90}
    live = [LiveFigures("counter:b", "counter", 7, 2), LiveFigures("field:x", "field", 3, 0)]
    seen = {"field:old": {"state": "ended", "agents": 3}, "field:gone": {"state": "live"}}
    rows = listing(Stored(stored), live, seen, featured=["field:day-2026-12-01", "field:x"]).worlds
    assert rows == [
        WorldInfo("field", "field:x", 3, 0, True),  # featured first (the daily: not yet)
        WorldInfo("counter", "counter:a", 4, 0, False),  # stored, unloaded: its durable rev
        WorldInfo("counter", "counter:b", 7, 2, True),  # live: the live figures
        WorldInfo("field", "field:old", 90, 0, False, {"state": "ended", "agents": 3}),
    ]  # field:gone has a summary but neither a stream nor an actor: it is not listed
    assert [r.id for r in listing(Stored(stored), live, seen, kind="field").worlds] == [
        "field:old", "field:x"]
    assert listing(Stored(stored), live, seen).worlds[-1] == WorldInfo("field", "field:x", 3, 0, True)


def _pages(stored: dict[str, int], featured: list[str], limit: int,
           kind: str | None = None) -> list[list[str]]:
    """Every page of the listing, one after another, until one comes back short."""
    pages: list[list[str]] = []
    while True:
        page = listing(Stored(stored), [], {}, featured, kind, offset=len(pages) * limit, limit=limit)
        assert page.total == len([i for i in stored if kind is None or i.startswith(kind)])
        assert page.offset == len(pages) * limit
        pages.append([w.id for w in page.worlds])
        if sum(map(len, pages)) >= page.total:
            return pages


def test_listing_pages_follow_one_another_featured_first() -> None:
    stored = {f"counter:{i:02}": 1 for i in range(7)} | {"field:day": 1, "field:z": 1}
    assert _pages(stored, ["field:day"], 3) == [
        ["field:day", "counter:00", "counter:01"], ["counter:02", "counter:03", "counter:04"],
        ["counter:05", "counter:06", "field:z"]]
    assert _pages(stored, ["field:day"], 1)[:2] == [["field:day"], ["counter:00"]]
    assert _pages(stored, ["field:day"], 200) == [
        ["field:day", *sorted(set(stored) - {"field:day"})]]
    assert _pages(stored, ["field:day"], 2, kind="field") == [["field:day", "field:z"]]
    assert _pages({}, ["field:day"], 2) == [[]]  # nothing stored: one empty page
    past = listing(Stored(stored), [], {}, ["field:day"], offset=9, limit=5)
    assert (past.worlds, past.total, past.offset) == ([], 9, 9)  # past the end: empty


@pytest.mark.parametrize(("args", "path"), [
    ({"limit": 0}, "args.limit"), ({"limit": 201}, "args.limit"),
    ({"offset": -1}, "args.offset"), ({"offset": 1_000_001}, "args.offset"),
    ({"offset": "1"}, "args.offset"), ({"page": 2}, "args.page"),
])
def test_list_args_out_of_bounds_are_refused(args: dict, path: str) -> None:
    with pytest.raises(ProtocolError) as refused:
        structure(args, ListArgs)
    assert refused.value.code == ErrorCode.BAD_REQUEST
    assert refused.value.detail == {"path": path}
