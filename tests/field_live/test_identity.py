"""Death is for the day: a dead agent's user (websocket, token) or machine (MCP, machine_id)
that joins the same field again gets its dead agent back, refused `dead` on its first
write; anonymous MCP callers are each their own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from protocol.client import Client, RequestError
from server.auth import TokenStore
from tests.field_live._live import die, die_on_ws, start
from tests.server.ws_harness import running_server

GAME = "deaths"


async def test_a_dead_agents_user_or_machine_rejoins_dead(tmp_path: Path) -> None:
    token = TokenStore(tmp_path).create("agent", "mallory")
    async with running_server(tmp_path, open_mode=True) as srv, \
            Client.connect(srv.ws_url, token) as c:
        to = f"field:{GAME}"
        await start(c, GAME, size=60, seed=3)
        solution = (await srv.state.directory.get(to)).state.truth.solution

        # websocket, a token's user
        me = await die_on_ws(c, GAME, solution, "reckless")
        again = await c.request("field.join", to, {"name": "fresh start?"})
        assert again["agent"] == me and again["health"]["state"] == "dead"
        assert again["note"].startswith("dead:")
        obs = await c.request("field.observe", to, {"agent": me})
        with pytest.raises(RequestError) as err:
            await c.request("field.reveal", to, {"agent": me, "tile": obs["frontier"][0]
                                                 if obs["frontier"] else 0,
                                                 "expected_revision": obs["revision"]})
        assert err.value.code == "dead"
        # another user is not touched by mallory's death
        async with Client.connect(srv.ws_url) as anon:
            other = await anon.request("field.join", to, {"name": "someone else"})
        assert other["agent"] != me and other["health"] is None

        # MCP, anonymous callers with a machine id
        async def mcp(fn: Any) -> Any:
            async with streamable_http_client(f"{srv.url}/mcp") as streams, \
                    ClientSession(streams[0], streams[1]) as s:
                await s.initialize()
                return await fn(s)

        async def tool(s: ClientSession, tool_name: str, **args: Any) -> dict[str, Any]:
            r = await s.call_tool(tool_name, {"game_id": GAME, **args})
            return {"error": r.content[0].text} if r.is_error else r.structured_content

        async def die_on_mcp(s: ClientSession) -> str:
            j = await tool(s, "join", name="bot", machine_id="box-7")
            agent = j["agent"]

            async def observe() -> dict[str, Any]:
                o = (await tool(s, "observe", agent=agent))["observation"]
                cell, known = 0, []
                for gap, v in zip(o["known"]["ids"], o["known"]["values"], strict=True):
                    cell += gap
                    known.append([cell, int(v)])
                return {**o, "known": known}

            await die(lambda cells, rev: tool(s, "commit", agent=agent, cells=cells,
                                              expected_revision=rev),
                      observe, solution, j["seed_tile"],
                      lambda rev: tool(s, "reveal", agent=agent, tile=j["seed_tile"],
                                       expected_revision=rev))
            return agent

        dead = await mcp(die_on_mcp)

        async def rejoin(s: ClientSession) -> tuple[dict[str, Any], dict[str, Any]]:
            j = await tool(s, "join", name="bot again", machine_id="box-7")
            obs = (await tool(s, "observe", agent=j["agent"]))["observation"]
            write = await tool(s, "commit", agent=j["agent"], cells=[[0, 0]],
                               expected_revision=obs["revision"])
            return j, write

        joined, write = await mcp(rejoin)
        assert joined["agent"].partition("~")[0] == dead.partition("~")[0]
        assert joined["agent"] != dead  # a new caller, a new key: still the dead agent
        assert joined["health"]["state"] == "dead"
        assert write["error"].startswith(f"dead: Agent {dead.partition('~')[0]} is out for "
                                         "the day")
        # a different machine joins healthy
        fresh = await mcp(lambda s: tool(s, "join", name="other box", machine_id="box-8"))
        assert "health" not in fresh
        with trio.fail_after(5):
            listed = await c.request("field.observe", to, {"rect": [0, 0, 60, 60]})
        deaths = [a["id"] for a in listed["agents"] if a["health"]["state"] == "dead"]
        assert deaths == [me, dead.partition("~")[0]]
