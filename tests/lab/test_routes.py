"""The seed's HTTP routes over a real socket (thin adapters onto the lab's messages), each
with malformed, oversized, unauthorized and stale input; and the policies of the pages
that mount organisms."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import httpx
import pytest

from protocol.client import Client
from server.auth import TokenStore
from server.budgets import Budgets
from server.headers import csp_text, page_policy
from server.lab_routes import MAX_BODY, ROUTES
from tests.lab.live import born, new_lab
from tests.server.csp import directives
from tests.server.garbage import collector_off, cyclic_garbage
from tests.server.ws_harness import others_load, running_server, until_others_rest

MINUTE = 60_000


async def state_of(srv, owner: Client, lab: str) -> tuple:
    return (await srv.state.directory.store.revision(lab),
            await owner.request("lab.info", lab, {}))


async def test_each_route_does_what_its_op_does(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner, \
            httpx.AsyncClient(base_url=srv.url) as http:
        lab = await new_lab(owner, "routes")
        a, b, c, d = await born(owner, lab, 4)
        auth = {"Authorization": f"Bearer {srv.owner_token}"}
        ok = await http.post("/api/ok?lab=routes", json={"id": a}, headers=auth)
        assert (ok.status_code, ok.json()["result"]["render_ok"]) == (200, True)
        assert ok.headers["cache-control"] == "no-store"
        assert ok.headers["x-content-type-options"] == "nosniff"
        await http.post("/api/ok?lab=routes", json={"id": b}, headers=auth)
        dead = await http.post("/api/invalid?lab=routes", headers=auth, json={
            "id": d, "log": "\n  ERROR: 0:3: 'v_uv' : undeclared\nERROR: 1 compilation error"})
        assert dead.json()["result"]["error"] == "ERROR: 0:3: 'v_uv' : undeclared"
        pair = await owner.request("lab.pair", lab, {"track": "shader"})
        voted = await http.post("/api/vote?lab=routes", headers=auth,
                                json={"pair": pair["pair"], "winner": pair["right"]["id"]})
        assert voted.json()["result"]["winner"]["judged"] == 1
        public = None
        for k in range(60):
            public = await owner.request("lab.public_pair", lab, {"client_key": f"k{k}"})
            if public["canary"] == c:
                break
        key = f"k{k}"
        seen = await http.post("/api/pub/seen?lab=routes",
                               json={"id": c, "client_key": key, "ok": True})
        assert seen.json() == {"ok": True, "result": {"id": c, "verdict": "proven"}}
        vote = await http.post("/api/pub/vote?lab=routes", json={
            "pair": public["pair"], "winner": c, "client_key": key})
        assert vote.status_code == 200
        info = await owner.request("lab.info", lab, {})
        assert (info["proven"], info["dead"], info["votes"]) == (3, 1, 2)
        default = await http.post("/api/ok", json={"id": "s-0000000000000000"}, headers=auth)
        assert default.json()["error"]["code"] == "unknown_organism"  # lab:main by default


async def test_bad_requests_to_every_route_are_refused_and_change_nothing(
        tmp_path: Path) -> None:
    now = [10 * MINUTE]
    async with running_server(tmp_path, clock=lambda: now[0]) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner, \
            httpx.AsyncClient(base_url=srv.url) as http:
        lab = await new_lab(owner, "bad")
        a, b = await born(owner, lab, 2)
        agent = TokenStore(tmp_path).create("agent", "bot")
        auth = {"Authorization": f"Bearer {srv.owner_token}"}
        pair = await owner.request("lab.pair", lab, {"track": "shader"})
        good = {"/api/ok": {"id": a}, "/api/invalid": {"id": a, "log": "ERROR: x"},
                "/api/vote": {"pair": pair["pair"], "winner": pair["left"]["id"]},
                "/api/pub/seen": {"id": a, "client_key": "k", "ok": True},
                "/api/pub/vote": {"pair": pair["pair"], "winner": a, "client_key": "k"}}
        assert set(good) == set(ROUTES)
        before = await state_of(srv, owner, lab)

        async def refused(path: str, status: int, code: str, **request) -> dict:
            headers = {**(auth if ROUTES[path][1] == "owner" else {}),
                       **request.pop("headers", {})}
            query = request.pop("query", "lab=bad")
            r = await http.request(request.pop("method", "POST"),
                                   f"{path}?{query}" if query else path, headers=headers,
                                   **request)
            assert (r.status_code, r.json()["error"]["code"]) == (status, code), (path, r.text)
            assert await state_of(srv, owner, lab) == before, path
            return r.json()["error"]

        for path, body in good.items():
            first_key = next(iter(body))
            # malformed: not JSON, not UTF-8, not an object, a wrong type, an unknown key
            await refused(path, 400, "bad_request", content=b"{nope",
                          headers={"content-type": "application/json"})
            await refused(path, 400, "bad_request", content=b'{"id": "\\xff"}\xff',
                          headers={"content-type": "application/json"})
            await refused(path, 400, "bad_request", json=[body])
            err = await refused(path, 400, "bad_request", json={**body, first_key: 5})
            assert err["detail"]["path"] == f"args.{first_key}"
            await refused(path, 400, "bad_request", json={**body, "extra": 1})
            await refused(path, 400, "bad_request", content=b'{"id": NaN}',
                          headers={"content-type": "application/json"})
            # a number no JSON reader holds exactly, named by its path as on /ws
            err = await refused(path, 400, "bad_request",
                                content=json.dumps({**body, first_key: 0}).replace(
                                    f'"{first_key}": 0', f'"{first_key}": 1e400').encode(),
                                headers={"content-type": "application/json"})
            assert (err["message"], err["detail"]) == (
                f"args.{first_key}: the number 1e400 is out of range",
                {"path": f"args.{first_key}"})
            await refused(path, 415, "bad_request", content=b"id=x",
                          headers={"content-type": "application/x-www-form-urlencoded"})
            # oversized: a field past its bound, a body past MAX_BODY (declared or not)
            err = await refused(path, 400, "bad_request", json={**body, first_key: "x" * 100})
            assert err["detail"]["path"] == f"args.{first_key}"
            big = b'{"id": "' + b"x" * MAX_BODY + b'"}'
            await refused(path, 413, "too_large", content=big,
                          headers={"content-type": "application/json"})

            async def chunks(data: bytes = big):  # no Content-Length: counted as it comes
                for i in range(0, len(data), 8192):
                    yield data[i:i + 8192]

            await refused(path, 413, "too_large", content=chunks(),
                          headers={"content-type": "application/json"})
            # the lab named in the query
            await refused(path, 404, "unknown_actor", json=body, query="lab=nowhere")
            await refused(path, 400, "bad_request", json=body, query="lab=../x")
            await refused(path, 400, "bad_request", json=body, query="lab=bad&also=1")
            await refused(path, 405, "bad_request", method="GET", query="lab=bad")  # POST only
        for path in ("/api/ok", "/api/invalid", "/api/vote"):  # unauthorized
            body = good[path]
            await refused(path, 401, "unauthorized", json=body, headers={"Authorization": ""})
            r = await http.post(f"{path}?lab=bad", json=body)
            assert (r.status_code, r.json()["error"]["code"]) == (401, "unauthorized")
            await refused(path, 401, "unauthorized", json=body,
                          headers={"Authorization": "Bearer pdg_forged"})
            await refused(path, 401, "unauthorized", json=body,
                          headers={"Authorization": f"Basic {srv.owner_token}"})
            await refused(path, 403, "forbidden", json=body,
                          headers={"Authorization": f"Bearer {agent}"})
        # a visitor's vote names its key (it was "not dealt to this client key")
        err = await refused("/api/pub/vote", 400, "bad_request", json={
            "pair": pair["pair"], "winner": pair["left"]["id"]})
        assert (err["message"], err["detail"]) == ("client_key is empty",
                                                   {"path": "args.client_key"})
        # the owner arena's pair takes the owner's vote only
        await refused("/api/pub/vote", 403, "forbidden", json={
            "pair": pair["pair"], "winner": pair["left"]["id"], "client_key": "k"})
        # stale: an id never dealt to the key, a pair voted already, a deal ten minutes old
        await refused("/api/pub/seen", 409, "not_dealt", json=good["/api/pub/seen"])
        for oid in (a, b):  # two proven, to deal public pairs
            await owner.request("lab.ok", lab, {"id": oid})
        public = await owner.request("lab.public_pair", lab, {"client_key": "late"})
        vote = {"pair": public["pair"], "winner": public["left"]["id"], "client_key": "late"}
        assert (await http.post("/api/pub/vote?lab=bad", json=vote)).status_code == 200
        before = await state_of(srv, owner, lab)
        await refused("/api/pub/vote", 409, "not_dealt", json=vote)
        public = await owner.request("lab.public_pair", lab, {"client_key": "late"})
        now[0] += 10 * MINUTE + 1
        await refused("/api/pub/vote", 409, "not_dealt", json={**vote, "pair": public["pair"]})
        await refused("/api/pub/seen", 409, "not_dealt",
                      json={"id": public["left"]["id"], "client_key": "late", "ok": False})



async def test_a_public_key_spelling_the_owner_s_client_reports_nothing(
        tmp_path: Path) -> None:
    """The arena's pairs are recorded under `owner:NAME`; a visitor's client key that spells
    it was dealt nothing, so its report on the arena's organisms proves nothing."""
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner, \
            httpx.AsyncClient(base_url=srv.url) as http:
        lab = await new_lab(owner, "spoof")
        await born(owner, lab, 2)
        pair = await owner.request("lab.pair", lab, {"track": "shader"})
        before = await state_of(srv, owner, lab)
        for oid in (pair["left"]["id"], pair["right"]["id"]):
            r = await http.post("/api/pub/seen?lab=spoof",
                                json={"id": oid, "client_key": "owner:owner", "ok": True})
            assert (r.status_code, r.json()["error"]["code"]) == (409, "not_dealt")
        assert await state_of(srv, owner, lab) == before

