"""The MCP host (server/mcp.py) against hostile callers: what it refuses, and that a refusal
is a plain answer rather than a logged failure."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import trio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.server.mcp_harness import HEADERS, rpc, tool
from tests.server.ws_harness import running_server
from tests.utf16 import edges


async def test_a_refused_prompt_is_an_invalid_params_error_and_logs_no_failure(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with running_server(tmp_path) as srv, httpx.AsyncClient() as http:
        caplog.clear()
        _, unknown = await rpc(http, srv.url, "prompts/get", {"name": "nope"})
        _, forged = await rpc(http, srv.url, "prompts/get", {"name": "play_mosaic"},
                              token="pdg_forged")
    assert unknown is not None and forged is not None
    assert unknown["error"]["code"] == forged["error"]["code"] == -32602
    assert unknown["error"]["message"] == "bad_request: there is no prompt 'nope'"
    assert forged["error"]["message"] == "unauthorized: the token is unknown or was revoked"
    assert forged["error"]["data"]["code"] == "unauthorized"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_a_get_is_refused_at_once_rather_than_held_open(tmp_path: Path) -> None:
    """Stateless, the server never sends on a standalone stream; a GET held one open (and
    with it a connection, uncounted per forwarded address behind a proxy) for good."""
    async with running_server(tmp_path) as srv, httpx.AsyncClient() as http:
        with trio.fail_after(5):
            r = await http.get(f"{srv.url}/mcp", headers={"accept": "text/event-stream"})
    assert (r.status_code, r.headers["allow"]) == (405, "POST")


async def test_no_answer_is_stored_by_a_cache(tmp_path: Path) -> None:
    """`no-store`, as the server's other live answers (the SDK's event stream said
    `no-cache`, its refusals nothing); `no-transform` keeps a proxy from compressing it."""
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with running_server(tmp_path) as srv, httpx.AsyncClient() as http:
        listed = await http.post(f"{srv.url}/mcp", json=call, headers=HEADERS)
        refused = await http.post(f"{srv.url}/mcp", json=call, headers={
            "accept": "application/json", "content-type": "application/json"})
        lab = await http.post(f"{srv.url}/api/ok", json={})
    assert (listed.status_code, listed.headers["content-type"]) == (200, "text/event-stream")
    assert refused.status_code == 406
    assert lab.headers["cache-control"] == "no-store"
    for answer in (listed, refused):
        assert answer.headers.get_list("cache-control") == ["no-store, no-transform"]


async def test_a_body_past_the_frame_limit_is_refused_before_it_is_parsed(
        tmp_path: Path) -> None:
    """A websocket frame's limit bounds an MCP request too: the SDK's own was 4 MiB, and a
    spectator's 4 MiB of tiny lists took the server ~150 MB and ~0.15 s to parse, per call."""
    cells = [[0]] * 20_000  # ~100 KB of JSON
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "commit", "arguments": {"game_id": "x", "cells": cells, "expected_revision": 0}}}
    body = json.dumps(call).encode()

    async def chunked() -> AsyncIterator[bytes]:  # no length declared: counted as it comes
        for at in range(0, len(body), 4096):
            yield body[at:at + 4096]

    async with running_server(tmp_path) as srv, httpx.AsyncClient() as http:
        for content in (body, chunked()):
            r = await http.post(f"{srv.url}/mcp", content=content, headers=HEADERS)
            # (a JSON-RPC error, which the SDK's client reports with its reason)
            assert (r.status_code, r.headers["content-type"]) == (413, "application/json")
            assert r.json() == {"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": "too_large: the body is longer than 65536 bytes",
                "data": {"code": "too_large", "message": "the body is longer than 65536 "
                         "bytes", "detail": {"max_frame": 65536}}}}
        call["params"]["arguments"]["cells"] = cells[:100]  # within it: answered
        status, reply = await rpc(http, srv.url, "tools/call", call["params"])
        assert status == 200 and reply is not None
        assert reply["result"]["content"][0]["text"].startswith("forbidden:")


