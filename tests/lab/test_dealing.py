"""Dealing rules over organism records, one test per surface (the same rows through the
world's ops are tests/lab/test_rules.py)."""

from __future__ import annotations

from actors.lab.dealing import (
    NEAREST_ON_LADDER,
    breeding_parents,
    canary_backlog,
    cross_refusal,
    gallery,
    owner_pair,
    public_pair,
)
from actors.lab.genome import random_genome
from actors.lab.organism import Organism
from actors.lab.ratings import Rating
from actors.lab.seeding import rng_for
from actors.world import Refusal
from protocol.ops.lab import LabCode


def org(
    oid: str,
    *,
    track: str = "shader",
    ok: bool = False,
    status: str = "alive",
    error: str | None = None,
    mu: float = 25.0,
    judged: int = 0,
    code: str | None = None,
    genome: object = None,
) -> Organism:
    return Organism(
        oid,
        track,
        code or f"void main() {{ fragColor = vec4({oid!r}); }}",
        genome=genome,
        status=status,
        render_ok=ok,
        error=error,
        rating=Rating(mu, 1.0),
        judged=judged,
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
        pair = public_pair(pool, set(), rng)
        assert {pair.left.id, pair.right.id} == {"p1", "p2"} and pair.canary is None


def test_public_pair_carries_one_canary_against_a_near_proven_partner() -> None:
    proven = [org(f"p{i}", ok=True, mu=float(i)) for i in range(20)]
    canary = org("c", mu=10.2)
    nearest = {f"p{i}" for i in sorted(range(20), key=lambda i: abs(i - 10.2))[:NEAREST_ON_LADDER]}
    partners = set()
    for rng in rngs():
        pair = public_pair([*proven, canary], set(), rng)
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
        pair = public_pair([twin, other, canary], set(), rng)
        assert {pair.left.id, pair.right.id} == {"c", "other"}
    # with only a near copy available it is still dealt
    assert public_pair([twin, canary], set(), rng_for(1, "dealing")).canary == "c"


def test_no_error_and_benched_organisms_stay_out_of_the_canary_backlog() -> None:
    pool = [
        org("dead", status="dead", error="ERROR"),
        org("err", error="ERROR"),
        org("benched"),
        org("u"),
        org("p", ok=True),
    ]
    assert [o.id for o in canary_backlog(pool, {"benched"})] == ["u"]


def test_gallery_is_proven_without_error_and_judged_at_least_once() -> None:
    pool = [
        org("a", ok=True, judged=3, mu=30),
        org("b", ok=True, judged=0),
        org("c", judged=5),
        org("d", ok=True, judged=2, error="ERROR"),
        org("e", ok=True, judged=1, mu=40),
    ]
    assert [o.id for o in gallery(pool)] == ["e", "a"]


def test_visitor_cross_needs_two_proven_grammar_shaders() -> None:
    g = random_genome(rng_for(1, "shader"))
    assert cross_refusal(org("a", ok=True, genome=g), org("b", ok=True, genome=g)) is None
    refused = cross_refusal(org("a", ok=True, genome=g), org("b", genome=g))
    assert refused == Refusal(LabCode.PARENT_NOT_PROVEN, "both parents of a cross must be proven",
                              {"unproven": ["b"]})
    assert cross_refusal(org("a", ok=True, genome=g),
                         org("b", ok=True, error="E", genome=g)).code == LabCode.PARENT_NOT_PROVEN
    assert cross_refusal(org("a", ok=True, genome=g),
                         org("b", ok=True, track="panel")).code == LabCode.NOT_CROSSABLE
    assert cross_refusal(org("a", ok=True, genome=g), org("b", ok=True)) == Refusal(
        LabCode.NOT_CROSSABLE, "only organisms the grammar wrote carry the genes a cross needs",
        {"without_genome": ["b"]})