async def test_a_route_s_server_time_is_charged_as_a_websocket_request_s(
        tmp_path: Path) -> None:
    """An anonymous caller's account runs into debt from its first request. Alone on the
    server it is served; once the owner uses the lab's own routes (the owner's time counts
    as others' use) it is refused `over_budget` (429)."""
    budgets = Budgets(cpu_rate=1e-9, cpu_burst_anonymous=1e-9, cpu_contended=1e-3)
    async with running_server(tmp_path, budgets=budgets) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner, \
            httpx.AsyncClient(base_url=srv.url) as http:
        lab = await new_lab(owner, "cpu")
        a, = await born(owner, lab, 1)
        ledger = srv.state.ledger
        await until_others_rest(srv)
        seen = {"id": a, "client_key": "k", "ok": True}
        # The collector off from here (its first pass made now, not between the owner's
        # load and the refusal, which that load must still contend with): the refusal is
        # freed with its request, not left in a cycle.
        async with collector_off():
            for _ in range(2):  # alone: served (refused by the lab's state, which costs time)
                assert (await http.post("/api/pub/seen?lab=cpu", json=seen)).status_code == 409
            assert ledger.accounts["address:127.0.0.1"].cpu.level < 0  # charged: in debt
            auth = {"Authorization": f"Bearer {srv.owner_token}"}
            for _ in range(200):  # well past contention: it decays (1 s) before the next ask
                if others_load(srv) >= 5 * budgets.cpu_contended:
                    break
                assert (await http.post("/api/ok?lab=cpu", json={"id": a}, headers=auth)
                        ).status_code == 200
            assert others_load(srv) >= 5 * budgets.cpu_contended, \
                "the owner's routes were not charged"
            over = await http.post("/api/pub/seen?lab=cpu", json=seen)
            assert cyclic_garbage() == Counter()
        assert over.status_code == 429
        assert over.json()["error"]["code"] == "over_budget"
        assert over.json()["error"]["detail"]["budget"] == "cpu"
        assert ledger.hits[("cpu", "127.0.0.1")].count == 1


