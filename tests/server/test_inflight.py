"""An account's requests in flight, over all its connections, and what it owes for the
server time they took (server/budgets.py, server/claims.py): a request holds its place
until its world is done with it, a timed-out one too, and a debt run up while others use
the server is owed in full."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import trio

from actors.runtime.context import RuntimeConfig
from actors.runtime.mailbox import wait_answer
from protocol.errors import ErrorCode, ProtocolError
from server.budgets import Budgets, Ledger
from server.claims import Ticket
from server.replies import Charged
from tests.server import burn_world
from tests.server.mcp_harness import tool
from tests.server.ws_harness import (
    RECV_TIMEOUT,
    Raw,
    error,
    raw_client,
    result,
    running_server,
)

ANONYMOUS = "address:127.0.0.1"


def _spin(rid: int, world: str) -> dict[str, object]:
    return {"id": rid, "op": "slow.spin", "to": f"slow:{world}", "args": {"ms": 0}}


async def _until_inflight(srv: burn_world.Running, n: int) -> None:
    account = srv.state.ledger.accounts[ANONYMOUS]
    with trio.fail_after(10):
        while account.inflight != n:
            await trio.sleep(0.01)


async def _replies(c: Raw, n: int) -> dict[int, dict]:
    replies = [await c.recv() for _ in range(n)]
    return {r["id"]: r for r in replies}


async def test_an_accounts_requests_in_flight_are_bounded_over_all_its_connections(
        tmp_path: Path) -> None:
    loading = burn_world.Loading()
    loading.gate = trio.Event()  # the world answers nothing until it is set
    budgets = Budgets(inflight_anonymous=3, loads_at_once=100)
    async with running_server(tmp_path, budgets=budgets,
                              **burn_world.slow_settings(loading)) as srv, \
            raw_client(srv) as a, raw_client(srv) as b:
        for rid in (1, 2):
            await a.send(_spin(rid, "x"))
        await _until_inflight(srv, 2)
        await b.send(_spin(3, "x"))
        await b.send(_spin(4, "x"))
        assert await b.recv() == {"id": 4, "ok": False, "error": {
            "code": "over_budget", "message": "more than 3 requests of this client are in "
            "flight (over all its connections); retry when one is answered",
            "detail": {"budget": "inflight_anonymous", "limit": 3}}}
        loading.gate.set()
        assert result(await b.recv()) == {"ms": 0}
        assert all(r["ok"] for r in (await _replies(a, 2)).values())
        await _until_inflight(srv, 0)
        assert result(await b.call("slow.spin", "slow:x", ms=0)) == {"ms": 0}
        assert srv.state.ledger.hits[("inflight_anonymous", "127.0.0.1")].count == 1


async def test_mcp_calls_and_lab_routes_share_the_accounts_requests_in_flight(
        tmp_path: Path) -> None:
    loading = burn_world.Loading()
    loading.gate = trio.Event()
    budgets = Budgets(inflight_anonymous=1, loads_at_once=100)
    async with running_server(tmp_path, budgets=budgets,
                              **burn_world.slow_settings(loading)) as srv, \
            raw_client(srv) as c, httpx.AsyncClient() as http:
        await c.send(_spin(1, "x"))
        await _until_inflight(srv, 1)
        limit = {"budget": "inflight_anonymous", "limit": 1}
        assert (await tool(http, srv.url, "list_games", {}))["error"]["detail"] == limit
        seen = await http.post(f"{srv.url}/api/pub/seen", json={
            "id": "s-0000000000000000", "client_key": "k", "ok": True})
        assert (seen.status_code, seen.json()["error"]["detail"]) == (429, limit)
        loading.gate.set()
        assert result(await c.recv()) == {"ms": 0}
        await _until_inflight(srv, 0)
        assert (await tool(http, srv.url, "list_games", {}))["ok"]


@pytest.mark.parametrize(("budgets", "budget"), [
    (Budgets(inflight_anonymous=1, loads_at_once=100), "inflight_anonymous"),
    (Budgets(loads_at_once=1), "loads_at_once")])
async def test_a_timed_out_request_holds_its_place_until_its_world_is_done_with_it(
        tmp_path: Path, budgets: Budgets, budget: str) -> None:
    loading = burn_world.Loading()
    loading.gate = trio.Event()
    async with running_server(tmp_path, budgets=budgets,
                              runtime=RuntimeConfig(ask_timeout=0.3),
                              **burn_world.slow_settings(loading)) as srv, \
            raw_client(srv) as c:
        await c.send(_spin(1, "x"))
        assert error(await c.recv())["code"] == "timeout"  # the world still has it
        refused = error(await c.call("slow.spin", "slow:y", ms=0))
        assert (refused["code"], refused["detail"]["budget"]) == ("over_budget", budget)
        loading.gate.set()
        await _until_inflight(srv, 0)
        assert srv.state.ledger.accounts[ANONYMOUS].loading == 0
        assert result(await c.call("slow.spin", "slow:y", ms=0)) == {"ms": 0}


async def test_an_ask_given_up_holds_its_ticket_until_its_world_answers() -> None:
    """An MCP call's or a lab route's ask (`Charged`) that times out, or whose client
    left, keeps its place until its world answers it."""
    ledger = Ledger(Budgets())
    account = ledger.client_account(None, "10.0.0.1", "spectator", 0.0)
    assert account is not None
    answer = Charged(ledger, account, Ticket(account, None, None, True))
    with pytest.raises(ProtocolError) as timed_out:
        await wait_answer(answer, 0, "lab:x")
    assert timed_out.value.code == ErrorCode.TIMEOUT
    answer.close()
    assert (account.inflight, account.loading) == (1, 1)
    answer.succeed(None)  # its world answers at last
    assert (account.inflight, account.loading) == (0, 0)


async def test_a_deep_debt_is_rested_out_a_read_at_a_time(tmp_path: Path) -> None:
    """A connection whose client owes more than MAX_REST s of refill refuses the frames it
    read before it rests, and rests MAX_REST s at most, so the pongs queued behind them are
    read (a rest as long as the debt would have the keepalive drop it)."""
    async with running_server(tmp_path, **burn_world.settings()) as srv, \
            raw_client(srv) as c, burn_world.others_busy(srv):
        ledger = srv.state.ledger
        ledger.charge(ledger.accounts[ANONYMOUS], 60.0, trio.current_time())  # 20 minutes
        for rid in (1, 2, 3):
            await c.send({"id": rid, "op": "burn.spin", "to": "burn:x", "args": {"ms": 0}})
        for rid in (1, 2, 3):
            refused = await c.recv()
            assert (refused["id"], error(refused)["detail"]["budget"]) == (rid, "cpu")
        pong = await c.ws.ping()
        with trio.fail_after(RECV_TIMEOUT):  # (a bound, not a timing: the pong is read)
            await pong.wait()


def test_a_debt_run_up_while_others_use_the_server_is_refused_until_paid() -> None:
    ledger = Ledger(Budgets(cpu_rate=0.05, cpu_burst_anonymous=0.25))
    me = ledger.client_account(None, "10.0.0.1", "spectator", 0.0)
    others = ledger.client_account(None, "10.0.0.2", "spectator", 0.0)
    ledger.charge(others, 0.01, 0.0)  # the server is contended ...
    ledger.charge(me, 2.25, 0.0)  # ... and this client spends 2 s past its burst: 40 s owed
    for t in range(1, 40):
        ledger.charge(others, 0.01, t)  # they go on using it
        refusal = ledger.may_compute(me, t)
        assert refusal is not None and refusal.detail["budget"] == "cpu"
        assert refusal.detail["retry_after"] == pytest.approx(40 - t, abs=0.01)
    ledger.charge(others, 0.01, 40.5)
    assert ledger.may_compute(me, 40.5) is None

