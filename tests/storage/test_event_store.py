"""The EventStore contract, run against every backend: memory, SQLite and PostgreSQL.

Fencing needs two writers: `backend.client()` opens a second client of the same streams
(a second SQLite writer process on the same file, a second PostgreSQL store, a memory
store sharing the first one's dicts), as another server process would be.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
import trio

from actors.store import (
    MAX_REV,
    MAX_STREAM_BYTES,
    ConflictError,
    EventStore,
    FencedError,
    Receipt,
    Snapshot,
    decoded,
)
from tests.server.garbage import collector_off, cyclic_garbage
from tests.storage.conftest import Backend


async def test_append_then_read_in_order(store: EventStore) -> None:
    assert await store.append("a:1", 0, [{"n": 1}, {"n": 2}]) == 2
    assert await store.append("a:1", 2, [{"n": 3}]) == 3
    events = await store.read("a:1")
    assert [(e.rev, e.data) for e in events] == [(1, {"n": 1}), (2, {"n": 2}), (3, {"n": 3})]
    assert [e.rev for e in await store.read("a:1", after=2)] == [3]
    assert await store.read("a:1", after=3) == []
    assert await store.revision("a:1") == 3
    assert await store.revision("a:nothing") == 0
    assert await store.read("a:nothing") == []


async def test_a_read_stops_at_upto(store: EventStore) -> None:
    await store.append("a:1", 0, [{"n": n} for n in range(1, 6)])
    assert [(e.rev, e.data) for e in await store.read("a:1", upto=3)] == [
        (1, {"n": 1}), (2, {"n": 2}), (3, {"n": 3})]
    assert [e.rev for e in await store.read("a:1", after=1, upto=3)] == [2, 3]
    assert [e.rev for e in await store.read("a:1", after=4, upto=MAX_REV)] == [5]
    assert await store.read("a:1", upto=0) == []
    assert await store.read("a:1", after=3, upto=3) == []
    assert await store.read("a:1", after=4, upto=2) == []


async def test_read_rows_are_the_events_as_text_and_decode_in_order(store: EventStore) -> None:
    events = [{"n": 1}, {"big": 2**70, "s": "é\u0000😀", "nested": [{"a": None}]}, {}, {"n": 4}]
    await store.append("a:1", 0, events)
    rows = await store.read_rows("a:1", after=1, upto=3)
    assert [(rev, json.loads(text)) for rev, text in rows] == [
        (e.rev, e.data) for e in await store.read("a:1", after=1, upto=3)] == [
        (2, events[1]), (3, {})]
    assert [rev for rev, _ in await store.read_rows("a:1")] == [1, 2, 3, 4]
    assert await store.read_rows("a:nothing") == []
    each = decoded(rows)
    assert next(each) == events[1]
    assert [rev for rev, _ in rows] == [3]  # the decoded row left the list
    assert list(each) == [{}]
    assert rows == []


async def test_an_append_tells_each_event_s_size_as_stored(store: EventStore) -> None:
    """`sizes` gets the bytes of each event's stored text (what a client's budget of bytes
    stored is charged: server/stored.py), from the append's own encoding."""
    events = [{"n": 1}, {"s": "é\u0000😀" * 3, "nested": [{"a": None}]}, {}]
    sizes: list[int] = []
    await store.append("a:1", 0, events, sizes=sizes)
    await store.append("a:1", 3, [{"n": 4}])  # (none asked: none told)
    rows = await store.read_rows("a:1", upto=3)
    assert sizes == [len(text.encode()) for _, text in rows]
    assert sizes[1] > len(json.dumps(events[1], ensure_ascii=False).encode())  # escaped


@pytest.mark.parametrize("as_rows", [False, True])
@pytest.mark.parametrize(("after", "upto", "refused"), [
    (-1, None, "after is -1"), (MAX_REV + 1, None, f"after is {MAX_REV + 1}"),
    (0, -1, "upto is -1"), (0, MAX_REV + 1, f"upto is {MAX_REV + 1}")])
async def test_a_read_bound_that_is_not_a_revision_is_refused(
        store: EventStore, as_rows: bool, after: int, upto: int | None, refused: str) -> None:
    await store.append("a:1", 0, [{}, {}])
    read = store.read_rows if as_rows else store.read
    with pytest.raises(ValueError, match=rf"^{refused}, not a revision \(0\.\.{MAX_REV}\)$"):
        await read("a:1", after=after, upto=upto)


