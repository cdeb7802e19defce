"""A request forwarded to the process hosting its world is charged to its client, on the
process the client is connected to, like one served there: the host's reply carries the
handling's seconds and the bytes its events took in the store (server/cluster/wire.py),
told to the waiting answer before it is given. A reply without them (an older peer)
answers all the same; a figure that is no finite number, or past its cap, cannot poison
the ledger. A forwarded write that a link carried before it broke (here or on a process
it passed) may have been applied: a refusal it gets after, made before a world had it
again, says its outcome is unknown, and a lab's vote or deal stays spent."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
import trio

from actors.runtime import Call
from actors.runtime.mailbox import Pending
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops.counter import AddArgs, Total
from protocol.ops.lab import VoteArgs
from server.budgets import HOUR, Account, Budgets
from server.claims import Ticket
from server.cluster.peers import Link
from server.cluster.router import _Forwarded
from server.cluster.wire import (
    MAX_SECONDS,
    MAX_STORED,
    Lines,
    costs_of,
    refusal,
    reroute,
    unplaceable,
)
from server.replies import Charged
from tests.cluster.conftest import Node, Nodes
from tests.server import burn_world
from tests.server.claims_harness import VOTE, lab_visit
from tests.server.ws_harness import error, raw_client, result

WORLD = "counter:w"
ANONYMOUS = "address:127.0.0.1"  # (an agent: the test nodes are open)


def test_a_reply_s_figures_are_finite_numbers_from_zero_to_their_caps() -> None:
    assert costs_of({"id": 1, "ok": True}) == (0.0, 0)
    assert costs_of({"seconds": 0.25, "stored": 61}) == (0.25, 61)
    assert costs_of({"seconds": 2, "stored": 61.9}) == (2, 61)
    for bad in (-1, -0.5, math.nan, -math.inf, "1", True, None, [1], {"n": 1}):
        assert costs_of({"seconds": bad, "stored": bad}) == (0.0, 0), bad
    assert costs_of({"seconds": math.inf, "stored": math.inf}) == (MAX_SECONDS, MAX_STORED)
    assert costs_of({"seconds": 1e12, "stored": 10**30}) == (MAX_SECONDS, MAX_STORED)


@pytest.mark.postgres
async def test_a_forwarded_write_is_charged_its_stored_bytes_where_its_client_is(
        nodes: Nodes) -> None:
    """A client of node a adds to a counter hosted on node b: its account on a is charged
    exactly the bytes b stored for it, and once `stored_per_hour` is spent its writes are
    refused on a, before b sees them, while its reads are answered."""
    limit = 3_000
    a = await nodes.start("a", budgets=Budgets(stored_per_hour=limit, cpu_burst=600.0))
    b = await nodes.start("b")
    async with raw_client(b.running) as host:
        result(await host.call("counter.create", WORLD))
    store = b.directory.store
    first = await store.revision(WORLD)
    began = trio.current_time()
    async with raw_client(a.running) as c:
        refused, adds = None, 0
        for _ in range(100):
            reply = await c.call("counter.add", WORLD, amount=1, note="n" * 100)
            if not reply["ok"]:
                refused = error(reply)
                break
            adds += 1
        assert refused is not None, "the adds were never refused"
        retry = refused["detail"].pop("retry_after")
        assert refused == {"code": "over_budget", "message": "this client's requests stored "
                           "more than 3,000 bytes in an hour; reads are still served",
                           "detail": {"budget": "stored_per_hour", "limit": limit}}
        assert 0 < retry <= HOUR
        rows = await store.read_rows(WORLD, after=first)
        assert len(rows) == adds
        spent = sum(len(text) for _, text in rows)
        assert spent > limit
        account = a.running.state.ledger.accounts[ANONYMOUS]
        # charged the stored bytes exactly, less what refilled meanwhile
        refilled = spent - (limit - account.stored.refill(trio.current_time()))
        assert -1e-6 <= refilled <= limit / HOUR * (trio.current_time() - began)
        assert result(await c.call("counter.get", WORLD))["adds"] == adds
        assert await store.revision(WORLD) == first + adds
    assert WORLD in b.directory.hosted() and WORLD not in a.directory.hosted()


@pytest.mark.postgres
async def test_a_forwarded_request_is_charged_the_host_s_handling_time(nodes: Nodes) -> None:
    """A client of node a asks a world hosted on node b to spin: its account on a is
    charged b's handling time (at least the spin), and its recent use rises."""
    budgets = Budgets(cpu_rate_agent=1e-9, cpu_burst=10.0)  # no refill: level = spend
    a = await nodes.start("a", budgets=budgets, **burn_world.settings())
    b = await nodes.start("b", **burn_world.settings())
    async with raw_client(b.running) as host:
        result(await host.call("burn.spin", "burn:x", ms=0))  # b hosts it
    spins, ms = 4, 50
    async with raw_client(a.running) as c:
        for _ in range(spins):
            assert result(await c.call("burn.spin", "burn:x", ms=ms)) == {"ms": ms}
        account = a.running.state.ledger.accounts[ANONYMOUS]
        spent = account.cpu.burst - account.cpu.refill(trio.current_time())
        assert spent >= spins * ms / 1000, spent
        assert account.recent.read(trio.current_time()) > 0
    assert "burn:x" in b.directory.hosted() and "burn:x" not in a.directory.hosted()


