"""What each client claims, held to its budget (server/claims.py): a ticket its world
never settles is freed by the backstop, and a visitor's lab budgets live on its account."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
import trio

from actors.lab import WORLD
from actors.runtime import ActorKind, Call, open_directory
from actors.runtime.context import RuntimeConfig
from actors.store import MemoryEventStore
from protocol.errors import ProtocolError
from server import watchdog
from server.budgets import HOUR, Budgets, Ledger
from server.claims import BACKSTOP, Claims, Ticket
from tests.server import burn_world
from tests.server.claims_harness import raise_refusal
from tests.server.ws_harness import error, raw_client, result, running_server

ANONYMOUS = "address:127.0.0.1"


async def test_a_ticket_never_settled_is_freed_by_the_sweep_and_its_late_settle_frees_nothing(
        mock_clock: trio.testing.MockClock) -> None:
    """The ledger's sweep frees (as refused) the tickets issued before the time it is given:
    their places in flight, the loads and the create they held; once freed, a ticket's
    settle does nothing (the place another ticket took stays counted)."""
    ledger = Ledger(Budgets(inflight_anonymous=1))
    account = ledger.client_account(None, "10.0.0.1", "spectator", trio.current_time())
    assert account is not None
    account.sessions = 1  # (kept by its session: not forgotten once freed)
    dropped = Ticket(account, account.creates, "counter:a", True, "counter:a")
    assert ledger.may_send(account) is not None
    mock_clock.jump(10)
    now = trio.current_time()
    assert ledger.sweep(now, now - 10) == {}  # issued at now - 10: not before it
    assert (account.inflight, account.loading, account.creates.pending) == (1, 1, 1)
    mock_clock.jump(1)
    now = trio.current_time()
    assert ledger.sweep(now, now - 10) == {"address:10.0.0.1": [dropped]}
    assert (account.inflight, account.loading, account.creates.pending) == (0, 0, 0)
    assert ledger.may_send(account) is None and not account.creates.times
    held = Ticket(account, None, None, False, "counter:b")
    dropped.settle(True)  # its world answers at last
    assert account.tickets == {held: now} and account.created == set()
    assert ledger.sweep(now, now + 1) == {"address:10.0.0.1": [held]}
    assert ledger.sweep(now, now + 1) == {}


async def test_a_request_its_world_never_answers_is_freed_by_the_backstop(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A client whose every place in flight is held by a request its world never answers
    is refused until the watchdog's sweep frees it, BACKSTOP ask timeouts after it was
    sent; then it is served again. /metrics counts the requests in flight and those
    freed, and the error log says whose and to which world."""
    caplog.set_level(logging.WARNING)
    loading = burn_world.Loading()
    loading.gate = trio.Event()  # slow worlds answer nothing until it is set
    budgets = Budgets(inflight_anonymous=1, loads_at_once=100)
    ask_timeout = 0.3
    async with running_server(tmp_path, budgets=budgets,
                              runtime=RuntimeConfig(ask_timeout=ask_timeout),
                              **burn_world.slow_settings(loading)) as srv, \
            raw_client(srv) as c, httpx.AsyncClient() as http:

        async def metrics() -> str:
            return (await http.get(f"{srv.url}/metrics")).text

        await c.send({"id": 1, "op": "slow.spin", "to": "slow:x", "args": {"ms": 0}})
        assert error(await c.recv())["code"] == "timeout"  # its world still has it
        assert "\npetridish_inflight 1\n" in await metrics()
        watchdog.sweep(srv.state, trio.current_time())  # within the backstop: held
        refused = error(await c.call("slow.spin", "slow:y", ms=0))
        assert refused["detail"] == {"budget": "inflight_anonymous", "limit": 1}

        watchdog.sweep(srv.state, trio.current_time() + BACKSTOP * ask_timeout)
        text = await metrics()
        assert "\npetridish_inflight 0\n" in text
        assert "\npetridish_inflight_freed_total 1\n" in text
        assert 'petridish_warnings_total{event="unsettled"} 1' in text
        assert (f"unsettled: freed the requests of {ANONYMOUS} in flight for over 9 s (1, "
                "to slow:x): their worlds have not answered them") in caplog.text
        await c.send({"id": 3, "op": "slow.spin", "to": "slow:y", "args": {"ms": 0}})
        with trio.fail_after(10):
            while srv.state.ledger.accounts[ANONYMOUS].inflight != 1:
                await trio.sleep(0.01)
        loading.gate.set()  # slow:x answers its freed request at last: nothing more freed
        assert result(await c.recv()) == {"ms": 0}
        assert srv.state.ledger.accounts[ANONYMOUS].inflight == 0


async def test_a_visitors_spent_budget_is_kept_with_its_account_until_it_refills(
        mock_clock: trio.testing.MockClock) -> None:
    """A visitor's lab budgets live on its account (`Account.paced`), so the ledger's sweep
    does not forget an account whose votes are spent (it would start afresh), only one
    whose votes have refilled."""
    ledger = Ledger(Budgets(votes_per_hour=2))
    async with open_directory(MemoryEventStore(), [ActorKind.of(WORLD)]) as directory:
        claims = Claims(ledger, directory, raise_refusal)
        vote = Call("lab.vote", None, "agent", "bob")
        account = ledger.client_account("bob", "127.0.0.1", "agent", trio.current_time())
        for _ in range(2):
            ticket = claims.admit(account, "bob", vote, "lab:cold")
            assert ticket is not None
            ticket.settle(True)
        mock_clock.jump(HOUR / 4)  # half a vote back: still spent
        ledger.sweep(trio.current_time())
        assert ledger.accounts["bob"] is account
        account = ledger.client_account("bob", "127.0.0.1", "agent", trio.current_time())
        with pytest.raises(ProtocolError) as err:
            claims.admit(account, "bob", vote, "lab:cold")
        assert err.value.detail["budget"] == "votes_per_hour"
        mock_clock.jump(HOUR)  # refilled: nothing left to remember
        ledger.sweep(trio.current_time())
        assert "bob" not in ledger.accounts