async def test_reading_a_route_s_body_is_charged_even_when_it_is_refused(
        tmp_path: Path) -> None:
    """Parsing a body the route then refuses (not JSON, wrong args) is the caller's time:
    no world is asked, and the anonymous caller's account is in debt all the same."""
    budgets = Budgets(cpu_rate=1e-9, cpu_burst_anonymous=1e-9)
    async with running_server(tmp_path, budgets=budgets) as srv, \
            httpx.AsyncClient(base_url=srv.url) as http:
        bodies = ["[" * 20_000, json.dumps({"id": "x" * 60_000, "client_key": "k", "ok": 1})]
        for body in bodies:
            r = await http.post("/api/pub/seen", content=body,
                                headers={"Content-Type": "application/json"})
            assert (r.status_code, r.json()["error"]["code"]) == (400, "bad_request")
        assert srv.state.ledger.accounts["address:127.0.0.1"].cpu.level < 0


async def test_refused_tokens_are_budgeted_per_address_as_a_hello_s(tmp_path: Path) -> None:
    """Guessing tokens on the owner's routes costs what guessing them in a hello does: past
    the address's refused-token budget a bad token is refused unlooked-at, on any
    endpoint, while a valid one (the owner's here) still passes."""
    budgets = Budgets(hello_failures=2, hello_failure_rate=0.01)
    async with running_server(tmp_path, budgets=budgets) as srv, \
            httpx.AsyncClient(base_url=srv.url) as http:
        replies = [await http.post("/api/ok", json={"id": "s-1"},
                                   headers={"Authorization": "Bearer pdg_guess"})
                   for _ in range(3)]
        assert [(r.status_code, r.json()["error"]["code"]) for r in replies] == [
            (401, "unauthorized"), (401, "unauthorized"), (429, "over_budget")]
        assert replies[2].json()["error"]["detail"]["budget"] == "hello_failures"
        owner = await http.post("/api/ok", json={"id": "s-1"},
                                headers={"Authorization": f"Bearer {srv.owner_token}"})
        assert owner.json()["error"]["code"] == "unknown_organism"  # checked, let through
        assert srv.state.ledger.hits[("hello_failures", "127.0.0.1")].count == 1


