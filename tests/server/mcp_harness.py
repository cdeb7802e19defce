"""Raw MCP calls over HTTP (stateless JSON-RPC, one POST each) for the server's tests."""

from __future__ import annotations

import json
from typing import Any

import httpx

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def rpc(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any],
              token: str | None = None, headers: dict[str, str] | None = None
              ) -> tuple[int, dict[str, Any] | None]:
    """(HTTP status, the JSON-RPC response or None) of one call."""
    extra = dict(HEADERS, **(headers or {}))
    if token is not None:
        extra["authorization"] = f"Bearer {token}"
    r = await http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method,
                                            "params": params}, headers=extra)
    frames = [line[6:] for line in r.text.splitlines() if line.startswith("data: ")]
    return r.status_code, json.loads(frames[-1]) if frames else None


async def tool(http: httpx.AsyncClient, url: str, name: str, args: dict[str, Any],
               token: str | None = None) -> dict[str, Any]:
    """A tool's result: {"ok", "text", "structured"}; a refusal's `error` is its
    structuredContent's error object."""
    status, reply = await rpc(http, url, "tools/call", {"name": name, "arguments": args},
                              token)
    assert status == 200 and reply is not None, (status, reply)
    result = reply["result"]
    structured = result.get("structuredContent") or {}
    return {"ok": not result.get("isError"), "text": result["content"][0]["text"],
            "structured": structured, "error": structured.get("error")}
