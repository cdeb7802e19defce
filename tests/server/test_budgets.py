"""Every budget a client can spend, over real sockets: each refused with `over_budget`
naming it (or HTTP 503 before the websocket exists), counted in /metrics, logged, and
held per client (a second connection buys no more; the owner spends none)."""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
import trio
import trio.testing

from protocol.client import Client, RequestError
from server.budgets import Budgets
from tests.field_live._live import start
from tests.server import burn_world
from tests.server.raw_ws import HandshakeRefused, RawSocket
from tests.server.tcp_proxy import Proxy
from tests.server.ws_harness import (
    error,
    raw_client,
    result,
    running_server,
    until_others_rest,
)

N_CHARGED = 200  # requests of the I/O-charge test


def _hits(srv, budget: str) -> float:
    return srv.state.metrics.budget_hits.labels(budget).value


async def test_tcp_connections_per_address_are_capped_before_any_request(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # (Hypercorn frees a connection that closes before its request at the handshake
    # timeout, so the test keeps it short.)
    budgets = Budgets(connections_per_address=3, handshake_timeout=0.5)
    async with running_server(tmp_path, budgets=budgets) as srv:
        held = [await trio.open_tcp_stream("127.0.0.1", srv.port) for _ in range(3)]
        with pytest.raises(HandshakeRefused) as refused:
            await RawSocket.open(srv.port)
        assert refused.value.status == 503
        assert refused.value.body == b"more than 3 connections from one address"
        # (the security headers every response carries, as the ASGI middleware adds them)
        assert refused.value.headers["x-content-type-options"] == "nosniff"
        assert refused.value.headers["content-security-policy"] == "default-src 'none'; " \
            "frame-ancestors 'none'"
        assert _hits(srv, "connections_per_address") == 1
        assert "hit the connections_per_address budget" in caplog.text
        await held.pop().aclose()
        with trio.fail_after(5):
            while True:  # the freed place is given to the next connection
                try:
                    sock = await RawSocket.open(srv.port)
                    break
                except HandshakeRefused:
                    await trio.sleep(0.05)
        assert (await sock.hello())["ok"]
        for stream in held:
            await stream.aclose()
        await sock.aclose()


async def test_a_half_open_handshake_is_closed_within_the_handshake_timeout(
        tmp_path: Path) -> None:
    async with running_server(tmp_path, budgets=Budgets(handshake_timeout=0.3)) as srv:
        stream = await trio.open_tcp_stream("127.0.0.1", srv.port)
        await stream.send_all(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websock")
        with trio.fail_after(5):  # the server hangs up: EOF, and its place is free
            assert await stream.receive_some(100) == b""
            while srv.state.guard.open:
                await trio.sleep(0.01)


async def _answer(stream: trio.SocketStream) -> bytes:
    """One HTTP answer read whole (its head, then `content-length` bytes)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += await stream.receive_some(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
    while len(body) < length:
        body += await stream.receive_some(65536)
    return head + b"\r\n\r\n" + body


async def test_an_http_connection_its_client_closed_is_freed_at_once(tmp_path: Path) -> None:
    # (A keep-alive wait of an hour: Hypercorn kept a connection its client had closed
    # until that wait ended, counted against the address all along.)
    budgets = Budgets(handshake_timeout=3600, http_rate=1e6, http_burst=1000)
    async with running_server(tmp_path, budgets=budgets) as srv:
        limit = budgets.connections_per_address
        for _ in range(limit + 2):  # one-shot requests: each connection closed after it
            with trio.fail_after(30):
                async with await trio.open_tcp_stream("127.0.0.1", srv.port) as stream:
                    await stream.send_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    assert (await _answer(stream)).startswith(b"HTTP/1.1 200 ")
                    await trio.testing.wait_all_tasks_blocked()  # the server waits, idle
        stream = await trio.open_tcp_stream("127.0.0.1", srv.port)
        for _ in range(2):  # a client that keeps its connection is served on it
            await stream.send_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (await _answer(stream)).startswith(b"HTTP/1.1 200 ")
        await stream.aclose()
        with trio.fail_after(30):  # and freed once it closes
            while srv.state.guard.open:
                await trio.sleep(0.01)
        # A client that half-closes after its request still gets the answer, then the end.
        stream = await trio.open_tcp_stream("127.0.0.1", srv.port)
        await stream.send_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        await stream.send_eof()
        with trio.fail_after(30):
            assert (await _answer(stream)).startswith(b"HTTP/1.1 200 ")
            assert await stream.receive_some(100) == b""
            while srv.state.guard.open:
                await trio.sleep(0.01)
        await stream.aclose()


async def test_connections_without_hello_are_capped_per_address_and_in_all(
        tmp_path: Path) -> None:
    budgets = Budgets(ungreeted_per_address=2, max_ungreeted=100)
    async with running_server(tmp_path, budgets=budgets, hello_timeout=30) as srv:
        quiet = [await RawSocket.open(srv.port) for _ in range(2)]
        third = await RawSocket.open(srv.port)
        refusal = await third.recv_json()
        assert refusal == {"id": None, "ok": False, "error": {
            "code": "over_budget", "message": "more than 2 connections from one address "
            "have not said hello yet", "detail": {"budget": "ungreeted_per_address",
                                                  "limit": 2}}}
        assert await third.close_code() == 1013
        assert (await quiet[0].hello())["ok"]  # greeted: it no longer counts
        fourth = await RawSocket.open(srv.port)
        assert (await fourth.hello())["ok"]
        assert srv.state.ledger.ungreeted == 1
        for s in [*quiet, third, fourth]:
            await s.aclose()
    budgets = Budgets(ungreeted_per_address=10, max_ungreeted=1)
    async with running_server(tmp_path, budgets=budgets, hello_timeout=30) as srv:
        first = await RawSocket.open(srv.port)
        second = await RawSocket.open(srv.port)
        assert (await second.recv_json())["error"]["detail"]["budget"] == "max_ungreeted"
        for s in (first, second):
            await s.aclose()


async def test_refused_hellos_are_budgeted_per_address(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    budgets = Budgets(hello_failures=2, hello_failure_rate=0.5)
    async with running_server(tmp_path, budgets=budgets) as srv:
        good = srv.state.tokens.create("agent", "ann")
        for _ in range(2):
            async with raw_client(srv, hello=False) as c:
                await c.send({"op": "hello", "protocol": 1, "token": "pdg_guess"})
                assert error(await c.recv())["code"] == "unauthorized"
        assert "hello_refused: refused a hello from 127.0.0.1: the token is unknown" \
            in caplog.text
        async with raw_client(srv, hello=False) as c:  # spent: a bad token is not checked
            await c.send({"op": "hello", "protocol": 1, "token": "pdg_guess"})
            refused = error(await c.recv())
            assert refused["code"] == "over_budget"
            assert refused["detail"]["budget"] == "hello_failures"
            assert 0 < refused["detail"]["retry_after"] <= 2.1
        # A valid token still says hello, the owner's too: bad tokens from an address (one
        # every few seconds, from anyone behind the same proxy) used to lock them all out.
        for token in (good, srv.owner_token, None):  # None: nothing to guess, welcome
            async with raw_client(srv, token) as c:
                assert result(await c.call("lobby.list"))["total"] == 0
        await trio.sleep(2.1)  # refilled: a bad token is looked up and refused again
        async with raw_client(srv, hello=False) as c:
            await c.send({"op": "hello", "protocol": 1, "token": "pdg_guess"})
            assert error(await c.recv())["code"] == "unauthorized"
        metrics = srv.state.metrics.render()
        assert 'petridish_warnings_total{event="hello_refused"} 3' in metrics
        assert 'petridish_budget_hits_total{budget="hello_failures"} 1' in metrics


async def test_subscriptions_per_connection_are_capped(tmp_path: Path) -> None:
    async with running_server(tmp_path, budgets=Budgets(subscriptions=2)) as srv:
        token = srv.state.tokens.create("agent", "ann")
        async with raw_client(srv, token) as c:
            for name in "abc":
                result(await c.call("counter.create", f"counter:{name}"))
            for name in "ab":
                await c.send({"id": 10, "op": "subscribe", "to": f"counter:{name}"})
                assert result(await c.recv())["topic"] == f"counter:{name}"
                await c.recv()  # its snapshot
            await c.send({"id": 11, "op": "subscribe", "to": "counter:c"})
            assert await c.recv() == {"id": 11, "ok": False, "error": {
                "code": "over_budget", "message": "a connection follows at most 2 topics; "
                "unsubscribe one first", "detail": {"budget": "subscriptions", "limit": 2}}}
            await c.send({"id": 12, "op": "subscribe", "to": "counter:a", "since": 1})
            assert result(await c.recv())["topic"] == "counter:a"  # again: no new place
            await c.send({"id": 13, "op": "unsubscribe", "to": "counter:b"})
            assert result(await c.recv()) == {"topic": "counter:b"}
            await c.send({"id": 14, "op": "subscribe", "to": "counter:c"})
            assert result(await c.recv())["topic"] == "counter:c"


async def _follow(c, rid: int, world: str) -> dict:
    """Subscribe to `world`: the reply (and, when followed, its snapshot read)."""
    await c.send({"id": rid, "op": "subscribe", "to": world})
    reply = await c.recv()
    if reply.get("ok"):
        await c.recv()
    return reply


async def test_worlds_followed_are_capped_per_client_over_all_its_connections(
        tmp_path: Path) -> None:
    budgets = Budgets(worlds_followed=2)
    refused = {"code": "over_budget", "message": "this client follows 2 worlds already "
               "(over all its connections); unsubscribe one first",
               "detail": {"budget": "worlds_followed", "limit": 2}}
    async with running_server(tmp_path, budgets=budgets) as srv, \
            raw_client(srv, srv.owner_token) as owner:
        for name in "abc":
            result(await owner.call("counter.create", f"counter:{name}"))
        async with AsyncExitStack() as stack:
            one = await stack.enter_async_context(raw_client(srv))
            account = srv.state.ledger.accounts["address:127.0.0.1"]
            srv.state.ledger.sweep(trio.current_time() + 3600)  # an open session keeps it
            two = await stack.enter_async_context(raw_client(srv))
            assert srv.state.ledger.accounts["address:127.0.0.1"] is account
            assert account.sessions == 2  # both connections'
            assert result(await _follow(one, 1, "counter:a"))["topic"] == "counter:a"
            assert (await _follow(one, 5, "counter:nobody"))["error"]["code"] == \
                "unknown_actor"  # refused: it holds no place
            assert account.followed == {"counter:a": 1}
            assert result(await _follow(two, 2, "counter:a"))["topic"] == "counter:a"
            assert result(await _follow(two, 3, "counter:b"))["topic"] == "counter:b"
            assert (await _follow(one, 4, "counter:c"))["error"] == refused  # a third
            assert result(await _follow(one, 6, "counter:b"))["topic"] == "counter:b"
            assert result(await _follow(one, 7, "counter:b"))["topic"] == "counter:b"  # again
            assert account.followed == {"counter:a": 2, "counter:b": 2}
            await two.send({"id": 8, "op": "unsubscribe", "to": "counter:b"})
            assert result(await two.recv()) == {"topic": "counter:b"}
            assert (await _follow(two, 9, "counter:c"))["error"] == refused  # one still has b
            await one.send({"id": 10, "op": "unsubscribe", "to": "counter:b"})
            assert result(await one.recv()) == {"topic": "counter:b"}
            assert result(await _follow(two, 11, "counter:c"))["topic"] == "counter:c"
            async with raw_client(srv, srv.owner_token) as owner_too:  # the owner: no cap
                for i, name in enumerate("abc"):
                    assert result(await _follow(owner_too, 20 + i, f"counter:{name}"))
        with trio.fail_after(5):  # the connections' ends gave every place back
            while account.followed or account.sessions:
                await trio.sleep(0.01)
        assert _hits(srv, "worlds_followed") == 2


async def test_cpu_time_is_budgeted_per_client_and_the_owner_spends_none(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    budgets = Budgets(cpu_rate=0.02, cpu_rate_agent=0.05, cpu_burst=0.05,
                      cpu_burst_anonymous=0.05)
    async with running_server(tmp_path, budgets=budgets, **burn_world.settings()) as srv:
        token = srv.state.tokens.create("agent", "ann")
        async with raw_client(srv) as c, raw_client(srv) as other, \
                raw_client(srv, token) as agent, raw_client(srv, srv.owner_token) as owner:
            assert result(await c.call("burn.spin", "burn:x", ms=80)) == {"ms": 80}
            # Alone on the server, a client past its budget is served: nobody waits.
            assert result(await c.call("burn.spin", "burn:x", ms=1)) == {"ms": 1}
            # Once others use the server, it is refused until its budget refills.
            assert result(await agent.call("burn.spin", "burn:x", ms=10)) == {"ms": 10}
            refused = error(await c.call("burn.spin", "burn:x", ms=1))
            assert refused["code"] == "over_budget"
            assert refused["detail"]["budget"] == "cpu" and refused["detail"]["limit"] == 0.02
            wait = refused["detail"]["retry_after"]
            assert 1.5 < wait <= 5.0  # its debt run up alone (one burst at most) at 20 ms/s
            # Another connection from the same address shares the account ...
            assert error(await other.call("burn.spin", "burn:x", ms=1))["code"] == "over_budget"
            # ... but an agent token has its own, and the owner none.
            assert result(await agent.call("burn.spin", "burn:x", ms=1)) == {"ms": 1}
            for _ in range(5):
                assert result(await owner.call("burn.spin", "burn:x", ms=40)) == {"ms": 40}
            await trio.sleep(wait)
            assert result(await c.call("burn.spin", "burn:x", ms=1)) == {"ms": 1}
        hits = srv.state.ledger.hits
        assert hits[("cpu", "127.0.0.1")].count == 2
        assert "127.0.0.1 hit the cpu budget: this client used more than 0.02 s" in caplog.text
        assert _hits(srv, "cpu") == 2


async def test_a_client_past_its_cpu_budget_is_not_read_until_it_refills(
        tmp_path: Path) -> None:
    """After its over_budget refusal a connection rests for its retry_after: what it sends
    meanwhile waits in the socket (each frame read would cost a parse only to be refused),
    then is served in order."""
    budgets = Budgets(cpu_rate=0.02, cpu_rate_agent=0.05, cpu_burst=0.05,
                      cpu_burst_anonymous=0.05)
    async with running_server(tmp_path, budgets=budgets, **burn_world.settings()) as srv:
        token = srv.state.tokens.create("agent", "ann")
        async with raw_client(srv) as c, raw_client(srv, token) as agent:
            assert result(await c.call("burn.spin", "burn:x", ms=80)) == {"ms": 80}
            assert result(await agent.call("burn.spin", "burn:x", ms=10)) == {"ms": 10}
            refused = error(await c.call("burn.spin", "burn:x", ms=1))
            assert refused["code"] == "over_budget"
            wait = refused["detail"]["retry_after"]
            assert wait > 1.5
            rested = trio.current_time() + wait
            for rid in (101, 102, 103):
                await c.send({"id": rid, "op": "burn.spin", "to": "burn:x", "args": {"ms": 0}})
            with trio.move_on_after(wait / 2):
                early = await c.recv()
                pytest.fail(f"read while resting: {early}")
            replies = [await c.recv(timeout=wait + 10) for _ in range(3)]
            assert trio.current_time() >= rested - 0.05
            assert [r["id"] for r in replies] == [101, 102, 103]


async def test_a_client_that_waits_its_retry_after_is_served_then(tmp_path: Path) -> None:
    """A connection rests on past `retry_after` while its client may not compute, the
    refusal's own cost charged: a client that waits `retry_after` and sends again is
    served, not refused again for what its refusal cost (each refusal leaving a new debt
    as long)."""
    budgets = Budgets(cpu_rate=0.02, cpu_rate_agent=0.05, cpu_burst=0.05,
                      cpu_burst_anonymous=0.05)
    async with running_server(tmp_path, budgets=budgets, **burn_world.settings()) as srv, \
            raw_client(srv) as c, burn_world.others_busy(srv):
        assert result(await c.call("burn.spin", "burn:x", ms=80)) == {"ms": 80}
        refused = error(await c.call("burn.spin", "burn:x", ms=1))
        assert refused["detail"]["budget"] == "cpu"
        await trio.sleep(refused["detail"]["retry_after"])
        assert result(await c.call("burn.spin", "burn:x", ms=0)) == {"ms": 0}
    assert _hits(srv, "cpu") == 1


async def test_a_rest_ends_once_its_client_may_compute_again(tmp_path: Path) -> None:
    """A connection rests while its client may not compute: once nobody else uses the
    server it is read again, though another connection of the same client spends on."""
    budgets = Budgets(cpu_rate=0.01, cpu_rate_agent=0.05, cpu_burst=0.05,
                      cpu_burst_anonymous=0.05)  # a debt of 0.03-0.05 s: 3-5 s to pay
    async with running_server(tmp_path, budgets=budgets, **burn_world.settings()) as srv:
        token = srv.state.tokens.create("agent", "ann")
        async with raw_client(srv) as c, raw_client(srv) as sibling, \
                raw_client(srv, token) as agent, trio.open_nursery() as nursery:
            assert result(await c.call("burn.spin", "burn:x", ms=80)) == {"ms": 80}
            assert result(await agent.call("burn.spin", "burn:x", ms=10)) == {"ms": 10}
            wait = error(await c.call("burn.spin", "burn:x", ms=1))["detail"]["retry_after"]
            await c.send({"id": 50, "op": "burn.spin", "to": "burn:x", "args": {"ms": 0}})
            sent = trio.current_time()
            await until_others_rest(srv)
            assert trio.current_time() - sent < wait - 1.0  # (the rest goes on meanwhile)

            async def spend() -> None:  # served: nobody else uses the server now
                while True:
                    assert result(await sibling.call("burn.spin", "burn:y", ms=5))
                    await trio.sleep(0.05)

            nursery.start_soon(spend)
            reply = await c.recv(timeout=wait + 10)
            answered = trio.current_time() - sent
            nursery.cancel_scope.cancel()
        assert (reply["id"], reply["ok"]) == (50, True)
        # (Not once the client's debt was paid: the sibling kept it spent.)
        assert answered < wait + 1.5, (answered, wait)


async def test_the_python_client_waits_out_a_spent_cpu_budget(tmp_path: Path) -> None:
    """protocol/client.py sends a request or subscription refused `over_budget` `cpu` again
    after its `retry_after`, unless that is past the call's timeout: then it raises it."""
    budgets = Budgets(cpu_rate=0.05, cpu_burst_anonymous=0.05)  # 80 ms: 1 s to refill
    async with running_server(tmp_path, budgets=budgets, **burn_world.settings()) as srv, \
            burn_world.others_busy(srv), Client.connect(srv.ws_url) as c:
        await c.request("burn.spin", "burn:x", {"ms": 80})  # its server time, spent
        with pytest.raises(RequestError) as hurried:
            await c.request("burn.spin", "burn:x", {"ms": 1}, timeout=0.3)
        assert (hurried.value.code, hurried.value.detail["budget"]) == ("over_budget", "cpu")
        await trio.sleep(hurried.value.detail["retry_after"])
        await c.request("burn.spin", "burn:x", {"ms": 80})  # spent again
        started = trio.current_time()
        assert await c.request("burn.spin", "burn:x", {"ms": 1}) == {"ms": 1}
        assert trio.current_time() - started > 0.5
        await c.request("burn.spin", "burn:x", {"ms": 80})
        async with c.subscribe("lobby:main") as sub:
            assert sub.result is not None and sub.result["topic"] == "lobby:main"
    assert _hits(srv, "cpu") >= 3  # the hurried one, the patient request's, the subscribe's


async def test_a_cut_while_the_python_client_waits_to_resubscribe_is_a_drop(
        tmp_path: Path) -> None:
    """The reconnect's resubscribe, refused for spent server time, waits to be sent again;
    a cut meanwhile ends the wait at once (the socket it waited on is gone), and the
    client reconnects, where the wait held the reconnect until its timeout."""
    budgets = Budgets(cpu_rate=0.05, cpu_burst_anonymous=0.05)  # 200 ms: 1 s to refill
    async with running_server(tmp_path, budgets=budgets, **burn_world.settings()) as srv, \
            burn_world.others_busy(srv), trio.open_nursery() as nursery:
        proxy = Proxy(srv.port)
        await nursery.start(proxy.run)
        async with Client.connect(f"ws://127.0.0.1:{proxy.port}/ws") as c, \
                c.subscribe("lobby:main"):
            await c.request("burn.spin", "burn:x", {"ms": 200})  # its server time, spent
            refused = _hits(srv, "cpu")
            proxy.cut()  # the reconnect's resubscribe is refused, and waits
            with trio.fail_after(10):
                while _hits(srv, "cpu") == refused:
                    await trio.sleep(0.005)
            cut = trio.current_time()
            proxy.cut()
            with trio.fail_after(10):
                while c.connections < 3:
                    await trio.sleep(0.005)
            assert trio.current_time() - cut < 0.8
        nursery.cancel_scope.cancel()


async def test_a_request_is_charged_its_socket_io_and_parsing_too(tmp_path: Path) -> None:
    budgets = Budgets(cpu_rate=1e-9, cpu_burst_anonymous=10.0)  # no refill: level = spend
    async with running_server(tmp_path, budgets=budgets, **burn_world.settings()) as srv, \
            raw_client(srv) as c:
        for _ in range(N_CHARGED):
            assert result(await c.call("burn.spin", "burn:x", ms=0)) == {"ms": 0}
        account = srv.state.ledger.accounts["address:127.0.0.1"]
        spent = account.cpu.burst - account.cpu.level
        handled = srv.state.metrics.handler_seconds.labels("burn").sum
    # The world's time is a small part of a request's cost: reading the socket, framing,
    # parsing and checking, encoding and writing the reply are charged as well (on this
    # machine ~60-100 us a request; 20 us is what any machine spends on its syscalls).
    assert spent - handled > N_CHARGED * 20e-6, (spent, handled)


async def test_a_refused_frame_is_charged_too(tmp_path: Path) -> None:
    """Frames the server only refuses (not JSON, binary) cost it their reading
    and checking all the same: a client sending nothing else is charged for them."""
    budgets = Budgets(cpu_rate=1e-9, cpu_burst_anonymous=10.0)  # no refill: level = spend
    bad = "[" + "0," * 20_000  # parsed to its end before it is found wanting
    async with running_server(tmp_path, budgets=budgets) as srv, raw_client(srv) as c:
        for k in range(N_CHARGED):
            await c.ws.send(bad if k % 2 else bad.encode())
            assert error(await c.recv())["code"] == "bad_request"
        account = srv.state.ledger.accounts["address:127.0.0.1"]
        spent = account.cpu.burst - account.cpu.level
    assert spent > N_CHARGED * 20e-6, spent


async def test_a_client_spending_its_time_on_refused_frames_rests_too(
        tmp_path: Path) -> None:
    """A frame refused for itself (numbers past a double: read twice, to name the first)
    is charged what it cost; once that leaves its client's time spent while others wait,
    its connection rests as after an over_budget refusal, so the request sent behind such
    frames is read once the client may compute, and served. Unrested, the frames were read
    one after another, the debt ran on (to 8 s in 3 s of frames), and the request was
    refused over_budget."""
    budgets = Budgets(cpu_rate=0.05, cpu_burst_anonymous=0.001)
    bad = ('{"id":1,"op":"burn.spin","to":"burn:x","args":{"n":['
           + ",".join(["1e400"] * 2000) + "]}}")
    async with running_server(tmp_path, budgets=budgets, **burn_world.settings()) as srv, \
            raw_client(srv) as c, burn_world.others_busy(srv):
        for _ in range(10):
            await c.send(bad)
        await c.send({"id": 2, "op": "burn.spin", "to": "burn:x", "args": {"ms": 0}})
        for _ in range(10):
            refused = error(await c.recv(timeout=60))
            assert (refused["code"], refused["detail"]["path"]) == ("bad_request", "args.n[0]")
        assert result(await c.recv(timeout=60)) == {"ms": 0}
    assert _hits(srv, "cpu") > 0  # (the rests, counted as the budget's hits)


async def test_subscriptions_are_charged_too(tmp_path: Path) -> None:
    budgets = Budgets(cpu_rate=1e-6, cpu_burst_anonymous=1e-6, cpu_rate_agent=1.0)
    async with running_server(tmp_path, budgets=budgets, **burn_world.settings()) as srv, \
            raw_client(srv) as c, raw_client(srv, srv.owner_token) as owner:
        await c.send({"id": 1, "op": "subscribe", "to": "lobby:main"})
        assert result(await c.recv())["topic"] == "lobby:main"
        assert (await c.recv())["kind"] == "snapshot"
        result(await owner.call("burn.spin", "burn:x", ms=20))  # someone else is busy
        await c.send({"id": 2, "op": "subscribe", "to": "lobby:main"})
        assert error(await c.recv())["detail"]["budget"] == "cpu"


async def test_one_agent_cannot_create_more_worlds_than_its_budget(tmp_path: Path) -> None:
    """The defaults: 10 live worlds at once, 20 an hour; the owner has no such budget."""
    async with running_server(tmp_path) as srv:
        ann = srv.state.tokens.create("agent", "ann")
        bob = srv.state.tokens.create("agent", "bob")
        async with raw_client(srv, ann) as c, raw_client(srv, ann) as again, \
                raw_client(srv, bob) as b, raw_client(srv, srv.owner_token) as owner:
            for i in range(5):
                result(await c.call("counter.create", f"counter:a{i}"))
                result(await again.call("lobby.create", kind="counter", name=f"b{i}"))
            for refused in (error(await c.call("counter.create", "counter:a9")),
                            error(await again.call("lobby.create", kind="counter",
                                                   name="b9"))):
                assert refused == {"code": "over_budget", "message": "more than 10 live worlds "
                                   "created by this client; wait until some unload (a world "
                                   "unloads after 600 s with no request and no subscriber)",
                                   "detail": {"budget": "live_worlds", "limit": 10}}
            assert error(await c.call("counter.get", "counter:a9"))["code"] == "unknown_actor"
            result(await b.call("counter.create", "counter:bob"))  # bob has his own budget
            for i in range(25):
                result(await owner.call("counter.create", f"counter:o{i}"))
            # A refused create spends nothing: ann's creates that failed did not count.
            assert error(await c.call("counter.create", "counter:a0"))["code"] == "over_budget"
        live = {s.actor_id for s in srv.state.directory.live() if s.kind == "counter"}
        assert len(live) == 10 + 1 + 25


async def test_creates_per_hour_count_worlds_that_unloaded(tmp_path: Path) -> None:
    budgets = Budgets(creates_per_hour=3, live_worlds=10)
    async with running_server(tmp_path, budgets=budgets) as srv:
        ann = srv.state.tokens.create("agent", "ann")
        async with raw_client(srv, ann) as c:
            for i in range(3):
                result(await c.call("counter.create", f"counter:a{i}"))
            for i in range(3):
                srv.state.directory.alive(f"counter:a{i}").stop()  # unloaded
            refused = error(await c.call("counter.create", "counter:a3"))
            assert refused["detail"]["budget"] == "creates_per_hour"
            assert 3590 < refused["detail"]["retry_after"] <= 3600


async def test_joins_are_budgeted_per_account_and_a_refused_one_spends_nothing(
        tmp_path: Path) -> None:
    """Each join seats an agent on one of a field's hidden tiles, so one account may not
    take them all: past `joins_per_hour` it is refused before the field sees it (the
    field is unchanged). A join the field refuses (`no_room`) is not counted; another
    account joins; the owner joins without a budget."""
    async with running_server(tmp_path, budgets=Budgets(joins_per_hour=3)) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner:
        ann = srv.state.tokens.create("agent", "ann")
        bob = srv.state.tokens.create("agent", "bob")
        await start(owner, "full", size=24, seed=1)
        await start(owner, "open", size=24, seed=2)
        seats = 0
        while True:  # the owner takes every seat of `full`, past any budget
            try:
                await owner.request("field.join", "field:full", {"name": f"o{seats}"})
            except RequestError as refused:
                assert refused.code == "no_room"
                break
            seats += 1
        assert seats > 3
        async with raw_client(srv, ann) as c, raw_client(srv, ann) as again, \
                raw_client(srv, bob) as b:
            for _ in range(4):
                assert error(await c.call("field.join", "field:full", name="a"))["code"] \
                    == "no_room"
            for i in range(3):
                result(await (c, again)[i % 2].call("field.join", "field:open", name="a"))
            before = await owner.request("field.observe", "field:open", {"rect": [0, 0, 1, 1]})
            for conn in (c, again):  # a second connection of the account buys no more
                refused = error(await conn.call("field.join", "field:open", name="a"))
                retry = refused["detail"].pop("retry_after")
                assert refused == {"code": "over_budget",
                                   "message": "more than 3 joins in an hour",
                                   "detail": {"budget": "joins_per_hour", "limit": 3}}
                assert 3590 < retry <= 3600
            after = await owner.request("field.observe", "field:open", {"rect": [0, 0, 1, 1]})
            assert (after["revision"], after["agents"]) == (before["revision"],
                                                             before["agents"])
            assert len(after["agents"]) == 3
            result(await b.call("field.join", "field:open", name="b"))
            result(await c.call("field.observe", "field:open", rect=[0, 0, 1, 1]))
    assert _hits(srv, "joins_per_hour") == 2
