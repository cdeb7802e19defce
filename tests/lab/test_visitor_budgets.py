"""What a visitor can make a lab hold or compute, over real sockets: crosses, public pairs
dealt and votes are held to the visitor's account (its address when anonymous, whatever
name each connection takes), and a cross's validation is charged to the crosser."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import trio

from actors.lab import WORLD
from actors.lab import actor as lab_actor
from actors.lab.validation import validate
from actors.runtime import ActorKind, Call, open_directory
from actors.runtime.mailbox import Pending
from actors.store import MemoryEventStore
from protocol.client import Client, RequestError
from protocol.errors import ErrorCode, ProtocolError
from server.budgets import Budgets, Ledger
from server.claims import Claims
from server.replies import Charged
from tests.lab.live import born, new_lab, settled
from tests.server.claims_harness import DEAL, VOTE, lab_visit, raise_refusal
from tests.server.ws_harness import running_server

ACCOUNT = "address:127.0.0.1"  # every anonymous caller of these tests


async def refused(c: Client, op: str, to: str, args: dict) -> RequestError:
    with pytest.raises(RequestError) as err:
        await c.request(op, to, args)
    return err.value


async def proven(owner: Client, lab: str, n: int) -> list[str]:
    ids = await born(owner, lab, n)
    for oid in ids:
        await owner.request("lab.ok", lab, {"id": oid})
    return ids


@asynccontextmanager
async def judging(tmp_path: Path, budgets: Budgets, n: int
                  ) -> AsyncIterator[tuple[Client, Client, httpx.AsyncClient, str]]:
    """A server held to `budgets`: its owner, an anonymous judge over a websocket and over
    HTTP, and `lab:judging` with `n` proven shaders."""
    async with running_server(tmp_path, budgets=budgets) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner, \
            Client.connect(srv.ws_url) as judge, \
            httpx.AsyncClient(base_url=srv.url) as http:
        lab = await new_lab(owner, "judging")
        await proven(owner, lab, n)
        yield owner, judge, http, lab


async def test_crosses_are_budgeted_per_account_and_a_refused_one_spends_nothing(
        tmp_path: Path) -> None:
    """Each cross is a glslang compile and a child the pool keeps: past `crosses_per_hour`
    the account's next is refused before the lab sees it, from any of its connections
    (each anonymous connection is a caller of its own); a cross the lab refuses is not
    counted; the owner crosses without a budget."""
    async with running_server(tmp_path, budgets=Budgets(crosses_per_hour=2)) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner, \
            Client.connect(srv.ws_url) as one, Client.connect(srv.ws_url) as other:
        lab = await new_lab(owner, "crosses")
        a, b = await proven(owner, lab, 2)
        unproven, = await born(owner, lab, 1)
        for _ in range(3):  # refused by the lab: spends nothing
            err = await refused(one, "lab.cross", lab, {"a": a, "b": unproven, "client_key": "k"})
            assert err.code == "unknown_organism"  # (an unproven one, to a visitor)
        offered = []
        for i, visitor in enumerate((one, other)):
            offered.append(await visitor.request("lab.cross", lab,
                                                 {"a": a, "b": b, "client_key": f"k{i}"}))
        for o in offered:
            await settled(owner, lab, o["id"])
        before = await owner.request("lab.info", lab, {})
        err = await refused(other, "lab.cross", lab, {"a": b, "b": a, "client_key": "k9"})
        assert err.code == "over_budget"
        assert err.message == "more than 2 crosses in an hour"
        retry = err.detail.pop("retry_after")
        assert err.detail == {"budget": "crosses_per_hour", "limit": 2}
        assert 3500 < retry <= 3600
        assert await owner.request("lab.info", lab, {}) == before
        assert srv.state.ledger.hits[("crosses_per_hour", "127.0.0.1")].count == 1
        mine = await owner.request("lab.cross", lab, {"a": b, "b": a, "client_key": "o"})
        assert mine["status"] in ("validating", "rejected")  # (a duplicate child is logged)


async def test_public_pairs_and_votes_are_budgeted_per_account(tmp_path: Path) -> None:
    """A deal is held in the lab's memory up to twenty minutes, a vote is a stored event:
    past `deals_per_hour` and `votes_per_hour` (over the websocket and the seed's HTTP
    route alike, one account for the address) they are refused, and the lab is unchanged;
    the owner deals and votes without a budget."""
    budgets = Budgets(deals_per_hour=3, votes_per_hour=2)
    async with judging(tmp_path, budgets, 3) as (owner, judge, http, lab):
        pairs = [await judge.request("lab.public_pair", lab, {"client_key": "k"})
                 for _ in range(3)]
        err = await refused(judge, "lab.public_pair", lab, {"client_key": "k"})
        assert (err.code, err.detail["budget"], err.detail["limit"]) == \
            ("over_budget", "deals_per_hour", 3)
        assert err.message == "more than 3 public pairs dealt an hour"
        assert 1000 < err.detail["retry_after"] <= 1200  # one refills in 3,600 / 3 s

        def vote(pair: dict) -> dict:
            return {"pair": pair["pair"], "winner": pair["left"]["id"], "client_key": "k"}

        await judge.request("lab.vote", lab, vote(pairs[0]))
        assert (await http.post("/api/pub/vote?lab=judging", json=vote(pairs[1]))
                ).status_code == 200
        over = await http.post("/api/pub/vote?lab=judging", json=vote(pairs[2]))
        assert over.status_code == 429
        error = over.json()["error"]
        assert (error["code"], error["detail"]["budget"]) == ("over_budget", "votes_per_hour")
        assert (await refused(judge, "lab.vote", lab, vote(pairs[2]))).code == "over_budget"
        assert (await owner.request("lab.info", lab, {}))["votes"] == 2
        for _ in range(4):  # the owner has no budget
            pair = await owner.request("lab.public_pair", lab, {"client_key": "o"})
            await owner.request("lab.vote", lab, {"pair": pair["pair"], "client_key": "o",
                                                  "winner": pair["right"]["id"]})
        assert (await owner.request("lab.info", lab, {}))["votes"] == 6


async def test_a_deal_or_vote_the_lab_never_saw_is_given_back(tmp_path: Path) -> None:
    """A request the directory refuses before any lab has it (`unknown_actor`: a mistyped
    lab name) gives back its deal or vote, over the websocket and the seed's HTTP route
    alike; the lab's own refusals (`not_dealt`) still spend them."""
    budgets = Budgets(deals_per_hour=2, votes_per_hour=2)
    async with judging(tmp_path, budgets, 2) as (_owner, judge, http, lab):
        vote = {"pair": "p", "winner": "s-0000000000000000", "client_key": "k"}
        for _ in range(3):
            nope = await http.post("/api/pub/vote?lab=nope", json=vote)
            assert (nope.status_code, nope.json()["error"]["code"]) == (404, "unknown_actor")
            for op, args in (("lab.vote", vote), ("lab.public_pair", {"client_key": "k"})):
                assert (await refused(judge, op, "lab:nope", args)).code == "unknown_actor"
        for _ in range(2):
            assert (await refused(judge, "lab.vote", lab, vote)).code == "not_dealt"
            await judge.request("lab.public_pair", lab, {"client_key": "k"})
        for op, args in (("lab.vote", vote), ("lab.public_pair", {"client_key": "k"})):
            assert (await refused(judge, op, lab, args)).code == "over_budget"


