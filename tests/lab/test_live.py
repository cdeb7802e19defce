"""The lab actor over real sockets: `lab:main` exists by default and its birth loop fills
the pool; births validate off the actor's task; each row of the seed's surface table and
each canary rule through the protocol; nobody follows a lab's stream."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import trio

from actors.lab import actor as lab_actor
from actors.lab.offers import MAX_VALIDATING
from actors.lab.validation import validate
from protocol.client import Client, RequestError
from tests.lab.live import GOOD, birth, born, new_lab, settled, stored, variant
from tests.server.ws_harness import running_server

MINUTE = 60_000


async def refused(c: Client, op: str, to: str, args: dict, code: str) -> RequestError:
    with pytest.raises(RequestError) as err:
        await c.request(op, to, args)
    assert err.value.code == code, err.value
    return err.value


async def pool(c: Client, lab: str) -> dict[str, list[str]]:
    """Proven p (3), unproven u (2), dead d (1) grammar shaders, and a proven panel."""
    ids = await born(c, lab, 6)
    p, u, d = ids[:3], ids[3:5], ids[5:]
    for oid in p:
        assert (await c.request("lab.ok", lab, {"id": oid}))["changed"]
    await c.request("lab.invalid", lab, {"id": d[0], "log": "ERROR: 0:1: 'x' : bad\nmore\n"})
    panel = (await born(c, lab, 1, "panel"))[0]
    await c.request("lab.ok", lab, {"id": panel})
    return {"proven": p, "unproven": u, "dead": d, "panel": [panel]}


async def test_lab_main_exists_by_default_and_a_birth_loop_fills_the_pool(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner, \
            Client.connect(srv.ws_url) as visitor:
        assert (await visitor.request("lab.info", "lab:main", {}))["organisms"] == 0
        await refused(owner, "lab.create", "lab:main", {}, "already_exists")
        await refused(visitor, "lab.info", "lab:other", {}, "unknown_actor")
        lab = await new_lab(owner, "loop", backlog=3)
        with trio.fail_after(60):  # three of each track, then the loop waits
            while (await owner.request("lab.backlog", lab, {}))["total"] < 6:
                await trio.sleep(0.1)
        await trio.sleep(1.5)  # three ticks more: the cap holds
        backlog = await owner.request("lab.backlog", lab, {})
        assert backlog["total"] == 6
        assert sorted(o["track"] for o in backlog["organisms"]) == ["panel"] * 3 + ["shader"] * 3
        for o in backlog["organisms"]:  # every one went through validate
            assert validate(o["track"], o["code"]) is None
        await owner.request("lab.ok", lab, {"id": backlog["organisms"][0]["id"]})
        with trio.fail_after(60):  # a proven one leaves the backlog: the loop breeds again
            while (await owner.request("lab.info", lab, {}))["organisms"] < 7:
                await trio.sleep(0.1)
        events = await stored(srv.state.directory, lab)
        births = [e for e in events if e["type"] == "born"]
        assert len(births) == 7 and {e["source"] for e in births} == {"daemon"}
        assert all(e["genome"] is not None for e in births)  # grammar births by default
        # lab:main breeds too, once anything touched it (the info above)
        with trio.fail_after(60):
            while (await visitor.request("lab.info", "lab:main", {}))["organisms"] < 2:
                await trio.sleep(0.1)


async def test_births_validate_off_the_actor_task(tmp_path: Path, monkeypatch) -> None:
    release = threading.Event()
    started = threading.Event()

    def slow_validate(track: str, code: str) -> str | None:
        started.set()
        assert release.wait(30)
        return validate(track, code)

    monkeypatch.setattr(lab_actor, "validate", slow_validate)
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner:
        lab = await new_lab(owner, "slow")
        offered = await owner.request("lab.birth", lab, {"track": "shader", "code": GOOD})
        assert offered["status"] == "validating" and offered["reason"] is None
        await trio.to_thread.run_sync(started.wait, 10)
        # the validator is stuck in its thread; the lab still answers everything else
        info = await owner.request("lab.info", lab, {})
        assert info["organisms"] == 0
        assert (await owner.request("lab.status", lab, {"id": offered["id"]}))["status"] == \
            "validating"
        again = await owner.request("lab.birth", lab, {"track": "shader", "code": GOOD})
        assert again == offered  # the same candidate: no second validation
        for i in range(1, MAX_VALIDATING):
            await owner.request("lab.birth", lab, {"track": "shader", "code": variant(i)})
        err = await refused(owner, "lab.birth", lab, {"track": "shader", "code": variant(99)},
                            "overloaded")
        assert err.detail == {"validating": MAX_VALIDATING}
        release.set()
        assert (await settled(owner, lab, offered["id"]))["status"] == "alive"
        for i in range(1, MAX_VALIDATING):
            await settled(owner, lab, (await owner.request(
                "lab.birth", lab, {"track": "shader", "code": variant(i)}))["id"])
        assert (await owner.request("lab.info", lab, {}))["organisms"] == MAX_VALIDATING
        # a duplicate is refused at once, logged as a rejection
        dup = await owner.request("lab.birth", lab, {"track": "shader", "code": GOOD})
        assert dup == {"id": offered["id"], "status": "rejected",
                       "reason": f"duplicate of {offered['id']}"}


async def test_a_validator_that_fails_abandons_the_candidate(tmp_path: Path,
                                                             monkeypatch) -> None:
    def broken(track: str, code: str) -> str | None:
        raise RuntimeError("the validator broke")

    monkeypatch.setattr(lab_actor, "validate", broken)
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner:
        lab = await new_lab(owner, "broken")
        rev = await srv.state.directory.store.revision(lab)
        offered = await owner.request("lab.birth", lab, {"track": "shader", "code": GOOD})
        with trio.fail_after(10):
            while True:
                try:
                    await owner.request("lab.status", lab, {"id": offered["id"]})
                except RequestError as e:
                    assert e.code == "unknown_organism"
                    break
                await trio.sleep(0.02)
        assert await srv.state.directory.store.revision(lab) == rev  # nothing stored


async def test_a_rejected_candidate_is_logged_and_never_inserted(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner, \
            Client.connect(srv.ws_url) as visitor:
        lab = await new_lab(owner, "rejects")
        status = await birth(owner, lab, "uniform float u_x;\n" + GOOD)
        assert (status["status"], status["reason"]) == ("rejected", "extra uniform")
        assert (await owner.request("lab.status", lab, {"id": status["id"]}))["reason"] == \
            "extra uniform"
        await refused(visitor, "lab.status", lab, {"id": status["id"]}, "unknown_organism")
        info = await owner.request("lab.info", lab, {})
        assert (info["organisms"], info["rejected"]) == (0, 1)
        assert [e["type"] for e in await stored(srv.state.directory, lab)] == \
            ["created", "rejected"]


async def test_nobody_follows_a_labs_stream(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner:
        with pytest.raises(RequestError) as err:
            async with owner.subscribe("lab:main"):
                pass
        assert err.value.code == "forbidden"  # its events carry unproven code


# --- the seed's surface table ---------------------------------------------------------


async def test_owner_pairs_are_live_and_deal_the_unproven(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner:
        lab = await new_lab(owner, "owner")
        ids = await pool(owner, lab)
        seen = set()
        for _ in range(30):
            pair = await owner.request("lab.pair", lab, {"track": "shader"})
            ab = {pair["left"]["id"], pair["right"]["id"]}
            assert ab & set(ids["unproven"]), ab  # the unproven are dealt here
            assert not ab & set(ids["dead"])
            assert pair["canary"] is None
            seen |= ab
        assert seen == set(ids["proven"] + ids["unproven"])
        await refused(owner, "lab.pair", lab, {"track": "panel"}, "no_pair")  # one panel


async def test_breeding_parents_are_the_proven_or_else_the_whole_alive_pool(
        tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner:
        lab = await new_lab(owner, "breed")
        first = await born(owner, lab, 3)
        child = await owner.request("lab.lineage", lab, {"id": (await born(owner, lab, 1))[0]})
        assert set(child["ancestors"][0]["parents"]) <= set(first)  # none proven: any alive
        await owner.request("lab.ok", lab, {"id": first[0]})
        await owner.request("lab.ok", lab, {"id": first[1]})
        for oid in await born(owner, lab, 4):
            parents = (await owner.request("lab.lineage", lab, {"id": oid}))["ancestors"][0]
            assert set(parents["parents"]) <= {first[0], first[1]}, parents


async def test_public_pairs_are_proven_with_at_most_one_canary(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner, \
            Client.connect(srv.ws_url) as judge:
        lab = await new_lab(owner, "public")
        ids = await pool(owner, lab)
        canaries = set()
        for k in range(30):
            pair = await judge.request("lab.public_pair", lab, {"client_key": f"k{k}"})
            ab = [pair["left"]["id"], pair["right"]["id"]]
            unproven = [x for x in ab if x not in ids["proven"]]
            assert len(unproven) <= 1 and unproven == ([pair["canary"]] if pair["canary"]
                                                       else [])
            assert set(unproven) <= set(ids["unproven"])  # never the dead, never a panel
            canaries.update(unproven)
        assert canaries == set(ids["unproven"])
        await refused(judge, "lab.public_pair", lab, {"client_key": ""}, "bad_request")


async def test_the_gallery_is_proven_judged_and_by_rating(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner, \
            Client.connect(srv.ws_url) as judge:
        lab = await new_lab(owner, "gallery")
        ids = await pool(owner, lab)
        assert (await judge.request("lab.gallery", lab, {}))["organisms"] == []  # none judged
        for k in range(12):
            pair = await judge.request("lab.public_pair", lab, {"client_key": f"g{k}"})
            await judge.request("lab.vote", lab, {"pair": pair["pair"], "client_key": f"g{k}",
                                                  "winner": pair["left"]["id"]})
        shown = (await judge.request("lab.gallery", lab, {}))["organisms"]
        assert shown and all(o["render_ok"] and o["judged"] >= 1 and o["error"] is None
                             and o["track"] == "shader" for o in shown)
        assert {o["id"] for o in shown} <= set(ids["proven"])
        assert [o["ordinal"] for o in shown] == sorted((o["ordinal"] for o in shown),
                                                      reverse=True)


async def test_a_visitor_cross_needs_two_proven_parents_and_is_born_unproven(
        tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner, \
            Client.connect(srv.ws_url) as visitor:
        lab = await new_lab(owner, "cross")
        ids = await pool(owner, lab)
        a, b = ids["proven"][:2]
        await refused(owner, "lab.cross", lab, {"a": a, "b": ids["unproven"][0],
                                                "client_key": "v"}, "parent_not_proven")
        await refused(owner, "lab.cross", lab, {"a": a, "b": ids["panel"][0],
                                                "client_key": "v"}, "not_crossable")
        for b_id in (ids["unproven"][0], ids["panel"][0], "s-nope"):  # none the public sees
            await refused(visitor, "lab.cross", lab, {"a": a, "b": b_id, "client_key": "v"},
                          "unknown_organism")
        offered = await visitor.request("lab.cross", lab, {"a": a, "b": b, "client_key": "v"})
        assert offered["status"] == "validating"
        child = await settled(visitor, lab, offered["id"], client_key="v")
        assert (child["status"], child["render_ok"]) == ("alive", False)
        await owner.request("lab.ok", lab, {"id": offered["id"]})  # its lineage is public now
        lineage = await visitor.request("lab.lineage", lab, {"id": offered["id"]})
        assert lineage["ancestors"][0]["parents"] == [a, b]
        assert lineage["ancestors"][0]["source"] == "cross"
        assert {x["id"] for x in lineage["ancestors"]} == {offered["id"], a, b}


# --- the canary rules -------------------------------------------------------------------


async def canary_pair(judge: Client, lab: str, key: str, wanted: str | None = None) -> dict:
    """A public pair dealt to `key` whose canary is `wanted` (or any canary)."""
    for _ in range(80):
        pair = await judge.request("lab.public_pair", lab, {"client_key": key})
        if pair["canary"] and wanted in (None, pair["canary"]):
            return pair
    raise AssertionError(f"no pair with the canary {wanted} was dealt")


async def test_the_canary_rules(tmp_path: Path) -> None:
    now = [10 * MINUTE]
    async with running_server(tmp_path, clock=lambda: now[0]) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner, \
            Client.connect(srv.ws_url) as judge:
        lab = await new_lab(owner, "canary")
        ids = await pool(owner, lab)
        store = srv.state.directory.store

        async def seen(oid: str, key: str, ok: bool) -> str:
            reply = await judge.request("lab.seen", lab, {"id": oid, "client_key": key,
                                                          "ok": ok})
            return reply["verdict"]

        async def unchanged(op: str, args: dict, code: str) -> None:
            before = (await store.revision(lab), await owner.request("lab.info", lab, {}))
            await refused(judge, op, lab, args, code)
            assert (await store.revision(lab), await owner.request("lab.info", lab, {})) == \
                before

        # a blind report naming an arbitrary id does nothing, nor one dealt to another key
        await unchanged("lab.seen", {"id": ids["unproven"][0], "client_key": "blind",
                                     "ok": True}, "not_dealt")
        pair = await canary_pair(judge, lab, "k1")
        c = pair["canary"]
        await unchanged("lab.seen", {"id": c, "client_key": "k2", "ok": True}, "not_dealt")
        # a canary's vote: refused from another client, accepted from its own before the
        # report, once per pair
        await unchanged("lab.vote", {"pair": pair["pair"], "winner": c, "client_key": "k2"},
                        "not_dealt")
        voted = await judge.request("lab.vote", lab, {"pair": pair["pair"], "winner": c,
                                                      "client_key": "k1"})
        assert voted["winner"]["id"] == c and voted["winner"]["judged"] == 1
        await unchanged("lab.vote", {"pair": pair["pair"], "winner": c, "client_key": "k1"},
                        "not_dealt")
        # a negative report is a strike; the same key twice is still one key (k1 is not
        # dealt it again: its report stands on the deal of ten minutes)
        assert await seen(c, "k1", False) == "struck"
        assert await seen(c, "k1", False) == "struck"
        # strikes from two distinct keys bench: no longer dealt as a canary, not dead
        await canary_pair(judge, lab, "k3", c)
        assert await seen(c, "k3", False) == "benched"
        for k in range(30):
            p = await judge.request("lab.public_pair", lab, {"client_key": f"b{k}"})
            assert p["canary"] != c
        status = await owner.request("lab.status", lab, {"id": c})
        assert (status["status"], status["render_ok"]) == ("alive", False)
        assert (await owner.request("lab.ok", lab, {"id": c}))["changed"]  # the owner proves it
        # a positive report proves; a report on a proven organism changes nothing
        rest = next(x for x in ids["unproven"] if x != c)
        await canary_pair(judge, lab, "k4", rest)
        assert await seen(rest, "k4", True) == "proven"
        rev = await store.revision(lab)
        assert await seen(rest, "k4", False) == "no_change"
        # a report on a dead organism (dealt before it died) changes nothing
        fresh = (await born(owner, lab, 1))[0]
        await canary_pair(judge, lab, "k5", fresh)
        await owner.request("lab.invalid", lab, {"id": fresh, "log": "ERROR: link\n"})
        rev = await store.revision(lab)
        assert await seen(fresh, "k5", True) == "no_change"
        assert await store.revision(lab) == rev
        assert (await owner.request("lab.status", lab, {"id": fresh}))["status"] == "dead"
        # ten minutes on, a dealt id is no longer reportable, a pair no longer votable
        late = (await born(owner, lab, 1))[0]
        pair = await canary_pair(judge, lab, "k6", late)
        now[0] += 10 * MINUTE + 1
        await unchanged("lab.seen", {"id": late, "client_key": "k6", "ok": True}, "not_dealt")
        await unchanged("lab.vote", {"pair": pair["pair"], "winner": late, "client_key": "k6"},
                        "not_dealt")