async def test_each_address_is_rate_limited(tmp_path: Path) -> None:
    async with running_server(tmp_path, rate=1.0, burst=3) as srv, \
            httpx.AsyncClient(base_url=srv.url) as http:
        codes = []
        for _ in range(5):
            r = await http.post("/api/pub/seen", json={"id": "s-1", "client_key": "k",
                                                       "ok": True})
            codes.append((r.status_code, r.json()["error"]["code"]))
        assert codes[:3] == [(409, "not_dealt")] * 3
        assert codes[3:] == [(429, "rate_limited")] * 2


# --- security headers (every page's: tests/server/test_headers.py) ----------------------

ORGANISM_PAGES = ("/lab/arena.html", "/lab/judge.html", "/lab/gallery.html")


@pytest.mark.parametrize("path", ORGANISM_PAGES)
async def test_pages_that_mount_organisms_forbid_every_request_an_organism_could_make(
        tmp_path: Path, path: str) -> None:
    async with running_server(tmp_path) as srv, httpx.AsyncClient(base_url=srv.url) as http:
        csp = directives((await http.get(path)).headers["content-security-policy"])
    assert csp["default-src"] == "'none'"
    # the page's own script, styles and calls; the judging page's voice; nothing else
    allowed = {"script-src": "'self'", "connect-src": "'self'",
               "style-src": "'self' 'unsafe-inline'" if path.endswith("arena.html")
               else "'self'"}
    if path.endswith("judge.html"):
        allowed["media-src"] = "'self'"
    opened = {k: v for k, v in csp.items() if v != "'none'"}
    assert opened == allowed
    for fetching in ("img-src", "font-src", "frame-src", "child-src", "worker-src",
                     "manifest-src", "prefetch-src"):
        assert fetching not in csp  # falls back to default-src 'none'
    assert csp == directives(csp_text(page_policy(path)))  # the table's row for the page
