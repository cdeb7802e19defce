"""The lab's durable state is its event stream: every event round-trips through the JSON
codec, a replay of the stored (non-transient) events gives the identical pool, the
snapshot keeps the same pool, and every op's args are bounded."""

from __future__ import annotations

import json
import typing

import attrs
import cattrs
import pytest

from actors.lab.breed import generate
from actors.lab.directives import Directive
from actors.lab.events import (
    Benched,
    Born,
    Created,
    DirectiveAdded,
    Killed,
    PairDealt,
    Proven,
    Rejected,
    Struck,
    VoteCast,
    decode,
    encode,
    is_transient,
)
from actors.lab.organism import organism_id
from actors.lab.ratings import Rating
from actors.lab.rules import WORLD
from actors.lab.state import dump, evolve, initial, load
from protocol.bounds import bounds_of
from protocol.ops import lab as ops
from protocol.registry import Registry
from protocol.schema import registry_schema
from tests.lab.lab_world import JUDGE, LabRun, born

GENOME, CODE = next(generate("shader", 3, 1))
PANEL_GENOME, PANEL_CODE = next(generate("panel", 3, 1))
EVENTS = [
    Created(7),
    DirectiveAdded(Directive("ds-1", "shader", "Calm and slow", ("ds-0",), "mutate",
                             Rating(26.5, 7.25)), 5),
    Born("s-1", "shader", CODE, "Soft Glow", ("s-a", "s-b"), "ds-1", "cross", "v1", GENOME,
         None, 9),
    Born("p-1", "panel", PANEL_CODE, None, (), None, "daemon", "", PANEL_GENOME, "prompt", 9),
    Born("s-2", "shader", "void main() {}", None, (), None, "model", "", None, "p", 10),
    Rejected("shader", "x", "too short", "daemon", "", ("s-1",), 11),
    Rejected("shader", "x" * 10, "too short", "model", "", (), 11, "s-0123456789abcdef"),
    Proven("s-1", "public", "k1", 12),
    Killed("s-2", "ERROR: 0:1: x", 13),
    VoteCast("ab12", "s-1", "s-2", "owner", "owner:me", 14, Rating(27.1, 8.0),
             Rating(22.9, 8.0), (("ds-1", Rating(26.0, 8.1)), ("ds-2", Rating(24.0, 8.1)))),
    PairDealt("ab12", "public", "k1", "s-1", "s-2", "s-2", 15),
    Struck("s-2", "k1"),
    Benched("s-2"),
]


@pytest.mark.parametrize("event", EVENTS, ids=[type(e).__name__ for e in EVENTS])
def test_every_event_round_trips_through_json(event) -> None:
    data = json.loads(json.dumps(encode(event)))
    assert data["type"] and decode(data) == event


def test_only_the_seeds_in_memory_records_are_transient() -> None:
    assert [type(e).__name__ for e in EVENTS if is_transient(e)] == [
        "PairDealt", "Struck", "Benched"]
    assert WORLD.transient is is_transient


def test_an_unknown_event_type_or_field_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^unknown lab event type 'exploded'$"):
        decode({"type": "exploded"})
    with pytest.raises(cattrs.ClassValidationError, match=r"^While structuring Created"):
        decode({"type": "created", "seed": 1, "colour": "red"})


def test_a_rejection_stored_before_its_id_was_is_known_by_its_whole_code() -> None:
    # Rejections stored before the record kept the candidate's id held its whole code.
    old = {"type": "rejected", "track": "shader", "code": "x" * 59, "reason": "too short",
           "source": "owner", "client": "", "parents": [], "t": 3}
    rejected = decode(old)
    assert rejected.id == ""
    state = evolve(initial("main"), rejected)
    assert state.rejections == {organism_id("shader", "x" * 59): ("too short", "")}


