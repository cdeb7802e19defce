"""The ecosystem's MCP tools at /mcp: listed with bounded schemas, a run created, stepped,
patched (stale evidence refused), scheduled and read by an MCP client; an anonymous
caller owns its run through the key in its run id, a token's caller through its name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from protocol.client import Client
from tests.ecosystem.live import POND, SIZE, agent_tokens
from tests.server.ws_harness import running_server

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
TOOLS = {"create_run", "view_run", "run_history", "control_run", "patch_run", "schedule_change"}
SELF_A = {"kind": "self", "species": "A", "value": "cooperative"}


def refusal(result: Any) -> tuple[str, str]:
    """(code, message) of a tool error."""
    assert result.is_error, result
    error = result.structured_content["error"]
    return error["code"], error["message"]


async def test_an_mcp_client_creates_steps_patches_and_reads_a_run(tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as srv, \
            streamable_http_client(f"{srv.url}/mcp") as streams, \
            ClientSession(streams[0], streams[1]) as s:
        await s.initialize()
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert TOOLS <= set(tools)
        schema = tools["create_run"].input_schema
        assert set(schema["required"]) == {"world", "threat", "reward"}
        assert schema["properties"]["size"]["maximum"] == 64
        assert schema["properties"]["world"]["maxLength"] == 1024
        assert set(tools["patch_run"].input_schema["required"]) == {
            "run_id", "patch", "expected_graph_version"}
        assert tools["patch_run"].input_schema["properties"]["patch"]["description"].endswith(
            "{kind: environment, field, value} (the seed's RulePatch; other fields absent, never null).")
        created = await s.call_tool("create_run", {**POND, "seed": 3, "size": SIZE})
        assert not created.is_error, created
        run_id = created.structured_content["run_id"]
        name, key = run_id.split("~")
        assert len(key) >= 16
        assert created.structured_content["source"] == "deterministic_fallback"
        assert f"Created run {run_id}: set up (deterministic_fallback)" in created.content[0].text
        # The key makes the caller the owner; the bare id (another anonymous caller) is not.
        stepped = await s.call_tool("control_run", {"run_id": run_id, "action": "step"})
        assert stepped.structured_content == {"playing": False, "speed": 10, "generation": 1,
                                              "ended": False}
        assert refusal(await s.call_tool("control_run", {"run_id": name, "action": "step"})) == (
            "forbidden", "only the run's owner may do this")
        assert refusal(await s.call_tool("patch_run", {"run_id": run_id, "patch": SELF_A,
                                                       "expected_graph_version": 2})) == (
            "stale_graph_version", "the graph is at version 1, not 2")
        patched = await s.call_tool("patch_run", {"run_id": run_id, "patch": SELF_A,
                                                  "expected_graph_version": 1})
        assert patched.structured_content == {"decision": 0, "generation": 1,
                                              "graph_version": 1, "from_generation": 2}
        await s.call_tool("control_run", {"run_id": run_id, "action": "step"})  # v2 at 2
        change = {"generation": 4, "activation": "immediate", "duration": "short",
                  "transition": "abrupt", "patch": {"kind": "environment", "field": "pressure",
                                                    "value": "drought"}}
        scheduled = await s.call_tool("schedule_change", {"run_id": run_id, "change": change})
        assert scheduled.structured_content == {"decision": 1, "generation": 2,
                                                "graph_version": 2, "from_generation": 4}
        for _ in range(3):
            await s.call_tool("control_run", {"run_id": run_id, "action": "step"})
        viewed = await s.call_tool("view_run", {"run_id": name})  # reads take the bare id
        view = viewed.structured_content["view"]
        assert (view["generation"], view["graph_version"], len(view["decisions"])) == (5, 3, 2)
        assert "density" not in view and "pair" in viewed.structured_content["vocabulary"]
        assert viewed.content[0].text.startswith(f"Run {name} (paused), generation 5: biomass A ")
        history = await s.call_tool("run_history", {"run_id": run_id, "generation": 1})
        frames = history.structured_content["frames"]
        assert [f["generation"] for f in frames] == [1, 2, 3, 4, 5]
        assert history.structured_content["graph"]["version"] == 1
        outcomes = [(e["generation"], e["decision"], e["outcome"]) for f in frames
                    for e in f["events"]]
        assert outcomes == [(2, 0, "applied"), (4, 1, "applied")]
        # Bounds and shapes refused with the websocket's plain sentences, naming the argument.
        assert refusal(await s.call_tool("create_run", {**POND, "size": 65})) == (
            "bad_request", "size: must be between 16 and 64")
        assert refusal(await s.call_tool("create_run", {**POND, "world": "x" * 141}))[0] == \
            "invalid_answers"
        assert refusal(await s.call_tool("control_run", {"run_id": run_id, "action": "rewind"}))[
            0] == "bad_request"
        nowhere = await s.call_tool("view_run", {"run_id": "nowhere"})
        assert refusal(nowhere) == ("unknown_actor",  # the tool's words, not the op's
                                    "run_id: there is no such run; create_run makes one")
        assert nowhere.structured_content["error"]["detail"] == {"path": "run_id"}
        assert refusal(await s.call_tool("view_run", {"run_id": "x~"}))[0] == "bad_request"
        bad_name = await s.call_tool("control_run", {"run_id": "no run", "action": "step"})
        assert refusal(bad_name) == ("bad_request", "run_id: the id create_run answered")
        assert bad_name.structured_content["error"]["detail"] == {"path": "run_id"}
        bogus = await s.call_tool("patch_run", {"run_id": run_id, "patch": {"kind": "bogus"},
                                                "expected_graph_version": 1})
        assert refusal(bogus) == ("invalid_patch", "Invalid rule patch")  # (the seed's words)
        assert bogus.structured_content["error"]["detail"] == {"path": "patch.kind"}
    async with running_server(tmp_path) as srv, Client.connect(srv.ws_url) as c:  # the same run
        assert (await c.request("ecosystem.view", f"ecosystem:{name}", {}))["view"][
            "generation"] == 5


async def _tool(http: httpx.AsyncClient, url: str, name: str, arguments: dict[str, Any],
                token: str | None = None) -> dict[str, Any]:
    """One stateless `tools/call`; the JSON-RPC result."""
    headers = HEADERS | ({"authorization": f"Bearer {token}"} if token else {})
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}
    r = await http.post(f"{url}/mcp", json=call, headers=headers, timeout=30)
    frames = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
    return frames[-1]["result"]


async def test_a_token_caller_owns_its_runs_and_a_spectator_creates_none(tmp_path: Path) -> None:
    ada, bob = agent_tokens(tmp_path, "ada", "bob")
    async with running_server(tmp_path) as srv, httpx.AsyncClient() as http:
        created = await _tool(http, srv.url, "create_run", {**POND, "size": SIZE}, ada)
        run_id = created["structuredContent"]["run_id"]
        assert "~" not in run_id  # a token's caller is itself on every call
        played = await _tool(http, srv.url, "control_run",
                             {"run_id": run_id, "action": "step"}, ada)
        assert played["structuredContent"]["generation"] == 1
        other = await _tool(http, srv.url, "control_run", {"run_id": run_id, "action": "step"},
                            bob)
        assert other["isError"] and other["structuredContent"]["error"]["code"] == "forbidden"
        anonymous = await _tool(http, srv.url, "create_run", {**POND, "size": SIZE})
        assert anonymous["isError"]  # a spectator on a closed server
        assert anonymous["structuredContent"]["error"]["code"] == "forbidden"
        seen = await _tool(http, srv.url, "view_run", {"run_id": run_id})
        assert seen["structuredContent"]["view"]["owner"] == "ada"
