"""The MCP endpoint holds its callers to the websocket's budgets: refused tokens per
address, CPU time per account (anonymous callers by address), worlds created, joins; and it
answers behind a proxy's host name (the SDK's own localhost-only Host check is off; the
app's origin check stands for it)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from actors.field.actor import FieldActor
from actors.runtime import Call
from protocol.client import Client
from server import metering
from server.budgets import Budgets
from tests.field_live._live import start
from tests.server import burn_world
from tests.server.mcp_harness import HEADERS, rpc, tool
from tests.server.ws_harness import (
    error,
    raw_client,
    result,
    running_server,
    until_others_rest,
)

INIT = {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}


async def test_refused_tokens_are_budgeted_per_address(tmp_path: Path) -> None:
    budgets = Budgets(hello_failures=2, hello_failure_rate=0.01)
    async with running_server(tmp_path, budgets=budgets) as srv, httpx.AsyncClient() as http:
        codes = [(await tool(http, srv.url, "list_games", {}, token="pdg_guess"))["error"]
                 ["code"] for _ in range(3)]
        assert codes == ["unauthorized", "unauthorized", "over_budget"]
        # the websocket shares the address's budget: a bad token is refused there too,
        # and a valid one passes on both
        async with raw_client(srv, hello=False) as c:
            await c.send({"op": "hello", "protocol": 1, "token": "pdg_guess"})
            assert (await c.recv())["error"]["detail"]["budget"] == "hello_failures"
        async with raw_client(srv, hello=False) as c:
            await c.send({"op": "hello", "protocol": 1, "token": srv.owner_token})
            assert (await c.recv())["ok"]
        assert (await tool(http, srv.url, "list_games", {}, token=srv.owner_token))["ok"]


async def test_every_mcp_request_is_held_to_its_callers_cpu_budget(tmp_path: Path) -> None:
    """The SDK's own work (reading, validating and answering a request: here `tools/list`,
    which asks no world) is charged to the caller's account, and an account spent while
    others use the server is refused at the door, 429, its request unread: one address
    flooding `/mcp` took all the server's time, charged to nobody."""
    budgets = Budgets(cpu_rate_agent=1e-6, cpu_burst=1e-6)  # an open server: agents
    async with running_server(tmp_path, budgets=budgets, open_mode=True,
                              **burn_world.settings()) as srv, httpx.AsyncClient() as http, \
            raw_client(srv, srv.owner_token) as owner:
        ledger = srv.state.ledger
        await until_others_rest(srv)
        status, listed = await rpc(http, srv.url, "tools/list", {})  # alone: served
        assert status == 200 and listed is not None and listed["result"]["tools"]
        account = ledger.accounts["address:127.0.0.1"]
        assert account.cpu.level < 0 < account.recent.read(trio.current_time())  # charged
        result(await owner.call("burn.spin", "burn:x", ms=20))  # someone else is busy
        start = {"name": "start_mosaic", "arguments": {"kind": "scatter", "size": 14}}
        refused = [await http.post(f"{srv.url}/mcp", headers=HEADERS, json={
            "jsonrpc": "2.0", "id": 1, "method": method, "params": params})
            for method, params in (("tools/list", {}), ("tools/call", start))]
        for r in refused:
            assert r.status_code == 429, r.text
            error = r.json()["error"]
            assert r.json()["id"] is None and error["code"] == -32600
            detail = error["data"]["detail"]
            assert detail["budget"] == "cpu" and detail["limit"] == 1e-6
            assert error["message"] == f"over_budget: {error['data']['message']}" == (
                "over_budget: this client used more than 1e-06 s of server time per second "
                "while others wait; slow down")
            assert r.headers["retry-after"] == str(math.ceil(detail["retry_after"]))
        # refused unread: no world made, no create counted; the hits counted and kept
        assert not [s for s in srv.state.directory.live() if s.kind == "field"]
        assert not account.creates.count(trio.current_time()) and not account.created
        assert ledger.hits[("cpu", "127.0.0.1")].count == 2
        assert srv.state.metrics.budget_hits.labels("cpu").value == 2
        # an anonymous websocket caller from the same address shares that account
        async with raw_client(srv) as c:
            assert (await c.call("lobby.list"))["error"]["detail"]["budget"] == "cpu"
        # another address has its own account, and the owner spends none: both served
        other = httpx.AsyncHTTPTransport(local_address="127.0.0.2")
        async with httpx.AsyncClient(transport=other) as elsewhere:
            assert (await tool(elsewhere, srv.url, "start_mosaic", start["arguments"]))["ok"]
        for _ in range(3):
            assert (await tool(http, srv.url, "list_games", {}, srv.owner_token))["ok"]
        assert "address:127.0.0.2" in ledger.accounts


