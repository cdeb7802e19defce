"""Dealing rules (one test per surface) and the canary report rules (one test per rule)."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.lab.dealing import (
    CANARY_WINDOW,
    NEAREST_ON_LADDER,
    CanaryBook,
    Verdict,
    breeding_parents,
    canary_backlog,
    cross_refusal,
    gallery,
    owner_pair,
    public_pair,
)
from actors.lab.organism import Organism
from actors.lab.ratings import Rating
from actors.lab.seeding import rng_for


def org(
    oid: str,
    *,
    track: str = "shader",
    ok: bool = False,
    status: str = "alive",
    error: str | None = None,
    mu: float = 25.0,
    judged: int = 0,
    benched: bool = False,
    code: str | None = None,
) -> Organism:
    return Organism(
        oid,
        track,
        code or f"void main() {{ fragColor = vec4({oid!r}); }}",
        status=status,
        render_ok=ok,
        error=error,
        rating=Rating(mu, 1.0),
        judged=judged,
        benched=benched,
    )


def rngs(n: int = 200):
    return (rng_for(1, "dealing", i) for i in range(n))


# --- surfaces ------------------------------------------------------------------------------


def test_owner_pairs_are_alive_without_error_and_deal_the_unproven() -> None:
    pool = [
        org("dead", status="dead", error="ERROR: x"),
        org("err", error="ERROR: y"),
        org("p1", ok=True),
        org("p2", ok=True),
        org("u1"),
        org("panel", track="panel"),
    ]
    seen = set()
    for rng in rngs():
        a, b = owner_pair(pool, "shader", rng)
        assert a.id == "u1"  # the unproven organism is dealt here
        seen.update((a.id, b.id))
    assert seen == {"u1", "p1", "p2"}
    proven_only = [o for o in pool if o.id != "u1"]
    assert {frozenset(x.id for x in owner_pair(proven_only, "shader", r)) for r in rngs()} == {
        frozenset({"p1", "p2"})
    }
    assert owner_pair([org("lonely")], "shader", rng_for(1, "dealing")) is None


def test_breeding_parents_prefer_the_proven() -> None:
    pool = [org("p1", ok=True), org("p2", ok=True), org("u1"), org("u2")]
    for rng in rngs():
        assert {o.id for o in breeding_parents(pool, "shader", rng)} == {"p1", "p2"}
    # a single proven organism is still preferred: it is crossed with itself
    lone = [org("p1", ok=True), org("u1"), org("u2")]
    assert [o.id for o in breeding_parents(lone, "shader", rng_for(1, "dealing"))] == ["p1", "p1"]


def test_breeding_uses_the_whole_alive_pool_only_when_none_is_proven() -> None:
    pool = [org("u1"), org("u2"), org("u3"), org("gone", status="dead", error="ERROR: z")]
    seen = set()
    for rng in rngs():
        a, b = breeding_parents(pool, "shader", rng)
        assert a.id != b.id
        seen.update((a.id, b.id))
    assert seen == {"u1", "u2", "u3"}
    assert breeding_parents([org("gone", status="dead")], "shader", rng_for(1, "dealing")) is None


def test_public_pairs_are_proven_without_error_when_no_backlog() -> None:
    pool = [
        org("p1", ok=True),
        org("p2", ok=True),
        org("bad", ok=True, error="ERROR"),
        org("dead", ok=True, status="dead"),
        org("panel", ok=True, track="panel"),
    ]
    for rng in rngs():
        pair = public_pair(pool, rng)
        assert {pair.left.id, pair.right.id} == {"p1", "p2"} and pair.canary is None


def test_public_pair_carries_one_canary_against_a_near_proven_partner() -> None:
    proven = [org(f"p{i}", ok=True, mu=float(i)) for i in range(20)]
    canary = org("c", mu=10.2)
    nearest = {f"p{i}" for i in sorted(range(20), key=lambda i: abs(i - 10.2))[:NEAREST_ON_LADDER]}
    partners = set()
    for rng in rngs():
        pair = public_pair([*proven, canary], rng)
        assert pair.canary == "c" and "c" in (pair.left.id, pair.right.id)
        partner = pair.right if pair.left.id == "c" else pair.left
        assert partner.proven
        partners.add(partner.id)
    assert partners == nearest


def test_canary_partner_prefers_one_that_is_not_a_token_near_copy() -> None:
    code = "void main() { vec2 uv = gl_FragCoord.xy / u_res; fragColor = vec4(uv, 1.0, 1.0); }"
    twin = org("twin", ok=True, mu=10.0, code=code)
    other = org("other", ok=True, mu=9.0, code="float f(){return 2.0;} void main(){ x; }")
    canary = org("c", mu=10.0, code=code.replace("1.0, 1.0", "1.0, 0.9"))
    for rng in rngs(50):
        pair = public_pair([twin, other, canary], rng)
        assert {pair.left.id, pair.right.id} == {"c", "other"}
    # with only a near copy available it is still dealt
    assert public_pair([twin, canary], rng_for(1, "dealing")).canary == "c"


def test_no_error_and_benched_organisms_stay_out_of_the_canary_backlog() -> None:
    pool = [
        org("dead", status="dead", error="ERROR"),
        org("err", error="ERROR"),
        org("benched", benched=True),
        org("u"),
        org("p", ok=True),
    ]
    assert [o.id for o in canary_backlog(pool)] == ["u"]


def test_gallery_is_proven_without_error_and_judged_at_least_once() -> None:
    pool = [
        org("a", ok=True, judged=3, mu=30),
        org("b", ok=True, judged=0),
        org("c", judged=5),
        org("d", ok=True, judged=2, error="ERROR"),
        org("e", ok=True, judged=1, mu=40),
    ]
    assert [o.id for o in gallery(pool)] == ["e", "a"]


def test_visitor_cross_needs_two_proven_parents() -> None:
    assert cross_refusal(org("a", ok=True), org("b", ok=True)) is None
    assert cross_refusal(org("a", ok=True), org("b")) == "parent not proven"
    assert cross_refusal(org("a", ok=True), org("b", ok=True, error="E")) == "parent not proven"
    assert (
        cross_refusal(org("a", ok=True), org("b", ok=True, track="panel"))
        == "parents on different tracks"
    )


# --- canary report rules ----------------------------------------------------------------------

T0 = 1_000.0


def dealt(*clients: str, oid: str = "c") -> CanaryBook:
    book = CanaryBook()
    for client in clients:
        book = book.deal(client, [oid, "p"], T0)
    return book


def test_report_accepted_only_from_the_dealt_client_within_ten_minutes() -> None:
    book, canary = dealt("alice"), org("c")
    assert book.report("mallory", canary, True, T0 + 1)[1] is Verdict.REFUSED  # blind post
    assert CanaryBook().report("alice", canary, True, T0)[1] is Verdict.REFUSED  # never dealt
    assert book.report("alice", canary, True, T0 + CANARY_WINDOW + 1)[1] is Verdict.REFUSED
    assert book.report("alice", canary, True, T0 + CANARY_WINDOW)[1] is Verdict.PROVEN


def test_positive_report_proves_negative_report_is_only_a_strike() -> None:
    book, canary = dealt("alice"), org("c")
    assert book.report("alice", canary, True, T0 + 5) == (book, Verdict.PROVEN)
    struck, verdict = book.report("alice", canary, False, T0 + 5)
    assert verdict is Verdict.STRUCK and struck.strikes == {"c": frozenset({"alice"})}
    assert struck.dealt == book.dealt


def test_strikes_from_two_distinct_clients_bench() -> None:
    book, canary = dealt("alice", "bob"), org("c")
    book, v1 = book.report("alice", canary, False, T0 + 1)
    book, v2 = book.report("alice", canary, False, T0 + 2)  # same client again: no bench
    assert (v1, v2) == (Verdict.STRUCK, Verdict.STRUCK)
    book, v3 = book.report("bob", canary, False, T0 + 3)
    assert v3 is Verdict.BENCHED
    benched = attrs.evolve(canary, benched=True)
    assert canary_backlog([benched]) == []  # no longer dealt as a canary
    assert (
        owner_pair([benched, org("p", ok=True)], "shader", rng_for(1, "dealing"))[0].id == "c"
    )  # not dead: the owner can prove it


def test_vote_on_a_canary_accepted_from_its_client_before_the_report() -> None:
    book = dealt("alice")
    assert book.accepts_vote("alice", "c", T0 + 10)
    assert not book.accepts_vote("bob", "c", T0 + 10)
    assert not book.accepts_vote("alice", "c", T0 + CANARY_WINDOW + 10)


@pytest.mark.parametrize(
    "state", [{"ok": True}, {"status": "dead", "error": "ERROR: x"}, {"error": "ERROR: y"}]
)
def test_report_on_proven_or_dead_organism_changes_nothing(state: dict) -> None:
    book = dealt("alice")
    for drew in (True, False):
        assert book.report("alice", org("c", **state), drew, T0 + 1) == (book, Verdict.NO_CHANGE)


def test_prune_forgets_old_deals_but_keeps_strikes() -> None:
    book, _ = dealt("alice").report("alice", org("c"), False, T0 + 1)
    pruned = book.prune(T0 + CANARY_WINDOW + 1)
    assert pruned.dealt == {} and pruned.strikes == book.strikes


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["deal", "report+", "report-"]),
                          st.sampled_from(["k1", "k2", "k3"]),
                          st.floats(min_value=0, max_value=2 * CANARY_WINDOW)), max_size=30))
def test_canary_book_property(events) -> None:
    """Whatever the order of deals and reports: refused reports change nothing, proof needs a
    deal to that client within the window, and benching needs two distinct strikers."""
    book, canary, strikers = CanaryBook(), org("c"), set()
    for kind, client, now in sorted(events, key=lambda e: e[2]):
        if kind == "deal":
            book = book.deal(client, ["c"], now)
            continue
        dealt_ok = book.was_dealt(client, "c", now)
        new, verdict = book.report(client, canary, kind == "report+", now)
        if not dealt_ok:
            assert (new, verdict) == (book, Verdict.REFUSED)
        elif kind == "report+":
            assert verdict is Verdict.PROVEN and new == book
        else:
            strikers.add(client)
            assert verdict is (Verdict.BENCHED if len(strikers) >= 2 else Verdict.STRUCK)
            assert new.strikes["c"] == frozenset(strikers)
        book = new
