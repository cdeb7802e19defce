"""What the lab's reads show a caller below the owner: a proven shader with no stored
error, and nothing else (the seed: an organism with a stored error is filtered out of every
public query, an unproven one is confined to the owner's arena, a panel lives on the
desktop). Anything else is `unknown_organism`, as an id that does not exist is; the one
exception is a visitor's own cross, which `lab.status` shows under its client key until it
is proven. The owner sees everything, as before."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
import trio

from actors.lab.events import Born, Rejected, Validating
from actors.lab.offers import decide_offer, offered, visitor_candidate
from actors.lab.organism import organism_id
from actors.lab.rules import WORLD
from actors.lab.seeding import PURPOSES
from actors.lab.views import shown_birth
from actors.world import Caller, Ctx, Refusal
from protocol.client import Client
from protocol.ops.lab import Birth, CrossArgs, LabCode
from tests.lab.lab_world import JUDGE, OWNER, LabRun
from tests.lab.live import born, new_lab, settled
from tests.server.ws_harness import Raw, raw_client, running_server

AGENT = Caller("ann", "agent")
NOWHERE = "s-0000000000000000"


def pool(run: LabRun) -> dict[str, str]:
    """Proven p and q, unproven u, dead d (each a grammar shader), and a proven panel."""
    ids = {}
    for name in ("p", "q", "u", "d"):
        ids[name] = run("lab.birth", track="shader").id
    ids["panel"] = run("lab.birth", track="panel").id
    for name in ("p", "q", "panel"):
        assert run("lab.ok", id=ids[name]).changed
    run("lab.invalid", id=ids["d"], log="ERROR: 0:3: 'secret' : undeclared identifier\n")
    return ids


def unknown(run: LabRun, caller: Caller, op: str, oid: str, **args: object) -> None:
    """`op` on `oid` is refused exactly as on an id the lab never saw."""
    nowhere = run(op, caller, id=NOWHERE, **args)
    assert isinstance(nowhere, Refusal) and nowhere.code == LabCode.UNKNOWN_ORGANISM
    assert run(op, caller, id=oid, **args) == attrs.evolve(nowhere, detail={"id": oid})


@pytest.mark.parametrize("caller", [JUDGE, AGENT])
def test_below_the_owner_status_and_lineage_show_proven_shaders_only(caller: Caller) -> None:
    run = LabRun()
    ids = pool(run)
    for hidden in ("u", "d", "panel"):
        unknown(run, caller, "lab.status", ids[hidden])
        unknown(run, caller, "lab.lineage", ids[hidden])
    shown = run("lab.status", caller, id=ids["p"])
    assert (shown.status, shown.render_ok, shown.reason) == ("alive", True, None)
    assert run("lab.lineage", caller, id=ids["p"]).ancestors[0].id == ids["p"]
    # the owner's view is unchanged: the dead one with its stored error, the others as they are
    dead = run("lab.status", OWNER, id=ids["d"])
    assert (dead.status, dead.reason) == ("dead", "ERROR: 0:3: 'secret' : undeclared identifier")
    for name in ("u", "panel"):
        assert run("lab.status", OWNER, id=ids[name]).status == "alive"
        assert run("lab.lineage", OWNER, id=ids[name]).ancestors[0].id == ids[name]


def test_a_public_lineage_drops_dead_and_unproven_ancestors() -> None:
    run = LabRun()
    first = run("lab.birth", track="shader").id  # the only one alive: the next one's parent
    child = run("lab.birth", track="shader").id
    grandchild = run("lab.birth", track="shader").id  # from the alive pool: first and child
    run("lab.ok", id=grandchild)
    run("lab.invalid", id=first, log="ERROR: gone")
    owners = run("lab.lineage", id=grandchild)
    assert {a.id for a in owners.ancestors} == {first, child, grandchild}
    assert [a.id for a in run("lab.lineage", JUDGE, id=grandchild).ancestors] == [grandchild]
    run("lab.ok", id=child)  # proven now: shown, its dead parent still not
    shown = run("lab.lineage", JUDGE, id=grandchild).ancestors
    assert {a.id for a in shown} == {child, grandchild}
    assert [a.id for a in run("lab.lineage", id=grandchild).ancestors] == \
        [a.id for a in owners.ancestors]  # the owner's, every ancestor


def test_a_visitor_sees_its_own_cross_until_it_is_proven_and_nobody_else_does() -> None:
    run = LabRun()
    ids = pool(run)
    child = run("lab.cross", JUDGE, a=ids["p"], b=ids["q"], client_key="v1")
    assert child.status == "born"
    mine = run("lab.status", JUDGE, id=child.id, client_key="v1")
    assert (mine.status, mine.render_ok) == ("alive", False)
    unknown(run, JUDGE, "lab.status", child.id, client_key="v2")
    unknown(run, JUDGE, "lab.status", child.id)
    unknown(run, JUDGE, "lab.lineage", child.id)  # its lineage waits for its proof
    assert run("lab.status", id=child.id) == mine  # the owner's view
    run("lab.ok", id=child.id)  # proven: public
    assert run("lab.status", JUDGE, id=child.id, client_key="v2").render_ok
    # a cross that died is filtered out for its visitor too
    other = run("lab.cross", JUDGE, a=ids["p"], b=child.id, client_key="v1")
    assert other.status == "born"
    run("lab.invalid", id=other.id, log="ERROR: 0:1: nope")
    unknown(run, JUDGE, "lab.status", other.id, client_key="v1")
    # a key another lab.status names never matches an organism nobody crossed
    unknown(run, JUDGE, "lab.status", ids["u"], client_key="")


def test_a_visitor_sees_its_own_cross_being_validated_and_its_rejection() -> None:
    """(The table runs both halves of a birth back to back; the in-between states are
    folded here as the live actor folds them.)"""
    run = LabRun()
    for event in (Validating("s-1111111111111111", "shader", "cross", "v1"),
                  Rejected("shader", "x" * 59, "too short", "cross", "v1", (), 5,
                           "s-2222222222222222"),
                  Rejected("shader", "y" * 59, "too short", "owner", "", (), 6,
                           "s-3333333333333333")):
        run.state = WORLD.evolve(run.state, event)
    waiting = run("lab.status", JUDGE, id="s-1111111111111111", client_key="v1")
    assert (waiting.status, waiting.reason) == ("validating", None)
    rejected = run("lab.status", JUDGE, id="s-2222222222222222", client_key="v1")
    assert (rejected.status, rejected.reason) == ("rejected", "too short")
    for oid in ("s-1111111111111111", "s-2222222222222222"):
        unknown(run, JUDGE, "lab.status", oid, client_key="v2")
        unknown(run, AGENT, "lab.status", oid)
        assert run("lab.status", id=oid).status in ("validating", "rejected")
    unknown(run, JUDGE, "lab.status", "s-3333333333333333", client_key="v1")
    assert run("lab.status", id="s-3333333333333333").reason == "too short"


def test_a_cross_of_a_parent_the_public_may_not_see_is_an_unknown_organism() -> None:
    run = LabRun()
    ids = pool(run)
    for hidden in ("u", "d", "panel"):
        nowhere = run("lab.cross", JUDGE, a=ids["p"], b=NOWHERE, client_key="v")
        assert nowhere.code == LabCode.UNKNOWN_ORGANISM
        assert run("lab.cross", JUDGE, a=ids["p"], b=ids[hidden], client_key="v") == \
            attrs.evolve(nowhere, detail={"id": ids[hidden]})
    assert run("lab.cross", OWNER, a=ids["p"], b=ids["u"], client_key="v").code == \
        LabCode.PARENT_NOT_PROVEN


def plant_next_cross(run: LabRun, source: str = "owner", client: str = "") -> str:
    """Plant, unproven, the child the next `lab.cross` of p and q will make (the draws
    are keyed on the revision and the offers made, which a planted birth leaves as they
    are); its id."""
    ids = pool(run)
    ctx = Ctx(JUDGE, run.t, run.rev, WORLD.seed(run.state), PURPOSES["crossover"])
    c = visitor_candidate(run.state, CrossArgs(ids["p"], ids["q"], "v1"), ctx)
    oid = organism_id(c.track, c.code)
    run.state = WORLD.evolve(run.state, Born(oid, c.track, c.code, None, c.parents, None,
                                             source, client, c.genome, None, run.t))
    return oid


@pytest.mark.parametrize("caller", [JUDGE, AGENT])
def test_a_cross_repeating_an_organism_the_caller_may_not_see_names_no_id(
        caller: Caller) -> None:
    """Its id is the hidden organism's: below the owner the rejection names neither, and
    `lab.status` of that id stays `unknown_organism`, even under the crossing key."""
    run = LabRun()
    oid = plant_next_cross(run)
    p, q = (o.id for o in run.state.organisms.values() if o.render_ok and o.track == "shader")
    reply = run("lab.cross", caller, a=p, b=q, client_key="v1")
    assert reply == Birth(None, "rejected", "duplicate of an organism that is not public")
    assert run.state.rejections[oid] == (f"duplicate of {oid}", "v1")  # logged, as ever
    unknown(run, caller, "lab.status", oid, client_key="v1")
    assert run("lab.status", id=oid).status == "alive"  # the owner's view


def test_a_cross_repeating_an_organism_the_caller_may_see_names_it() -> None:
    """The owner sees any; a visitor its own unproven cross (not another key's)."""
    run = LabRun()
    oid = plant_next_cross(run)
    p, q = (o.id for o in run.state.organisms.values() if o.render_ok and o.track == "shader")
    assert run("lab.cross", OWNER, a=p, b=q, client_key="v1") == \
        Birth(oid, "rejected", f"duplicate of {oid}")
    for key, shown in (("v1", oid), ("v2", None)):
        run = LabRun()
        assert plant_next_cross(run, "cross", "v1") == oid
        reply = run("lab.cross", JUDGE, a=p, b=q, client_key=key)
        assert (reply.id, reply.status) == (shown, "rejected")


@pytest.mark.parametrize(("source", "client", "key", "shown"), [
    ("owner", "", "v1", False), ("loop", "", "v1", False), ("cross", "v2", "v1", False),
    ("cross", "v1", "v1", True)])
def test_a_cross_repeating_a_candidate_being_validated_names_it_only_to_its_crosser(
        source: str, client: str, key: str, shown: bool) -> None:
    """A child whose code another is having validated adds nothing: below the owner its
    reply names the candidate only to the key that crossed it (`lab.status` shows no other
    key a candidate)."""
    run = LabRun()
    ids = pool(run)
    ctx = Ctx(JUDGE, run.t, run.rev, WORLD.seed(run.state), PURPOSES["crossover"])
    c = visitor_candidate(run.state, CrossArgs(ids["p"], ids["q"], key), ctx)
    oid = organism_id(c.track, c.code)
    run.state = WORLD.evolve(run.state, Validating(oid, c.track, source, client))
    events = decide_offer(run.state, c, run.t)
    assert events == []
    reply = shown_birth(run.state, offered(c, events), ctx, key)
    if shown:
        assert reply == Birth(oid, "validating", None)
    else:
        assert reply == Birth(None, "rejected", "duplicate of a candidate that is not public")
        unknown(run, JUDGE, "lab.status", oid, client_key=key)
    owner = Ctx(OWNER, run.t, run.rev, WORLD.seed(run.state), PURPOSES["crossover"])
    assert shown_birth(run.state, offered(c, events), owner, key) == \
        Birth(oid, "validating", None)


def test_a_public_vote_shows_no_stored_error() -> None:
    """An organism killed between its deal and the vote: the voter's result carries no
    stored error (the owner's status still does)."""
    run = LabRun()
    pool(run)
    pair = run("lab.public_pair", JUDGE, client_key="k")
    run("lab.invalid", id=pair.left.id, log="ERROR: 0:9: 'secret' : killed")
    voted = run("lab.vote", JUDGE, pair=pair.pair, winner=pair.right.id, client_key="k")
    assert voted.loser.id == pair.left.id and voted.loser.error is None
    assert run("lab.status", id=pair.left.id).reason == "ERROR: 0:9: 'secret' : killed"


# --- over loopback -------------------------------------------------------------------


async def test_public_queries_over_loopback_hide_what_the_seed_keeps_from_the_public(
        tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner:
        agent_token = srv.state.tokens.create("agent", "ann")
        lab = await new_lab(owner, "public")
        p, q, u, d = await born(owner, lab, 4)
        panel, = await born(owner, lab, 1, "panel")
        for oid in (p, q, panel):
            await owner.request("lab.ok", lab, {"id": oid})
        await owner.request("lab.invalid", lab, {"id": d, "log": "ERROR: 0:3: secret\nmore"})
        async with raw_client(srv) as anon, raw_client(srv, agent_token) as agent:
            for caller in (anon, agent):
                for op, args in (("lab.status", {}), ("lab.lineage", {"depth": 2})):
                    nowhere = await caller.call(op, lab, id=NOWHERE, **args)
                    assert nowhere["error"]["code"] == "unknown_organism"
                    for hidden in (u, d, panel):
                        reply = await caller.call(op, lab, id=hidden, **args)
                        assert reply["error"] == {**nowhere["error"], "detail": {"id": hidden}}
                shown = await caller.call("lab.status", lab, id=p)
                assert shown["result"] == {"id": p, "track": "shader", "status": "alive",
                                           "render_ok": True, "reason": None}
            dead = await owner.request("lab.status", lab, {"id": d})
            assert (dead["status"], dead["reason"]) == ("dead", "ERROR: 0:3: secret")
            # a visitor's cross: its own client key follows it, another's does not
            offered = {"status": "rejected"}
            while offered["status"] == "rejected":  # (a child may repeat a parent)
                offered = (await anon.call("lab.cross", lab, a=p, b=q, client_key="v1"))["result"]
            child = offered["id"]
            mine = (await settled_as(anon, lab, child, "v1"))["result"]
            assert (mine["status"], mine["render_ok"]) == ("alive", False)
            for key in ("v2", ""):
                reply = await agent.call("lab.status", lab, id=child, client_key=key)
                assert reply["error"]["code"] == "unknown_organism"
            assert (await settled(owner, lab, child))["status"] == "alive"


async def settled_as(c: Raw, lab: str, oid: str, key: str) -> dict:
    """`lab.status` of a visitor's own candidate once its validation is over."""
    with trio.fail_after(30):
        while True:
            reply = await c.call("lab.status", lab, id=oid, client_key=key)
            if reply.get("result", {}).get("status") != "validating":
                return reply
            await trio.sleep(0.02)