async def test_worlds_created_over_mcp_count_against_the_budget(tmp_path: Path) -> None:
    async with running_server(tmp_path, budgets=Budgets(live_worlds=1)) as srv, \
            httpx.AsyncClient() as http:
        token = srv.state.tokens.create("agent", "ann")
        first = await tool(http, srv.url, "start_mosaic", {"kind": "scatter", "size": 14, "seed": 1}, token)
        assert first["ok"], first
        second = await tool(http, srv.url, "start_mosaic", {"kind": "scatter", "size": 14, "seed": 2}, token)
        assert second["error"]["code"] == "over_budget", second
        assert second["error"]["detail"] == {"budget": "live_worlds", "limit": 1}
        async with raw_client(srv, token) as c:  # the same account over the websocket
            refused = await c.call("counter.create", "counter:one")
            assert refused["error"]["detail"]["budget"] == "live_worlds"


async def test_anonymous_joins_over_mcp_are_budgeted_per_address(tmp_path: Path) -> None:
    """An anonymous MCP caller is a new identity on every call, but its joins count
    against its address: past `joins_per_hour` `join` is refused before the field sees it,
    over MCP and over the websocket alike; another address still joins."""
    elsewhere = httpx.AsyncHTTPTransport(local_address="127.0.0.2")
    async with running_server(tmp_path, open_mode=True, budgets=Budgets(joins_per_hour=2)
                              ) as srv, httpx.AsyncClient() as http, \
            httpx.AsyncClient(transport=elsewhere) as other, \
            Client.connect(srv.ws_url, srv.owner_token) as owner:
        await start(owner, "demo", size=24, seed=1)
        join = {"game_id": "demo", "name": "bot", "model": "m"}
        agents = [(await tool(http, srv.url, "join", join))["structured"]["agent"]
                  for _ in range(2)]
        assert agents[0].partition("~")[0] != agents[1].partition("~")[0]
        before = await owner.request("field.observe", "field:demo", {"rect": [0, 0, 1, 1]})
        refused = await tool(http, srv.url, "join", join)
        assert refused["text"] == "over_budget: more than 2 joins in an hour"
        retry = refused["error"]["detail"].pop("retry_after")
        assert refused["error"] == {"code": "over_budget", "message": "more than 2 joins in "
                                    "an hour", "detail": {"budget": "joins_per_hour",
                                                          "limit": 2}}
        assert 3590 < retry <= 3600
        async with raw_client(srv) as c:  # an anonymous websocket of the address: the same
            assert error(await c.call("field.join", "field:demo", name="ws"))["detail"][
                "budget"] == "joins_per_hour"
        after = await owner.request("field.observe", "field:demo", {"rect": [0, 0, 1, 1]})
        assert (after["revision"], after["agents"]) == (before["revision"], before["agents"])
        assert (await tool(other, srv.url, "join", join))["ok"]


async def test_the_sdk_client_reads_a_refusal_at_the_door(tmp_path: Path) -> None:
    """The 429's body is a JSON-RPC error the MCP SDK's client raises with its data."""
    budgets = Budgets(cpu_rate=1e-6, cpu_burst_anonymous=1e-6)
    async with running_server(tmp_path, budgets=budgets, **burn_world.settings()) as srv, \
            raw_client(srv, srv.owner_token) as owner, \
            streamable_http_client(f"{srv.url}/mcp") as (read, write, *_), \
            ClientSession(read, write) as session:
        await session.initialize()  # charged: the account is in debt
        result(await owner.call("burn.spin", "burn:x", ms=20))  # someone else is busy
        with pytest.raises(MCPError) as refused:
            await session.list_tools()
    assert refused.value.error.code == -32600
    assert refused.value.error.message.startswith("over_budget: this client used more")
    assert refused.value.error.data["detail"]["budget"] == "cpu"