async def test_the_sdk_client_reads_a_body_refused_as_too_large(tmp_path: Path) -> None:
    """The 413 was the SDK's plain text: its client raised a bare -32603."""
    async with running_server(tmp_path) as srv, \
            streamable_http_client(f"{srv.url}/mcp") as (read, write, *_), \
            ClientSession(read, write) as session:
        await session.initialize()
        with pytest.raises(MCPError) as refused:
            await session.call_tool("observe", {"game_id": "x" * 70_000})
    assert refused.value.error.code == -32600
    assert refused.value.error.message == "too_large: the body is longer than 65536 bytes"
    assert refused.value.error.data["code"] == "too_large"


async def test_a_body_refused_before_it_arrived_ends_its_connection(tmp_path: Path) -> None:
    """Hypercorn closes a connection answered before its request's body arrived whole; said
    nowhere, a client sent its next request on it (the SDK's next call failed unanswered,
    `Server disconnected without sending a response`)."""
    head = (f"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Accept: {HEADERS['accept']}\r\nContent-Length: 200000\r\n\r\n").encode()
    async with running_server(tmp_path) as srv:
        stream = await trio.open_tcp_stream("127.0.0.1", srv.port)
        async with stream:
            await stream.send_all(head + b" " * 70_000)  # the rest never comes
            answer = b""
            with trio.fail_after(10):
                while chunk := await stream.receive_some(65536):
                    answer += chunk
    status, *headers = answer.partition(b"\r\n\r\n")[0].decode().split("\r\n")
    assert status.startswith("HTTP/1.1 413 ")
    assert "connection: close" in (h.lower() for h in headers)


async def test_text_with_nul_is_refused_as_over_the_websocket(tmp_path: Path) -> None:
    """The SDK decodes `\\u0000` into the arguments (a lone surrogate it refuses itself,
    400); a websocket frame with it is refused before a world sees it, and so is a call."""
    args = {"game_id": "g", "rect": [0, 0, 1, 1], "agent": "a\x00b"}
    async with running_server(tmp_path) as srv, httpx.AsyncClient() as http:
        status, reply = await rpc(http, srv.url, "tools/call",
                                  {"name": "observe", "arguments": args})
    assert status == 200 and reply is not None
    result = reply["result"]
    assert result["isError"]
    assert result["content"][0]["text"] == (
        "bad_request: agent: text must be valid Unicode (no NUL, no lone surrogate)")
    assert result["structuredContent"]["error"]["detail"] == {"path": "agent"}


async def test_a_call_leaves_no_line_on_the_log(tmp_path: Path,
                                              caplog: pytest.LogCaptureFixture) -> None:
    """Stateless, each request is a session of its own whose end the SDK logged at info:
    "Terminating session: None", once per call, on the server's stderr."""
    caplog.set_level(logging.INFO)
    async with running_server(tmp_path) as srv, httpx.AsyncClient() as http:
        caplog.clear()
        status, reply = await rpc(http, srv.url, "tools/call",
                                  {"name": "list_games", "arguments": {}})
    assert status == 200 and reply is not None and not reply["result"]["isError"]
    assert [r.getMessage() for r in caplog.records
            if r.name == "mcp.server.streamable_http"] == []


async def test_every_argument_of_every_tool_says_what_it_is(tmp_path: Path) -> None:
    """A model reads only the listing: run_history's generation and count, control_run's
    action and speed and patch_run's expected_graph_version came bare."""
    async with running_server(tmp_path) as srv, httpx.AsyncClient() as http:
        _, reply = await rpc(http, srv.url, "tools/list", {})
    assert reply is not None
    bare = [f"{t['name']}.{name}" for t in reply["result"]["tools"]
            for name, prop in t["inputSchema"]["properties"].items() if not prop.get("description")]
    assert bare == []


@pytest.mark.parametrize(("agent", "accepted"), edges(80))
async def test_a_tool_argument_bound_counts_utf16_code_units(
        tmp_path: Path, agent: str, accepted: bool) -> None:
    """The seed's `z.string().min(1).max(80)`: 40 emoji fill an agent id, and 79 letters and
    an emoji overflow it (the schema's maxLength, in code points, lets both through)."""
    args = {"game_id": "g", "agent": agent}
    async with running_server(tmp_path) as srv, httpx.AsyncClient() as http:
        result = await tool(http, srv.url, "observe", args)
    assert not result["ok"]
    assert result["text"] == ("unknown_actor: game_id: there is no such game; start_mosaic starts "
                              "one" if accepted else "bad_request: agent: at most 80 characters")
