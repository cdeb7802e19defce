"""The bytes a client's requests make the server store, held to `stored_per_hour` and
`stored_anonymous` (server/stored.py): the bucket, then over real sockets (a field agent's
commit / retract loop over the websocket, a judge's votes on the lab's HTTP route)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import trio

from protocol.client import Client
from server.budgets import HOUR, Account, Budgets
from server.stored import charge_stored, may_store
from tests.field_live._live import play_truly, start, tile_cells
from tests.lab.live import born, new_lab
from tests.server.ws_harness import error, raw_client, result, running_server

GAME = "loop"


def test_the_bucket_refills_over_the_hour_and_may_run_into_debt() -> None:
    """Charged after the fact, the bucket may go below zero; the account's writes are
    refused until it has refilled past zero, at the hour's budget per hour."""
    budgets = Budgets(stored_per_hour=3_600, stored_anonymous=360)
    agent = Account(False, budgets, 0.0)
    charge_stored(agent, 3_000, 0.0)
    assert may_store(budgets, agent, 0.0) is None  # 600 bytes left
    charge_stored(agent, 1_200, 0.0)  # the write let through overdraws it: 600 owed
    refused = may_store(budgets, agent, 300.0)  # 300 refilled, 300 owed
    assert refused is not None
    assert refused.message == ("this client's requests stored more than 3,600 bytes in an "
                               "hour; reads are still served")
    assert refused.detail == {"budget": "stored_per_hour", "limit": 3_600,
                              "retry_after": pytest.approx(300.0, abs=0.01)}
    assert may_store(budgets, agent, 601.0) is None
    assert agent.stored.refill(HOUR * 2) == 3_600  # full again: no more than the budget
    assert agent.idle(HOUR * 2)
    spectator = Account(True, budgets, 0.0)
    charge_stored(spectator, 360, 0.0)
    refused = may_store(budgets, spectator, 0.0)
    assert refused is not None and refused.detail["budget"] == "stored_anonymous"
    assert refused.detail["retry_after"] == pytest.approx(0.001)
    assert not spectator.idle(0.0)  # (its spending is remembered until refilled)
    none = Account(False, Budgets(stored_per_hour=0), 0.0)
    refused = may_store(Budgets(stored_per_hour=0), none, 5.0)  # 0: no writes at all
    assert refused is not None and "retry_after" not in refused.detail


async def test_a_commit_retract_loop_is_refused_once_its_bytes_are_spent(
        tmp_path: Path) -> None:
    """A seated agent committing and retracting a cell of an unsolved tile stores an event
    each time, for as long as it loops: once its account's `stored_per_hour` is spent
    (charged exactly the events' stored bytes), its writes are refused before the field
    sees them and nothing more is stored, while its reads are answered; another account
    writes on."""
    limit = 3_000
    budgets = Budgets(stored_per_hour=limit, cpu_burst=600.0)  # (a loaded machine: no `cpu`)
    async with running_server(tmp_path, budgets=budgets) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner:
        ann = srv.state.tokens.create("agent", "ann")
        await start(owner, GAME, size=20, seed=3)
        to = f"field:{GAME}"
        store = srv.state.directory.store
        solution = (await srv.state.directory.get(to)).state.truth.solution
        first = await store.revision(to)
        began = trio.current_time()
        async with Client.connect(srv.ws_url, ann) as c, raw_client(srv, ann) as raw:
            agent = (await c.request("field.join", to, {"name": "a"}))["agent"]
            await play_truly(c, GAME, agent, solution)  # reveals its seed tile
            obs = await c.request("field.observe", to, {"agent": agent})
            tile = next(t for t in obs["tiles"] if t["id"] in obs["territory"])
            known = {k for k, _ in obs["known"]}
            cell = next(x for x in tile_cells(tile, obs["G"]) if x not in known)
            rev, refused = obs["revision"], None
            for _ in range(100):
                reply = await raw.call("field.commit", to, agent=agent, expected_revision=rev,
                                       cells=[[cell, int(solution[cell])]])
                if not reply["ok"]:
                    refused = error(reply)
                    break
                result(await raw.call("field.retract", to, agent=agent, cells=[cell],
                                      expected_revision=rev + 1))
                rev += 2
            assert refused is not None, "the loop was never refused"
            retry = refused["detail"].pop("retry_after")
            assert refused == {"code": "over_budget", "message": "this client's requests "
                               "stored more than 3,000 bytes in an hour; reads are still "
                               "served", "detail": {"budget": "stored_per_hour",
                                                    "limit": limit}}
            assert 0 < retry <= HOUR
            rows = await store.read_rows(to, after=first)
            assert len(rows) == rev - first
            account = srv.state.ledger.accounts["ann"]
            spent = sum(len(text) for _, text in rows)  # (all ann's: the join on)
            assert spent > limit
            # charged the stored bytes exactly, less what refilled meanwhile
            refilled = spent - (limit - account.stored.refill(trio.current_time()))
            assert -1e-6 <= refilled <= limit / HOUR * (trio.current_time() - began)
            again = error(await raw.call("field.retract", to, agent=agent, cells=[cell],
                                         expected_revision=rev))
            assert again["detail"]["budget"] == "stored_per_hour"
            assert await store.revision(to) == rev
            assert await store.read_rows(to, after=first) == rows
            observed = result(await raw.call("field.observe", to, agent=agent))
            assert observed["revision"] == rev
            result(await raw.call("field.rules", to))
            result(await raw.call("field.leaderboard", to))  # (an effect that only reads)
            result(await raw.call("lobby.list", "lobby:main"))
        async with raw_client(srv, srv.state.tokens.create("agent", "bob")) as bob:
            result(await bob.call("field.join", to, name="b"))  # another account's own
        assert await store.revision(to) == rev + 1


async def test_a_judge_s_votes_on_the_http_route_are_held_to_stored_anonymous(
        tmp_path: Path) -> None:
    """An anonymous judge is a spectator: its votes on `/api/pub/vote` (stored events) are
    held to `stored_anonymous`, refused 429 before the lab sees them once it is spent,
    while its reads over the websocket are answered."""
    async with running_server(tmp_path, budgets=Budgets(stored_anonymous=200)) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner, \
            Client.connect(srv.ws_url) as judge, \
            httpx.AsyncClient(base_url=srv.url) as http:
        lab = await new_lab(owner, "votes")
        for oid in await born(owner, lab, 3):
            await owner.request("lab.ok", lab, {"id": oid})
        pairs = [await judge.request("lab.public_pair", lab, {"client_key": "k"})
                 for _ in range(2)]  # (dealt in memory: nothing stored)

        def vote(pair: dict) -> dict:
            return {"pair": pair["pair"], "winner": pair["left"]["id"], "client_key": "k"}

        assert (await http.post("/api/pub/vote?lab=votes", json=vote(pairs[0]))
                ).status_code == 200
        over = await http.post("/api/pub/vote?lab=votes", json=vote(pairs[1]))
        assert over.status_code == 429
        refusal = over.json()["error"]
        assert (refusal["code"], refusal["detail"]["budget"], refusal["detail"]["limit"]) \
            == ("over_budget", "stored_anonymous", 200)
        assert (await judge.request("lab.info", lab, {}))["votes"] == 1