async def _old_peer(replies: list[dict[str, Any]], task_status: trio.TaskStatus[int]
                    ) -> None:
    """A peer of the protocol before replies carried figures: it greets anyone and answers
    its requests in turn with `replies` (each with its request's id)."""

    async def serve(stream: trio.SocketStream) -> None:
        lines = Lines(stream)
        while (frame := await lines.next()) is not None:
            if frame.get("op") == "hello":
                reply: dict[str, Any] = {"ok": True, "result": {"node": "old"}}
            elif frame.get("op") == "ping":
                reply = {"ok": True, "result": None}
            else:
                reply = replies.pop(0)
            # (json's own encoder: it writes NaN and Infinity, as a careless peer might)
            await stream.send_all(json.dumps({**reply, "id": frame.get("id")}).encode()
                                  + b"\n")

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(serve, listeners)


@pytest.mark.postgres
async def test_a_reply_without_figures_or_with_bad_ones_still_answers(nodes: Nodes) -> None:
    """Node a forwards writes to a peer whose replies carry no figures (an older one), then
    figures that are no numbers or past any sense: each is answered, the account charged
    nothing for the first and at most the caps for the others, its ledger finite."""
    a = await nodes.start("a")
    ledger = a.running.state.ledger
    account = ledger.account("ann", "agent", trio.current_time())
    total = {"total": 1, "adds": 1, "revision": 2}
    replies = [{"ok": True, "result": total},
               {"ok": True, "result": total, "seconds": "x", "stored": -5},
               {"ok": False, "error": {"code": "bad_request", "message": "no"},
                "seconds": math.nan, "stored": True},
               {"ok": True, "result": total, "seconds": math.inf, "stored": 1e400}]
    async with trio.open_nursery() as nursery:
        port = await nursery.start(_old_peer, replies)
        link = Link("old", f"127.0.0.1:{port}", "a", "", nursery, silence=5.0)
        answers = []
        for _ in range(4):
            answer = Charged(ledger, account, Ticket(account, None, None, False, WORLD))
            a.cluster.router.forward(link, WORLD, Call("counter.add", AddArgs(1), "agent",
                                                        "ann"), answer, 0)
            with trio.fail_after(10):
                await answer.done.wait()
            answers.append(answer)
            if len(answers) == 3:  # nothing charged yet
                assert account.stored.level == account.stored.burst
                assert account.cpu.level == account.cpu.burst
                assert account.recent.read(trio.current_time()) == 0
        nursery.cancel_scope.cancel()
    assert [x.value for x in answers] == [Total(1, 1, 2), Total(1, 1, 2), None,
                                          Total(1, 1, 2)]
    assert isinstance(answers[2].error, ProtocolError)
    assert answers[2].error.code == ErrorCode.BAD_REQUEST
    assert not account.tickets  # every answer settled its ticket
    assert account.stored.level == account.stored.burst - MAX_STORED
    assert math.isfinite(account.cpu.level) and account.cpu.level < account.cpu.burst


async def _vote_forwarded(node: Node, account: Account, vote: Call, link: Link
                          ) -> ProtocolError:
    """The refusal of `vote` for lab:nope, admitted on `node` for `account` and forwarded
    on `link` (its answer charged, or given back, as a client's)."""
    state = node.running.state
    answer = Charged(state.ledger, account, state.claims.admit(account, "ann", vote,
                                                               "lab:nope"))
    node.cluster.router.forward(link, "lab:nope", vote, answer, 0)
    with trio.fail_after(10):
        await answer.done.wait()
    assert isinstance(answer.error, ProtocolError)
    return answer.error


