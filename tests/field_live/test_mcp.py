"""MCP at /mcp: the stateless transport facts (keepalives included), the tool list, and a
small field played out."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import trio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from sse_starlette.sse import EventSourceResponse

from actors.field.actor import FieldActor
from actors.runtime import Call, refused
from actors.world import Refusal
from examples.field_mcp import play
from protocol.client import Client
from protocol.ops.field import OPS
from server import mcp as mcp_server
from server.auth import TokenStore
from tests.field_live._live import ready
from tests.server.ws_harness import running_server

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def test_stateless_transport(tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as srv, httpx.AsyncClient() as http:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}
        r = await http.post(f"{srv.url}/mcp", json=init, headers=HEADERS)
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        assert "mcp-session-id" not in r.headers
        frames = [line for line in r.text.splitlines() if line.startswith("data: ")]
        assert len(frames) == 1
        assert json.loads(frames[0][6:])["result"]["serverInfo"]["name"] == "petridish-field"
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        r = await http.post(f"{srv.url}/mcp", json=note, headers=HEADERS)
        assert r.status_code == 202


async def test_mcp_client_lists_tools_and_plays_a_field(tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as srv:
        async with streamable_http_client(f"{srv.url}/mcp") as streams, \
                ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == {spec.name.replace(".", "_") for spec in OPS}
            schema = tools["field_commit"].input_schema
            assert set(schema["required"]) == {"game_id", "agent", "cells", "expected_revision"}
        figures = await play(f"{srv.url}/mcp", "small", start=20, seed=6)
        assert figures["agent"] == "a1"
        async with Client.connect(srv.ws_url) as c:
            obs = await c.request("field.observe", "field:small", {})
        assert obs["totals"]["solved"] == obs["tiles_total"]
        assert obs["agents"][0]["health"]["state"] == "healthy"


async def test_long_calls_send_keepalive_comments(tmp_path: Path, monkeypatch) -> None:
    # Keepalives every 0.2 s instead of KEEPALIVE, and a field.rules that takes 1 s: the
    # transport is under test here, so the handler is slowed on purpose.
    monkeypatch.setattr(mcp_server, "KEEPALIVE", 0.2)
    monkeypatch.setattr(EventSourceResponse, "DEFAULT_PING_INTERVAL", 0.2)
    async def slow_rules(self: FieldActor, call: Call) -> Any:
        await trio.sleep(1.0)
        answer = self.world.reads["field.rules"].answer(self.state, call.args, self.ctx(call))
        if isinstance(answer, Refusal):
            raise refused(answer)
        return answer

    monkeypatch.setitem(FieldActor.effects, "field.rules", slow_rules)
    async with running_server(tmp_path, open_mode=True) as srv, httpx.AsyncClient() as http:
        async with Client.connect(srv.ws_url) as c:
            await c.request("field.start", "field:slow", {"size": 10, "seed": 1})
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "field_rules", "arguments": {"game_id": "slow"}}}
        with trio.fail_after(60):
            while True:
                r = await http.post(f"{srv.url}/mcp", json=call, headers=HEADERS, timeout=30)
                lines = r.text.splitlines()
                data = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
                if not data[-1]["result"].get("isError"):
                    break  # the field was still generating: ask again
                await trio.sleep(0.2)
        assert r.status_code == 200 and "mcp-session-id" not in r.headers
        assert data[-1]["result"]["structuredContent"]["text"].startswith("Rules of a mosaic.")
        comments = [line for line in lines if line.startswith(":")]
        assert len(comments) >= 2, r.text  # ~1 s at one comment per 0.2 s


async def _tool(http: httpx.AsyncClient, url: str, name: str, arguments: dict[str, Any],
                token: str | None = None) -> dict[str, Any]:
    """One stateless `tools/call`; the JSON-RPC result (with `isError` on a refusal)."""
    headers = HEADERS | ({"authorization": f"Bearer {token}"} if token else {})
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}
    r = await http.post(f"{url}/mcp", json=call, headers=headers, timeout=30)
    frames = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
    return frames[-1]["result"]


def _refusal(result: dict[str, Any]) -> str:
    """The refusal's `code: message`, without the SDK's "Error executing tool NAME: " prefix."""
    assert result.get("isError"), result
    return re.sub(r"^Error executing tool \w+: ", "", result["content"][0]["text"])


async def test_bad_input_over_mcp_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    token = TokenStore(tmp_path).create("agent", "mcp-player")
    async with running_server(tmp_path) as srv, httpx.AsyncClient() as http:
        url = srv.url
        assert not (await _tool(http, url, "field_start",
                                {"game_id": "bad", "size": 20, "seed": 1}, token)).get("isError")
        async with Client.connect(srv.ws_url) as c:
            await ready(c, "bad")
            joined = await _tool(http, url, "field_join", {"game_id": "bad", "name": "p"}, token)
            assert not joined.get("isError"), joined
            agent = joined["structuredContent"]["agent"]
            before = await c.request("field.observe", "field:bad", {})
            commit = {"game_id": "bad", "agent": agent, "cells": [[0, 1]],
                      "expected_revision": before["revision"]}
            # a spectator (no token on a closed server), a bad token, a stale revision,
            # a wrong type, an unknown game: each refused with its code, nothing changes.
            assert _refusal(await _tool(http, url, "field_commit", commit)).startswith(
                "forbidden: field.commit needs the agent role")
            assert _refusal(await _tool(http, url, "field_commit", commit, "pdg_nope")).startswith(
                "unauthorized:")
            stale = commit | {"expected_revision": before["revision"] - 1}
            assert _refusal(await _tool(http, url, "field_commit", stale, token)).startswith(
                "stale_revision:")
            assert "cells" in _refusal(await _tool(http, url, "field_commit",
                                                   commit | {"cells": "0=1"}, token))
            assert _refusal(await _tool(http, url, "field_commit",
                                        commit | {"game_id": "never-started"}, token))
            r = await http.post(f"{url}/mcp", content=b"{not json", headers=HEADERS)
            assert r.status_code == 400 and "-32700" in r.text
            after = await c.request("field.observe", "field:bad", {})
        assert after == before