async def test_the_sdk_client_reads_a_refusal_past_the_http_budget(tmp_path: Path) -> None:
    """An address past `http_rate` is refused on `/mcp` in the door's shape: the lab routes'
    `{"ok": false, ...}` was a bare -32603 to the SDK's client, with no `retry_after`."""
    budgets = Budgets(http_rate=0.01, http_burst=3)  # (none refilled while the test runs)
    async with running_server(tmp_path, budgets=budgets) as srv, \
            streamable_http_client(f"{srv.url}/mcp") as (read, write, *_), \
            ClientSession(read, write) as session:
        await session.initialize()  # two requests: `initialize`, `notifications/initialized`
        await session.list_tools()
        with pytest.raises(MCPError) as refused:
            await session.list_tools()
    assert refused.value.error.code == -32600
    assert refused.value.error.message == ("over_budget: more than 0.01 HTTP requests per "
                                           "second from this address; slow down")
    refusal = refused.value.error.data
    assert (refusal["code"], refusal["detail"]["budget"]) == ("over_budget", "http_rate")
    assert refusal["detail"]["retry_after"] > 0


async def test_a_world_an_mcp_call_starts_runs_outside_the_calls_tab(tmp_path: Path) -> None:
    """A world's time is charged by the asks it answers (replies.Charged); an actor that a
    tool call started must not inherit the call's tab (server/metering.py), or its steps
    would be charged to the call a second time while it ran."""

    def tabbed() -> list[str]:
        tasks, nurseries = [], list(trio.lowlevel.current_root_task().child_nurseries)
        while nurseries:
            for task in nurseries.pop().child_tasks:
                tasks.append(task)
                nurseries.extend(task.child_nurseries)
        return [t.name for t in tasks if metering.tab_of(t) is not None]

    async with running_server(tmp_path, open_mode=True) as srv, httpx.AsyncClient() as http:
        started = await tool(http, srv.url, "start_mosaic", {"kind": "scatter", "size": 14})
        assert started["ok"], started
        with trio.fail_after(5):  # the call's own tasks end soon after its answer
            while tabbed():
                await trio.sleep(0.05)


async def test_a_create_whose_caller_left_is_still_counted(tmp_path: Path,
                                                           monkeypatch) -> None:
    """A caller that hangs up while its create is made (here a field.start slowed on
    purpose) does not take the create out of the count: the world it made counts, and its
    place in flight is freed (it was held for good, and the world went uncounted)."""
    start, began = FieldActor.effects["field.start"], trio.Event()

    async def slow_start(self: FieldActor, call: Call) -> Any:
        began.set()
        await trio.sleep(0.5)
        return await start(self, call)

    monkeypatch.setitem(FieldActor.effects, "field.start", slow_start)
    async with running_server(tmp_path) as srv, httpx.AsyncClient() as http:
        token = srv.state.tokens.create("agent", "ann")
        async with trio.open_nursery() as nursery:  # the caller hangs up mid-create
            nursery.start_soon(tool, http, srv.url, "start_mosaic",
                               {"kind": "scatter", "size": 14}, token)
            await began.wait()
            nursery.cancel_scope.cancel()
        account = srv.state.ledger.accounts["ann"]
        with trio.fail_after(10):
            while account.creates.pending or not (made := {
                    s.actor_id for s in srv.state.directory.live() if s.kind == "field"}):
                await trio.sleep(0.05)
        assert (account.created, len(account.creates.times)) == (made, 1)


async def test_mcp_answers_behind_a_proxy_host_name(tmp_path: Path) -> None:
    allowed = frozenset({"https://play.example"})
    async with running_server(tmp_path, allowed_origins=allowed) as srv, \
            httpx.AsyncClient() as http:
        for headers in ({"host": "play.example"},
                        {"host": "play.example", "origin": "https://play.example"}):
            status, reply = await rpc(http, srv.url, "initialize", INIT, headers=headers)
            assert status == 200 and reply["result"]["serverInfo"]["name"] == "petridish"
        status, _ = await rpc(http, srv.url, "initialize", INIT,
                              headers={"host": "play.example", "origin": "https://evil.example"})
        assert status == 403