@pytest.mark.postgres
async def test_a_vote_the_host_refused_before_delivery_is_given_back_where_its_client_is(
        nodes: Nodes) -> None:
    """A vote node a forwards to node b, which refuses it before any lab had it (no such
    lab: `unknown_actor`), comes back as not delivered (`delivered: false` on the link):
    the vote is given back to the account on a; the refusal is the one b made."""
    a = await nodes.start("a", budgets=Budgets(votes_per_hour=2))
    await nodes.start("b")
    state = a.running.state
    account = state.ledger.account("ann", "agent", trio.current_time())
    vote = Call("lab.vote", VoteArgs("p", "s-0000000000000000", "k"), "agent", "ann")
    link = await a.cluster.router._link("b")
    for _ in range(3):
        refused = await _vote_forwarded(a, account, vote, link)
        assert (refused.code, refused.message) == (
            ErrorCode.UNKNOWN_ACTOR, "there is no world 'lab:nope'; lab.create creates it")
        assert not refused.delivered
    assert state.claims.admit(account, "ann", vote, "lab:nope") is not None  # all given back


@pytest.mark.postgres
async def test_a_request_delivered_here_after_its_world_re_homed_is_charged_to_its_client(
        nodes: Nodes) -> None:
    """A forwarded request whose world re-homed to the process its client is on is
    delivered there: its handling time and the bytes its events took are charged to its
    client's account, as for one served here from the start."""
    limit = 3_000
    a = await nodes.start("a", budgets=Budgets(stored_per_hour=limit, cpu_rate_agent=1e-9,
                                               cpu_burst=10.0))
    async with raw_client(a.running) as c:
        result(await c.call("counter.create", WORLD))  # a hosts it
    store, ledger = a.directory.store, a.running.state.ledger
    first = await store.revision(WORLD)
    account = ledger.account("ann", "agent", trio.current_time())
    answer = Charged(ledger, account, Ticket(account, None, None, False, WORLD))
    began = trio.current_time()
    a.cluster.router._deliver(WORLD, Call("counter.add", AddArgs(1, "n" * 100), "agent",
                                          "ann"), _Forwarded(answer, began + 10), 0)
    with trio.fail_after(10):
        await answer.done.wait()
    assert answer.value == Total(1, 1, first + 1)
    [(_, text)] = await store.read_rows(WORLD, after=first)
    charged = limit - account.stored.refill(trio.current_time())
    assert 0 <= len(text) - charged <= limit / HOUR * (trio.current_time() - began)
    assert account.cpu.refill(trio.current_time()) < account.cpu.burst


@pytest.mark.postgres
async def test_a_vote_that_ran_out_of_time_before_it_was_sent_is_given_back(
        nodes: Nodes) -> None:
    """A forwarded vote still waiting for its world's holder when its time runs out was
    never sent: refused `unavailable`, not delivered, the vote given back. One whose link
    broke after carrying it may have been stored: it stays spent, its outcome unknown."""
    a = await nodes.start("a", budgets=Budgets(votes_per_hour=1))
    state = a.running.state
    account = state.ledger.account("ann", "agent", trio.current_time())
    vote = Call("lab.vote", VoteArgs("p", "s-0000000000000000", "k"), "agent", "ann")
    for sent in (False, False, True):
        answer = Charged(state.ledger, account, state.claims.admit(account, "ann", vote,
                                                                   "lab:far"))
        forwarded = _Forwarded(answer, trio.current_time())  # (out of time)
        forwarded.sent = sent
        a.cluster.router._deliver("lab:far", vote, forwarded, 0)
        assert isinstance(answer.error, ProtocolError)
        assert (answer.error.code, answer.error.delivered) == (ErrorCode.UNAVAILABLE, sent)
        assert answer.error.detail == ({"actor": "lab:far", "outcome": "unknown"} if sent
                                       else {"actor": "lab:far"})
    with pytest.raises(ProtocolError) as spent:
        state.claims.admit(account, "ann", vote, "lab:far")
    assert spent.value.detail["budget"] == "votes_per_hour"


def _sent_back_by_a_leaving_process(sent: bool) -> dict[str, Any]:
    """The reply of a process that is leaving to a vote it had forwarded on (`sent`: over
    a link that broke after carrying it), as its link writes it (peers.py)."""
    pending = Pending()
    forwarded = _Forwarded(pending, 0.0)
    forwarded.sent = sent
    forwarded.fail(reroute("lab:nope", "is not hosted by a process that is leaving"))
    assert pending.error is not None
    reply = {"ok": False, "error": refusal(pending.error)}
    return reply if pending.error.delivered else {**reply, "delivered": False}


