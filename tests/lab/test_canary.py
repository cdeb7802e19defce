"""The seed's canary rules through the lab's ops: a report is accepted only for an id
dealt to that client key within ten minutes; a positive one proves, a negative one is an
in-memory strike; two distinct client keys bench; a report on a proven or dead organism
changes nothing; a canary's vote is accepted from the client it was dealt to only."""

from __future__ import annotations

import pytest

from actors.lab.offers import client_refusal
from actors.lab.state import CANARY_WINDOW_MS
from actors.world import Refusal
from protocol.errors import ProtocolError
from protocol.ops.lab import LabCode
from tests.lab.lab_world import JUDGE, LabRun, born


@pytest.fixture
def lab() -> tuple[LabRun, str]:
    """Two proven shaders and one unproven: every public pair carries it as the canary."""
    run = LabRun()
    p1, p2, canary = born(run, 3)
    run("lab.ok", id=p1)
    run("lab.ok", id=p2)
    return run, canary


def deal(run: LabRun, client: str):
    pair = run("lab.public_pair", JUDGE, client_key=client)
    assert not isinstance(pair, Refusal), pair
    return pair


def unchanged(run: LabRun, action) -> object:
    """Run `action`, asserting it stored nothing and left the state as it was."""
    before, stored = run.state, len(run.stored)
    reply = action()
    assert run.state == before and len(run.stored) == stored
    return reply


def test_every_public_pair_carries_the_one_canary(lab) -> None:
    run, canary = lab
    for k in range(10):
        pair = deal(run, f"k{k}")
        assert pair.canary == canary and canary in (pair.left.id, pair.right.id)


def test_a_blind_report_naming_an_arbitrary_id_does_nothing(lab) -> None:
    run, canary = lab
    for oid in (canary, "s-0123456789abcdef", "made-up"):
        refused = unchanged(run, lambda oid=oid: run("lab.seen", JUDGE, id=oid,
                                                     client_key="mallory", ok=True))
        assert refused.code == LabCode.NOT_DEALT
    assert not run.state.organisms[canary].render_ok


def test_a_report_from_another_client_or_after_ten_minutes_does_nothing(lab) -> None:
    run, canary = lab
    deal(run, "alice")
    refused = unchanged(run, lambda: run("lab.seen", JUDGE, id=canary, client_key="bob", ok=True))
    assert refused.code == LabCode.NOT_DEALT
    run.t += CANARY_WINDOW_MS + 1
    late = unchanged(run, lambda: run("lab.seen", JUDGE, id=canary, client_key="alice", ok=True))
    assert late.code == LabCode.NOT_DEALT


def test_a_positive_report_sets_render_ok(lab) -> None:
    run, canary = lab
    deal(run, "alice")
    run.t += CANARY_WINDOW_MS  # the edge of the window is inside it
    assert run("lab.seen", JUDGE, id=canary, client_key="alice", ok=True).verdict == "proven"
    assert run.state.organisms[canary].render_ok
    assert run.replay().organisms[canary].render_ok  # durable


def test_a_negative_report_is_an_in_memory_strike_and_nothing_more(lab) -> None:
    run, canary = lab
    deal(run, "alice")
    stored = len(run.stored)
    assert run("lab.seen", JUDGE, id=canary, client_key="alice", ok=False).verdict == "struck"
    assert run.state.strikes == {canary: frozenset({"alice"})}
    assert len(run.stored) == stored  # nothing durable
    o = run.state.organisms[canary]
    assert o.live and not o.render_ok and canary not in run.state.benched
    assert run.replay().strikes == {}  # a restart forgets it


def test_strikes_from_two_distinct_client_keys_bench(lab) -> None:
    run, canary = lab
    deal(run, "alice")
    deal(run, "bob")
    assert run("lab.seen", JUDGE, id=canary, client_key="alice", ok=False).verdict == "struck"
    assert run("lab.seen", JUDGE, id=canary, client_key="alice", ok=False).verdict == "struck"
    assert canary not in run.state.benched  # the same key twice is one striker
    assert run("lab.seen", JUDGE, id=canary, client_key="bob", ok=False).verdict == "benched"
    assert canary in run.state.benched
    for k in range(10):  # no longer dealt as a canary
        assert deal(run, f"x{k}").canary is None
    o = run.state.organisms[canary]
    assert o.status == "alive" and o.error is None  # not dead
    owner = run("lab.pair", track="shader")
    assert owner.left.id == canary  # the owner's arena still deals it...
    assert run("lab.ok", id=canary).changed  # ...and can still prove it
    assert run.replay().benched == frozenset()  # benching lives in memory with the strikes


def test_a_client_that_struck_a_canary_is_dealt_proven_pairs(lab) -> None:
    """A lone judge whose browser cannot draw the only canary was dealt it again and again
    (until a second key struck it), never a pair it could vote on."""
    run, canary = lab
    deal(run, "alice")
    assert run("lab.seen", JUDGE, id=canary, client_key="alice", ok=False).verdict == "struck"
    proven = {oid for oid, o in run.state.organisms.items() if o.render_ok}
    for _ in range(10):
        pair = deal(run, "alice")
        assert pair.canary is None and {pair.left.id, pair.right.id} == proven
    assert deal(run, "bob").canary == canary  # one strike benches nothing