async def test_event_values_come_back_exactly(store: EventStore) -> None:
    event = {"big": 2**70, "neg": -(2**63), "f": 0.1, "s": "é\u0000\"\\😀", "nested": [{"a": None}]}
    await store.append("a:1", 0, [event, {}])
    assert [e.data for e in await store.read("a:1")] == [event, {}]


async def test_key_order_is_kept(store: EventStore) -> None:
    await store.append("a:1", 0, [{"z": 1, "a": {"y": 2, "b": 3}}])
    (stored,) = await store.read("a:1")
    assert list(stored.data) == ["z", "a"]
    assert list(stored.data["a"]) == ["y", "b"]


async def test_wrong_expected_revision_is_a_conflict_and_writes_nothing(store: EventStore) -> None:
    await store.append("a:1", 0, [{"n": 1}])
    with pytest.raises(ConflictError, match=r"^stream 'a:1' is at revision 1, not 0$"):
        await store.append("a:1", 0, [{"n": "again"}])
    with pytest.raises(ConflictError):
        await store.append("a:1", 5, [{"n": "ahead"}])
    with pytest.raises(ConflictError, match=r"is at revision 0, not 2$"):
        await store.append("a:new", 2, [{}])
    assert [e.data for e in await store.read("a:1")] == [{"n": 1}]
    assert await store.revision("a:new") == 0


@pytest.mark.parametrize("bad", [{"x": {1, 2}}, {"x": float("nan")}, {"x": object()}])
async def test_non_json_events_are_refused_and_write_nothing(store: EventStore, bad: dict) -> None:
    with pytest.raises((TypeError, ValueError)):
        await store.append("a:1", 0, [{"fine": 1}, bad])
    assert await store.read("a:1") == []
    assert await store.append("a:1", 0, [{"n": 1}]) == 1


async def test_a_too_long_stream_name_is_refused(store: EventStore) -> None:
    name = "a:" + "é" * MAX_STREAM_BYTES
    with pytest.raises(ValueError, match="at most 255 bytes"):
        await store.append(name, 0, [{}])
    assert await store.streams() == {}
    longest = "a:" + "x" * (MAX_STREAM_BYTES - 2)
    assert await store.append(longest, 0, [{}]) == 1


async def test_snapshots_only_move_forward(store: EventStore) -> None:
    assert await store.load_snapshot("a:1") is None
    await store.save_snapshot("a:1", 3, {"total": 3})
    await store.save_snapshot("a:1", 7, {"total": 9, "list": [1, 2]})
    assert await store.load_snapshot("a:1") == Snapshot(7, {"total": 9, "list": [1, 2]})
    await store.save_snapshot("a:1", 5, {"stale": True})  # an older one never replaces it
    assert await store.load_snapshot("a:1") == Snapshot(7, {"total": 9, "list": [1, 2]})
    await store.save_snapshot("a:1", 7, {"total": 9, "again": True})  # the same rev does
    assert await store.load_snapshot("a:1") == Snapshot(7, {"total": 9, "again": True})


async def test_streams_lists_non_empty_streams_by_prefix(store: EventStore) -> None:
    await store.append("scratch:a", 0, [{}])
    await store.append("scratch:b", 0, [{}, {}])
    await store.append("lobby:main", 0, [{}])
    await store.claim("scratch:claimed")  # claimed, still empty: not listed
    assert await store.streams("scratch:") == {"scratch:a": 1, "scratch:b": 2}
    assert set(await store.streams()) == {"scratch:a", "scratch:b", "lobby:main"}


async def test_claim_bumps_the_fence_and_tells_the_revision(store: EventStore) -> None:
    """A claim's fence is greater than every earlier one of its stream (PostgreSQL draws
    them from one sequence for every stream: not 1, 2, 3 per stream)."""
    first, rev = await store.claim("a:1")
    assert first > 0 and rev == 0
    assert await store.revision("a:1") == 0
    assert await store.append("a:1", 0, [{"n": 1}, {"n": 2}]) == 2
    second, rev = await store.claim("a:1")
    assert second > first and rev == 2
    assert await store.append("a:1", 2, [{"n": 3}]) == 3  # a writer's own claims never fence it
    await store.append("a:2", 0, [{}])  # appended unclaimed (fence 0), then claimed
    fence, rev = await store.claim("a:2")
    assert fence > 0 and rev == 1