@pytest.mark.postgres
async def test_a_vote_a_process_it_passed_had_sent_stays_spent_when_refused_here_again(
        nodes: Nodes) -> None:
    """Node a forwards a vote to a process that sends it back (`reroute`: it is leaving).
    When that process had sent the vote on over a link that broke after carrying it, its
    refusal says `outcome: "unknown"`, and the refusal a makes when it tries again, before
    a lab had the vote (no such lab: `unknown_actor`), says so too and counts as
    delivered: the vote stays spent. Otherwise that refusal is the vote's, given back."""
    a = await nodes.start("a", budgets=Budgets(votes_per_hour=1))
    state = a.running.state
    account = state.ledger.account("ann", "agent", trio.current_time())
    vote = Call("lab.vote", VoteArgs("p", "s-0000000000000000", "k"), "agent", "ann",
                request_id="v1")
    replies = [_sent_back_by_a_leaving_process(sent) for sent in (False, True)]
    async with trio.open_nursery() as nursery:
        port = await nursery.start(_old_peer, replies)
        link = Link("b", f"127.0.0.1:{port}", "a", "", nursery, silence=5.0)
        for sent in (False, True):
            refused = await _vote_forwarded(a, account, vote, link)
            assert (refused.code, refused.delivered) == (ErrorCode.UNKNOWN_ACTOR, sent)
            assert refused.detail == ({"actor": "lab:nope", "outcome": "unknown"} if sent
                                      else {"actor": "lab:nope"})
        nursery.cancel_scope.cancel()
    with pytest.raises(ProtocolError) as spent:
        state.claims.admit(account, "ann", vote, "lab:nope")
    assert spent.value.detail["budget"] == "votes_per_hour"


def test_any_unavailable_of_a_write_sent_on_a_broken_link_says_its_outcome_is_unknown(
        ) -> None:
    """Once a link broke after carrying a write, every `unavailable` it gets after (a
    timeout, a process that cannot place it, a reroute past its hops) says so; a write
    that never left says nothing of it, and other refusals are left as they are."""
    def refused(sent: bool, error: ProtocolError) -> dict:
        pending = Pending()
        forwarded = _Forwarded(pending, 0.0)
        forwarded.sent = sent
        forwarded.fail(error)
        assert pending.error is not None and pending.error.code == error.code
        assert type(pending.error) is type(error)  # a Reroute still sends it back
        return pending.error.detail

    for sent_back in (unplaceable(WORLD, "down"), reroute(WORLD, "was not found")):
        assert refused(True, sent_back) == {**sent_back.detail, "outcome": "unknown"}
        assert "outcome" not in refused(False, sent_back) and "outcome" not in sent_back.detail
    assert "outcome" not in refused(True, ProtocolError(ErrorCode.BAD_REQUEST, "no"))


async def test_a_sent_vote_refused_before_a_lab_had_it_again_stays_spent_its_outcome_unknown(
        ) -> None:
    """A vote whose link broke after carrying it (it may have been stored where it went)
    is refused, delivered again, before a lab had it (its lab's mailbox is full:
    `overloaded`; no such lab here: `unknown_actor`): the refusal keeps its code, says the
    vote's outcome is unknown and counts as delivered, so the vote stays spent."""
    async with lab_visit(Budgets(votes_per_hour=2), "lab:busy", mailbox_size=1) as visit:
        visit.directory.ref("lab:busy").send(Call("lab.info", None, "owner", "owner:me"),
                                             Pending())  # its mailbox is full
        for lab, code in (("lab:busy", ErrorCode.OVERLOADED),
                          ("lab:nope", ErrorCode.UNKNOWN_ACTOR)):
            answer = Charged(visit.ledger, visit.account,
                             visit.claims.admit(visit.account, "bob", VOTE, lab))
            forwarded = _Forwarded(answer, trio.current_time() + 10)
            forwarded.sent = True
            with pytest.raises(ProtocolError) as before:  # (as the directory's task answers)
                await visit.directory.deliver(lab, VOTE, forwarded)
            assert not before.value.delivered
            forwarded.fail(before.value)
            assert isinstance(answer.error, ProtocolError)
            assert (answer.error.code, answer.error.delivered) == (code, True)
            assert answer.error.detail == {"actor": lab, "outcome": "unknown"}
        with pytest.raises(ProtocolError) as spent:
            visit.claims.admit(visit.account, "bob", VOTE, "lab:busy")
        assert spent.value.detail["budget"] == "votes_per_hour"