def test_a_benched_organism_takes_no_more_strikes(lab) -> None:
    """Two keys bench; a canary dealt to many keys before that must not keep a strike for
    each of them (memory, and a set copied per strike, that only a restart would free)."""
    run, canary = lab
    for k in range(5):
        deal(run, f"k{k}")
    assert run("lab.seen", JUDGE, id=canary, client_key="k0", ok=False).verdict == "struck"
    assert run("lab.seen", JUDGE, id=canary, client_key="k1", ok=False).verdict == "benched"
    for k in range(2, 5):
        seen = unchanged(run, lambda k=k: run("lab.seen", JUDGE, id=canary,
                                              client_key=f"k{k}", ok=False))
        assert seen.verdict == "no_change"
    assert run.state.strikes == {canary: frozenset({"k0", "k1"})}
    assert run("lab.seen", JUDGE, id=canary, client_key="k2", ok=True).verdict == "proven"

@pytest.mark.parametrize("state", ["proven", "dead"])
def test_a_report_on_a_proven_or_dead_organism_changes_nothing(lab, state: str) -> None:
    run, canary = lab
    deal(run, "alice")
    if state == "proven":
        run("lab.ok", id=canary)
    else:
        run("lab.invalid", id=canary, log="ERROR: 0:1: link failed")
    for ok in (True, False):
        seen = unchanged(run, lambda ok=ok: run("lab.seen", JUDGE, id=canary,
                                                client_key="alice", ok=ok))
        assert seen.verdict == "no_change"
    assert run.state.strikes == {}


def test_a_dead_organism_is_never_dealt_as_a_canary(lab) -> None:
    run, canary = lab
    run("lab.invalid", id=canary, log="ERROR: x")
    for k in range(10):
        pair = deal(run, f"k{k}")
        assert pair.canary is None and canary not in (pair.left.id, pair.right.id)


def test_a_vote_on_a_canary_from_another_client_is_refused(lab) -> None:
    run, canary = lab
    pair = deal(run, "alice")
    refused = unchanged(run, lambda: run("lab.vote", JUDGE, pair=pair.pair, winner=canary,
                                         client_key="bob"))
    assert refused.code == LabCode.NOT_DEALT


def test_a_canary_vote_before_its_render_report_is_accepted_once(lab) -> None:
    run, canary = lab
    pair = deal(run, "alice")
    voted = run("lab.vote", JUDGE, pair=pair.pair, winner=canary, client_key="alice")
    assert voted.winner.id == canary and voted.winner.judged == 1
    assert not run.state.organisms[canary].render_ok  # the vote proves nothing
    again = unchanged(run, lambda: run("lab.vote", JUDGE, pair=pair.pair, winner=canary,
                                       client_key="alice"))
    assert again.code == LabCode.NOT_DEALT  # one vote per dealt pair
    # the render report still counts after the vote
    assert run("lab.seen", JUDGE, id=canary, client_key="alice", ok=True).verdict == "proven"


def test_a_vote_names_one_of_the_pair_within_the_window(lab) -> None:
    run, canary = lab
    pair = deal(run, "alice")
    stranger = next(o for o in run.state.organisms if o not in (pair.left.id, pair.right.id))
    wrong = run("lab.vote", JUDGE, pair=pair.pair, winner=stranger, client_key="alice")
    assert wrong.code == LabCode.NOT_IN_PAIR
    run.t += CANARY_WINDOW_MS + 1
    late = run("lab.vote", JUDGE, pair=pair.pair, winner=canary, client_key="alice")
    assert late.code == LabCode.NOT_DEALT


def test_an_empty_client_key_is_refused(lab) -> None:
    """By the converter (the schema's minLength), and by the lab for a caller that skips it."""
    run, canary = lab
    for op, args in (("lab.public_pair", {}), ("lab.seen", {"id": canary, "ok": True}),
                     ("lab.cross", {"a": canary, "b": canary})):
        with pytest.raises(ProtocolError) as err:
            run(op, JUDGE, client_key="", **args)
        assert (err.value.code, str(err.value), err.value.detail) == (
            "bad_request", "args.client_key: at least 1 character", {"path": "args.client_key"})
    refused = client_refusal("")
    assert refused is not None and refused.message == "client_key is empty"
    assert refused.detail == {"path": "args.client_key"}


def test_deals_draw_fresh_pairs_at_one_revision() -> None:
    """Deals are in-memory events that do not move the revision, yet each one draws anew."""
    run = LabRun()
    for oid in born(run, 6):
        run("lab.ok", id=oid)
    rev = run.rev
    pairs = {frozenset((p.left.id, p.right.id)) for p in (deal(run, "k") for _ in range(30))}
    assert run.rev == rev and len(pairs) > 5