async def test_older_claimant_is_fenced_and_writes_nothing(backend: Backend) -> None:
    old, new = backend.store, await backend.client()
    held, _ = await old.claim("w:1")
    await old.append("w:1", 0, [{"by": "old"}])
    current, rev = await new.claim("w:1")  # the new owner claims, then replays
    assert current > held and rev == 1
    with pytest.raises(FencedError, match=rf"^stream 'w:1' is claimed under fence {current}; "
                                          rf"this writer holds fence {held}$") as refused:
        await old.append("w:1", 1, [{"by": "old, too late"}])
    assert (refused.value.held, refused.value.current) == (held, current)
    assert isinstance(refused.value, ConflictError)
    assert await new.append("w:1", 1, [{"by": "new"}]) == 2
    async with collector_off():  # the refusal is freed with the call, not left in a cycle
        with pytest.raises(FencedError):  # still fenced with the right revision
            await old.append("w:1", 2, [{"by": "old again"}])
        assert cyclic_garbage() == Counter()
    for reader in (old, new):
        assert [e.data["by"] for e in await reader.read("w:1")] == ["old", "new"]
    assert old.statistics().fenced == 2
    assert new.statistics().fenced == 0


async def test_an_unclaimed_stream_is_fenced_and_its_fence_never_given_out_again(
        backend: Backend) -> None:
    """`unclaim`: the claim is forgotten; an append after it (fence 0), or racing it, is
    still fenced while another writer holds a claim, or once anything was written under
    one, and a claim never hands out a fence number twice (a refused create's empty
    stream included, whether its backend forgot it or not)."""
    store, other = backend.store, await backend.client()
    first, _ = await store.claim("w:refused")
    await store.unclaim("w:refused")  # a refused create: claimed, nothing written, let go
    assert await store.revision("w:refused") == 0
    fence, rev = await other.claim("w:refused")
    assert fence > first and rev == 0
    first, _ = await store.claim("w:1")
    assert await store.append("w:1", 0, [{}]) == 1
    await store.unclaim("w:1")
    fence, rev = await other.claim("w:1")
    assert fence > first and rev == 1
    with pytest.raises(FencedError):  # unclaimed: fence 0, refused while `other` holds one
        await store.append("w:1", 1, [{}])
    assert await other.append("w:1", 1, [{}]) == 2
    await other.unclaim("w:1")
    with pytest.raises(FencedError):  # nobody holds a claim, but one was written under
        await store.append("w:1", 2, [{}])
    assert await store.streams("w:") == {"w:1": 2}


async def test_a_writer_that_never_claimed_is_fenced_once_someone_claims(backend: Backend) -> None:
    anyone, owner = backend.store, await backend.client()
    await anyone.append("w:1", 0, [{"n": 1}])  # fence 0: nobody claimed it yet
    await owner.claim("w:1")
    with pytest.raises(FencedError, match="holds fence 0$"):
        await anyone.append("w:1", 1, [{"n": 2}])
    with pytest.raises(FencedError):  # a new stream claimed before its first append
        await owner.claim("w:2")
        await anyone.append("w:2", 0, [{}])
    assert await owner.append("w:1", 1, [{"n": 2}]) == 2
    assert await anyone.read("w:2") == []


async def test_a_batch_with_one_fenced_stream_commits_the_others(backend: Backend) -> None:
    old, new = backend.store, await backend.client()
    for i in range(10):
        await old.claim(f"w:{i}")
    await new.claim("w:4")
    outcomes: dict[int, object] = {}

    async def append(i: int) -> None:
        try:
            outcomes[i] = await old.append(f"w:{i}", 0, [{"i": i}])
        except FencedError as exc:
            outcomes[i] = exc

    async with trio.open_nursery() as nursery:  # queued together: one batch where batched
        for i in range(10):
            nursery.start_soon(append, i)
    assert isinstance(outcomes.pop(4), FencedError)
    assert outcomes == {i: 1 for i in range(10) if i != 4}
    assert await new.read("w:4") == []
    assert await new.streams("w:") == {f"w:{i}": 1 for i in range(10) if i != 4}