async def test_a_cross_s_validation_is_charged_to_the_crosser(tmp_path: Path,
                                                              monkeypatch) -> None:
    """The validation runs off the lab's task, after the cross is answered; the seconds it
    held its worker (here at least the half second it is held up) are charged to the
    crosser's CPU budget all the same."""
    def held_validate(track: str, code: str) -> str | None:
        time.sleep(0.5)
        return validate(track, code)

    budgets = Budgets(cpu_rate=1e-9, cpu_burst_anonymous=10.0)  # (no refill meanwhile)
    async with running_server(tmp_path, budgets=budgets) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner, \
            Client.connect(srv.ws_url) as visitor:
        lab = await new_lab(owner, "charged")
        a, b = await proven(owner, lab, 2)
        monkeypatch.setattr(lab_actor, "validate", held_validate)
        offered = await visitor.request("lab.cross", lab, {"a": a, "b": b, "client_key": "v"})
        assert offered["status"] == "validating"
        await settled(owner, lab, offered["id"])
        account = srv.state.ledger.accounts[ACCOUNT]
        with trio.fail_after(5):  # (the charge follows the verdict's message)
            while account.cpu.level > 10.0 - 0.5:
                await trio.sleep(0.02)


async def test_a_vote_refused_for_another_budget_spends_none() -> None:
    """A deal or a vote is spent only by a request let through: one refused for another
    budget first (here `loads_at_once`: its lab is not live and the account is loading
    one already) leaves the account's votes as they were."""
    ledger = Ledger(Budgets(loads_at_once=1, votes_per_hour=3))
    async with open_directory(MemoryEventStore(), [ActorKind.of(WORLD)]) as directory:
        claims = Claims(ledger, directory, raise_refusal)
        account = ledger.client_account("bob", "127.0.0.1", "agent", trio.current_time())
        vote = Call("lab.vote", None, "agent", "bob")
        account.loading = 1  # a world being loaded for it already
        for _ in range(4):
            with pytest.raises(ProtocolError) as err:
                claims.admit(account, "bob", vote, "lab:cold")
            assert err.value.detail["budget"] == "loads_at_once"
        account.loading = 0
        for _ in range(3):
            ticket = claims.admit(account, "bob", vote, "lab:cold")
            assert ticket is not None
            ticket.settle(True)
        with pytest.raises(ProtocolError) as err:
            claims.admit(account, "bob", vote, "lab:cold")
        assert err.value.detail["budget"] == "votes_per_hour"


