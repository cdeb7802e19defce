"""Browsers from origins the server does not trust cannot use /ws or /mcp (`--allow-origin`
names the others); the server's own pages and clients that send no Origin can."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from tests.server.raw_ws import HandshakeRefused, RawSocket
from tests.server.ws_harness import running_server

MCP_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"}}}
MCP_HEADERS = {"accept": "application/json, text/event-stream",
               "content-type": "application/json"}


async def _ws(port: int, origin: str | None) -> int:
    """101 when the websocket opens (and says hello), else the refusal's HTTP status."""
    try:
        sock = await RawSocket.open(port, {"Origin": origin} if origin else None)
    except HandshakeRefused as refused:
        return refused.status
    assert (await sock.hello())["ok"]
    await sock.aclose()
    return 101


async def _mcp(url: str, origin: str | None) -> int:
    """The answer's status; a refusal's body is a JSON-RPC error the MCP SDK's client reads."""
    headers = dict(MCP_HEADERS, **({"origin": origin} if origin else {}))
    async with httpx.AsyncClient() as http:
        r = await http.post(f"{url}/mcp", json=MCP_INIT, headers=headers)
    if r.status_code == 403:
        assert r.json() == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": "forbidden: this origin may not use the server",
            "data": {"code": "forbidden", "message": "this origin may not use the server",
                     "detail": {}}}}
    return r.status_code


async def test_untrusted_origins_are_refused_on_ws_and_mcp(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    async with running_server(tmp_path, open_mode=True) as srv:
        own = f"http://127.0.0.1:{srv.port}"
        assert await _ws(srv.port, None) == 101  # an agent: no Origin
        assert await _ws(srv.port, own) == 101  # the server's own page
        for foreign in ("https://evil.example", "http://127.0.0.1:1", "null",
                        f"http://localhost:{srv.port}"):
            assert await _ws(srv.port, foreign) == 403, foreign
            assert await _mcp(srv.url, foreign) == 403, foreign
        # DNS rebinding: a foreign name that resolves here is "same origin" to the browser
        # (Origin and Host agree) but names no host the server trusts.
        rebound = {"Origin": f"http://evil.example:{srv.port}",
                   "Host": f"evil.example:{srv.port}"}
        with pytest.raises(HandshakeRefused) as refused:
            await RawSocket.open(srv.port, rebound)
        assert refused.value.status == 403
        assert await _mcp(srv.url, None) == 200
        assert await _mcp(srv.url, own) == 200
        assert "origin_refused: refused a websocket from 127.0.0.1: origin " \
               "'https://evil.example' is not allowed" in caplog.text


async def test_allowed_origins_may_use_the_server(tmp_path: Path) -> None:
    allowed = frozenset({"https://game.example"})
    async with running_server(tmp_path, allowed_origins=allowed) as srv:
        assert await _ws(srv.port, "https://game.example") == 101
        assert await _ws(srv.port, "https://other.example") == 403
        assert await _mcp(srv.url, "https://game.example") == 200
        assert await _mcp(srv.url, "https://other.example") == 403
    async with running_server(tmp_path, allowed_origins=frozenset({"*"})) as srv:
        assert await _ws(srv.port, "https://other.example") == 101