async def test_concurrent_appends_isolate_a_conflicting_one(store: EventStore) -> None:
    """Concurrent appends, some with a wrong expected_rev: only those fail."""
    outcomes: dict[int, object] = {}

    async def one(i: int) -> None:
        try:
            outcomes[i] = await store.append(f"s:{i}", 0 if i % 3 else 9, [{"i": i}])
        except ConflictError as exc:
            outcomes[i] = exc

    async with trio.open_nursery() as nursery:
        for i in range(60):
            nursery.start_soon(one, i)
    for i, outcome in outcomes.items():
        if i % 3:
            assert outcome == 1
            assert [e.data for e in await store.read(f"s:{i}")] == [{"i": i}]
        else:
            assert isinstance(outcome, ConflictError)
            assert await store.read(f"s:{i}") == []


async def test_appends_to_one_stream_queued_together_keep_their_order(store: EventStore) -> None:
    """Several appends to one stream waiting at once: each lands after the one before."""
    order: list[int] = []

    async def one(k: int) -> None:
        order.append(await store.append("s:1", k, [{"k": k}]))

    async with trio.open_nursery() as nursery:
        for k in range(5):
            nursery.start_soon(one, k)
            await trio.lowlevel.checkpoint()  # queued in this order
    assert sorted(order) == [1, 2, 3, 4, 5]
    assert [e.data["k"] for e in await store.read("s:1")] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
                         indirect=True)
async def test_group_commit_costs_fewer_commits_than_appends(store: EventStore) -> None:
    n = 200
    async with trio.open_nursery() as nursery:
        for i in range(n):
            nursery.start_soon(store.append, f"s:{i}", 0, [{"i": i}])
    stats = store.statistics()
    assert (stats.appends, stats.events) == (n, n)
    assert stats.commits < n
    assert stats.appends_per_commit > 1
    assert await store.streams("s:") == {f"s:{i}": 1 for i in range(n)}


async def test_receipts_are_stored_with_their_events(store: EventStore) -> None:
    first = Receipt(2, "ann", "req-1", {"total": 3, "list": [1, 2.5, None], "big": 2**70})
    assert await store.append("a:1", 0, [{"n": 1}, {"n": 2}], [first]) == 2
    assert await store.append("a:1", 2, [{"n": 3}]) == 3  # a write without a request id
    other = Receipt(4, "anonymous~0f3é", "req-1", 1)  # another caller's, the same id
    second = Receipt(5, "ann", "req-2", {"é": "😀"})
    assert await store.append("a:1", 3, [{"n": 4}, {"n": 5}], [other, second]) == 5
    assert await store.receipts("a:1") == [first, other, second]
    assert await store.receipts("a:1", after=4) == [second]
    assert await store.receipts("a:nothing") == []


async def test_forgotten_receipts_are_those_up_to_the_revision_named(store: EventStore) -> None:
    kept = [Receipt(rev, "ann", f"r{rev}", {"rev": rev}) for rev in range(1, 6)]
    await store.append("a:1", 0, [{"n": n} for n in range(5)], kept)
    await store.append("a:2", 0, [{}], [Receipt(1, "bob", "r1", 1)])
    await store.forget_receipts("a:1", 3)
    assert await store.receipts("a:1") == kept[3:]
    await store.forget_receipts("a:1", 2)  # nothing more to forget
    assert await store.receipts("a:1") == kept[3:]
    assert await store.receipts("a:2") == [Receipt(1, "bob", "r1", 1)]  # another stream's
    await store.forget_receipts("a:nothing", 9)
    assert [e.rev for e in await store.read("a:1")] == [1, 2, 3, 4, 5]  # events untouched


@pytest.mark.parametrize("rev", [0, 3])
async def test_a_receipt_outside_its_events_is_refused_and_writes_nothing(
        store: EventStore, rev: int) -> None:
    with pytest.raises(ValueError, match="receipt 'r' is at revision"):
        await store.append("a:1", 0, [{}, {}], [Receipt(rev, "ann", "r", {})])
    assert await store.read("a:1") == []
    assert await store.receipts("a:1") == []


async def test_a_refused_append_stores_none_of_its_receipts(backend: Backend) -> None:
    old, new = backend.store, await backend.client()
    await old.claim("w:1")
    await old.append("w:1", 0, [{}], [Receipt(1, "ann", "kept", {})])
    with pytest.raises(ConflictError):
        await old.append("w:1", 0, [{}], [Receipt(1, "ann", "conflict", {})])
    await new.claim("w:1")
    with pytest.raises(FencedError):
        await old.append("w:1", 1, [{}], [Receipt(2, "ann", "fenced", {})])
    assert [r.request_id for r in await new.receipts("w:1")] == ["kept"]