async def test_a_deal_or_vote_waiting_in_a_lab_s_mailbox_when_it_stops_is_given_back() -> None:
    """Requests still waiting in a lab's mailbox when it stops (here the owner holds it)
    are refused `unavailable` without the lab taking them: their deals and votes are
    given back, as for any refusal made before the lab had the request."""
    async with lab_visit(Budgets(deals_per_hour=2, votes_per_hour=2), "lab:held") as visit:
        answers = []
        for call in [VOTE, DEAL] * 2:
            answer = Charged(visit.ledger, visit.account,
                             visit.claims.admit(visit.account, "bob", call, "lab:held"))
            visit.directory.ref("lab:held").send(call, answer)
            answers.append(answer)
        visit.directory.hold("lab:held")  # (no checkpoint since the sends: the lab took none)
        assert [a.error.code for a in answers if a.error is not None] == ["unavailable"] * 4
        for call in [VOTE, DEAL] * 2:  # all four given back
            assert visit.claims.admit(visit.account, "bob", call, "lab:held") is not None


async def test_a_deal_or_vote_refused_by_a_lab_s_full_mailbox_is_given_back() -> None:
    """A deal or a vote its lab's full mailbox refuses (`overloaded`, answered as the
    session answers a refused send) never reached the lab: it is given back."""
    async with lab_visit(Budgets(deals_per_hour=1, votes_per_hour=1), "lab:busy",
                         mailbox_size=1) as visit:
        lab = visit.directory.ref("lab:busy")
        lab.send(Call("lab.info", None, "owner", "owner:me"), Pending())  # now full
        for call in [VOTE, DEAL] * 2:  # (one each an hour: the second admitted if given back)
            answer = Charged(visit.ledger, visit.account,
                             visit.claims.admit(visit.account, "bob", call, "lab:busy"))
            with pytest.raises(ProtocolError) as full:
                lab.send(call, answer)
            answer.fail(full.value)
            assert isinstance(answer.error, ProtocolError)
            assert (answer.error.code, answer.error.message) == (
                ErrorCode.OVERLOADED, "the mailbox of lab:busy is full")
