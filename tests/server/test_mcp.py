"""The MCP host (server/mcp.py) against hostile callers: what it refuses, and that a refusal
is a plain answer rather than a logged failure."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
import trio

from tests.server.mcp_harness import rpc
from tests.server.ws_harness import running_server


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
    assert r.status_code in (404, 405)  # POST only