def session() -> LabRun:
    """A lab that saw every kind of event: births, rejections, verdicts, deals, reports,
    strikes, a bench, votes (owner and public), a cross and directive genes."""
    run = LabRun()
    d1 = run("lab.directive_add", text="Calm and meditative in deep teals with soft blobs")
    d2 = run("lab.directive_add", text="Restless and electric in acid greens, shattered shards")
    run("lab.directive_mutate", winner=d1.id, loser=d2.id)
    run("lab.birth", code=CODE, title="Soft Glow", directive=d1.id)
    run("lab.birth", code="uniform float u_x;\n" + CODE)  # rejected
    ids = born(run, 6)
    born(run, 2, "panel")
    for oid in ids[:3]:
        run("lab.ok", id=oid)
    run("lab.invalid", id=ids[3], log="ERROR: 0:9: 'q' : undeclared identifier\n")
    for k in range(6):
        client = f"k{k % 3}"
        pair = run("lab.public_pair", JUDGE, client_key=client)
        if pair.canary:
            run("lab.seen", JUDGE, id=pair.canary, client_key=client, ok=k % 2 == 0)
        run("lab.vote", JUDGE, pair=pair.pair, winner=pair.left.id, client_key=client)
        run.t += 1_000
    owner = run("lab.pair", track="shader")
    run("lab.vote", pair=owner.pair, winner=owner.right.id)
    run("lab.cross", JUDGE, a=ids[0], b=ids[1], client_key="visitor")
    return run


def test_a_replay_of_the_stored_events_gives_the_identical_pool() -> None:
    run = session()
    assert run.transient > 0 and run.state.votes == 7
    replayed = run.replay()
    assert replayed.pool() == run.state.pool()
    # what stays in memory is gone after a restart, as the seed says
    assert (len(replayed.deals), len(replayed.dealt), replayed.strikes, replayed.benched) == (
        0, 0, {}, frozenset())
    assert len(run.state.dealt) > 0  # (every pair dealt here had its vote)


def test_the_snapshot_keeps_the_pool() -> None:
    run = session()
    text = json.dumps(WORLD.snapshot.dump(run.state))
    assert load(json.loads(text)).pool() == run.state.pool()
    assert dump(run.replay()) == dump(run.state)


def test_a_snapshot_taken_before_crosses_kept_their_client_loads() -> None:
    """Older snapshots held rejections as (id, reason) pairs and organisms without a client;
    they load with no client, as the events they were folded from had none."""
    run = session()
    old = dump(run.state)
    old["rejections"] = [[oid, reason] for oid, reason, _ in old["rejections"]]
    for o in old["organisms"]:
        del o["client"]
    state = load(json.loads(json.dumps(old)))
    assert state.rejections == {k: (v, "") for k, (v, _) in run.state.rejections.items()}
    assert {o.client for o in state.organisms.values()} == {""}
    assert "visitor" in {o.client for o in run.state.organisms.values()}


def test_the_view_shows_counts_only() -> None:
    run = session()
    view = WORLD.view(run.state)
    assert set(view) == {"organisms", "proven", "dead", "directives", "rejected", "votes"}
    assert all(isinstance(v, int) for v in view.values())


_UNBOUNDED_OK = (bool, type(None))


def _needs_bound(tp: typing.Any) -> bool:
    args = [a for a in typing.get_args(tp) if a not in _UNBOUNDED_OK] or [tp]
    return any(a not in _UNBOUNDED_OK for a in args)


def test_every_field_of_every_args_class_is_bounded() -> None:
    missing = []
    for spec in ops.OPS:
        hints = typing.get_type_hints(spec.args)
        for field in attrs.fields(spec.args):
            if _needs_bound(hints[field.name]) and bounds_of(field) is None:
                missing.append(f"{spec.name}.{field.name}")
    assert missing == []


def test_the_lab_ops_have_a_schema_with_their_bounds() -> None:
    schema = registry_schema(Registry(ops.OPS))
    assert set(schema["ops"]) == {spec.name for spec in ops.OPS}
    seen = schema["$defs"]["lab.SeenArgs"]["properties"]
    assert seen["client_key"]["maxLength"] == ops.MAX_CLIENT_KEY
    assert schema["$defs"]["lab.InvalidArgs"]["properties"]["log"]["maxLength"] == ops.MAX_LOG
