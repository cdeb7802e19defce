"""MCP at /mcp: the stateless transport facts (keepalives included), the seed's tool list
spelled as the seed spells it, strict arguments, and a small field played to the end."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation
from sse_starlette.sse import EventSourceResponse

from actors.field.actor import FieldActor
from actors.field.prompt import bootstrap
from actors.field.rules_text import MCP_RULES_TEXT
from actors.field.tool_args import StartMosaicArgs
from actors.field.tools import undelta_known
from actors.runtime import Call, refused
from actors.world import Refusal
from examples.field_mcp import play
from protocol.bounds import bounds_of
from protocol.client import Client, RequestError
from protocol.ops import field as field_ops
from server import mcp as mcp_server
from server import worlds
from server.auth import TokenStore
from tests.field_live._live import start
from tests.server.ws_harness import running_server
from tests.utf16 import EMOJI

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
SIZE = 24  # the small field played to the end
SEED_TOOLS = {"start_mosaic", "join", "observe", "reveal", "commit", "retract", "list_games",
              "field_rules"}


def test_start_mosaic_bounds_what_field_start_bounds() -> None:
    """start_mosaic is field.start underneath: each argument they share has the op's bounds
    (the seed bounds none of them but the canvas, G up to 1000), so the tool refuses
    nothing the op admits, and what does not fit the canvas the referee refuses for both."""
    tool, op = attrs.fields_dict(StartMosaicArgs), attrs.fields_dict(field_ops.StartArgs)
    for name in ("chunks", "chunk", "size", "seed", "depth"):
        assert bounds_of(tool[name]) == bounds_of(op[name]), name


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
        assert json.loads(frames[0][6:])["result"]["serverInfo"]["name"] == "petridish"
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        r = await http.post(f"{srv.url}/mcp", json=note, headers=HEADERS)
        assert r.status_code == 202


def _text(result: Any) -> str:
    assert len(result.content) == 1
    return result.content[0].text


async def test_the_seed_tools_as_the_seed_spells_them_play_a_field_to_the_end(
        tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as srv:
        async with streamable_http_client(f"{srv.url}/mcp") as streams, \
                ClientSession(streams[0], streams[1]) as s:
            await s.initialize()
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert SEED_TOOLS <= set(tools)  # other worlds declare theirs too
            commit_schema = tools["commit"].input_schema
            assert set(commit_schema["required"]) == {"game_id", "agent", "cells",
                                                      "expected_revision"}
            agent = commit_schema["properties"]["agent"]
            assert (agent["minLength"], agent["maxLength"], agent["description"]) == (
                1, 80, "Your agent id from join.")
            assert commit_schema["properties"]["game_id"]["pattern"] == "^[a-zA-Z0-9_-]{1,80}$"
            assert commit_schema["additionalProperties"] is False
            assert tools["observe"].description.endswith(
                "The payload is under structuredContent.observation; cell id = y*G + x.")
            assert MCP_RULES_TEXT in tools["join"].description  # the long descriptions

            # a growing field with the seed's arguments: accepted, named by a uuid
            grown = await s.call_tool("start_mosaic", {"kind": "field", "chunks": 3,
                                                       "grow": {"every_minutes": 30}})
            assert not grown.is_error, _text(grown)
            assert uuid.UUID(grown.structured_content["game_id"])
            assert grown.structured_content["status"] == "generating"
            # strict arguments: plain sentences naming the argument, nothing else
            for args, text in (
                    ({"kind": "field", "colour": "red"}, "bad_request: colour: unknown argument"),
                    ({"kind": "field", "grow": {"every_minutes": 0}},
                     "bad_request: grow.every_minutes: must be between 1.0 and 1440.0"),
                    ({"kind": "tiles"},
                     'bad_request: kind: expected one of "field", "scatter"'),
                    # field.start's bounds: 50 of the smallest chunk fill the canvas...
                    ({"kind": "field", "chunks": 51, "chunk": 20},
                     "bad_request: chunks: must be between 1 and 50"),
                    # ... and the referee refuses a block the chosen chunk cannot fit
                    ({"kind": "field", "chunks": 26},
                     "bad_request: chunks: 1..25 chunks of 40 fit the largest canvas")):
                refused = await s.call_tool("start_mosaic", args)
                assert refused.is_error and _text(refused) == text
                assert refused.structured_content["error"]["code"] == "bad_request"
            long_id = await s.call_tool("commit", {"game_id": "x", "agent": "a" * 200,
                                                   "cells": [], "expected_revision": 0})
            assert long_id.is_error
            assert _text(long_id) == "bad_request: agent: at most 80 characters"
            assert long_id.structured_content["error"]["detail"] == {"path": "agent"}
            for tool, name, more in (("commit", "agent", {"cells": [], "expected_revision": 0}),
                                     ("observe", "agent", {}), ("join", "name", {})):
                empty = await s.call_tool(tool, {"game_id": "x", name: "", **more})  # min(1)
                assert empty.is_error
                assert _text(empty) == f"bad_request: {name}: at least 1 character"
            for text in (_text(long_id), _text(refused)):
                assert "http" not in text and "pydantic" not in text.lower()

            rules = await s.call_tool("field_rules", {})
            assert _text(rules) == MCP_RULES_TEXT and "Mcp-Session-Id" in _text(rules)
            assert "/ws" not in _text(rules)
            prompt = (await s.list_prompts()).prompts
            assert [p.name for p in prompt] == ["play_mosaic"] + [
                p.name for w in worlds.worlds() if w.kind != "field" for p in w.prompts]
            got = await s.get_prompt("play_mosaic")
            games = await s.call_tool("list_games", {})
            today = games.structured_content["today"]
            assert got.messages[0].content.text == "\n".join(bootstrap(srv.url, today))
            first = games.structured_content["games"][0]
            assert (first["game_id"], first["day"], first["today"]) == (
                f"day-{today}", today, True)

            # a small field, to the end, with the seed's tools
            started = await s.call_tool("start_mosaic", {"kind": "scatter", "size": SIZE,
                                                         "seed": 5})
            game = started.structured_content["game_id"]
            with trio.fail_after(60):
                while True:
                    obs = await s.call_tool("observe", {"game_id": game, "rect": [0, 0, 1, 1]})
                    if not obs.is_error:
                        break
                    assert obs.structured_content["error"]["code"] == "generating"
                    await trio.sleep(0.2)
            # the seed's optional keys are left out when unset (no agent, not cut)
            assert not {"health", "note", "truncated"} & set(
                obs.structured_content["observation"])
            joined = await s.call_tool("join", {"game_id": game, "name": "seed-spelled",
                                                "model": "none", "machine_id": "m-1"})
            me = joined.structured_content["agent"]
            assert re.fullmatch(r"a1~[A-Za-z0-9_-]+", me), me  # anonymous: a keyed agent id
            seated = (await srv.state.directory.get(f"field:{game}")).state.state.agents[0]
            assert seated.harness == "mcp/0.1.0"  # the SDK client's clientInfo, from initialize
            seed_tile = joined.structured_content["seed_tile"]
            obs = (await s.call_tool("observe", {"game_id": game, "agent": me}))
            o = obs.structured_content["observation"]
            assert set(obs.structured_content) == {"observation"}
            assert _text(obs) == (f"Revision {o['revision']}: {len(o['tiles'])} of "
                                  f"{o['tiles_total']} tiles listed (G {SIZE}); reward 0; 1 agents; "
                                  f"frontier {json.dumps(o['frontier'], separators=(',', ':'))}."
                                  " Health healthy (0.0% wrong over 0).")
            assert (o["grown"], o["field"]["kind"], o["field"]["grow"]) == (0, "scatter", None)
            r = await s.call_tool("reveal", {"game_id": game, "agent": me, "tile": seed_tile,
                                             "expected_revision": o["revision"],
                                             "intent": "my seed tile first"})
            assert not r.is_error, _text(r)
            assert _text(r).startswith(f"Revision {o['revision'] + 1}: revealed tile {seed_tile}")
            o = (await s.call_tool("observe", {"game_id": game, "agent": me})
                 ).structured_content["observation"]
            known = undelta_known(o["known"])
            assert known and [c for c, _ in known] == sorted({c for c, _ in known})
            assert len(o["known"]["values"]) == len(o["known"]["ids"])
            solution = (await srv.state.directory.get(f"field:{game}")).state.truth.solution
            tile = next(t for t in o["tiles"] if t["id"] == seed_tile)
            cells = sorted({(tile["y0"] + ly + dy) * SIZE + tile["x0"] + lx + dx
                            for lx, ly, w, h in tile["rects"] for dy in range(h)
                            for dx in range(w)} - {c for c, _ in known})
            batch = [[c, int(solution[c])] for c in cells[:-1]]
            c = await s.call_tool("commit", {"game_id": game, "agent": me, "cells": batch,
                                             "expected_revision": o["revision"],
                                             "intent": "all but one cell"})
            text = _text(c)
            assert "\n" not in text and not text.startswith("{")
            assert re.fullmatch(r"Revision \d+: \d+ accepted \(\d+ forced, \d+ guess\), 0 "
                                r"rejected, 0 ignored; solved \[[\d,]*\] for \d+ reward; "
                                r"frontier \[[\d,]*\]\. Health healthy \(0\.0% wrong over \d+\)\.",
                                text), text
            assert c.structured_content["health"]["state"] == "healthy"
            assert "note" not in c.structured_content  # healthy: no note (seed: note?)
            assert json.dumps(c.structured_content) not in text  # the payload is sent once
            back = await s.call_tool("retract", {"game_id": game, "agent": me,
                                                 "cells": [batch[0][0]],
                                                 "expected_revision": c.structured_content[
                                                     "revision"], "intent": "second thoughts"})
            assert not back.is_error and back.structured_content["retracted"] == [batch[0][0]]
            rest = [[x, int(solution[x])] for x in (batch[0][0], cells[-1])]
            done = await s.call_tool("commit", {
                "game_id": game, "agent": me, "cells": rest, "intent": "the seed tile",
                "expected_revision": back.structured_content["revision"]})
            assert done.structured_content["solved"][0]["tile"] == seed_tile, _text(done)
            rev = done.structured_content["revision"]
            # another anonymous caller cannot write as this agent, with or without a key
            async with streamable_http_client(f"{srv.url}/mcp") as other_streams, \
                    ClientSession(other_streams[0], other_streams[1]) as other:
                await other.initialize()
                for pretend in ("a1", "a1~not-the-key"):
                    nope = await other.call_tool("commit", {
                        "game_id": game, "agent": pretend, "cells": batch[:1],
                        "expected_revision": rev})
                    assert nope.is_error and _text(nope).startswith(
                        "forbidden: agent a1 belongs to another caller")
                # a write without an agent id is the seed's implicit agent a0's, joined by
                # its first write (here a retract of nothing: only the join is stored)
                implicit = await other.call_tool("retract", {
                    "game_id": game, "cells": [], "expected_revision": rev})
                assert not implicit.is_error, _text(implicit)
                assert implicit.structured_content["revision"] == rev + 1
        # the rest of the field, played by the example agent through the same tools
        with trio.fail_after(240):
            figures = await play(f"{srv.url}/mcp", game, name="finisher")
        assert figures["agent"].startswith("a2~")  # a0 takes no number
        async with Client.connect(srv.ws_url) as ws:
            final = await ws.request("field.observe", f"field:{game}", {})
        assert final["totals"]["solved"] == final["tiles_total"]
        assert [a["id"] for a in final["agents"]] == ["a1", "a0", "a2"]
        # A growing field of one chunk filling its canvas ends at its first growth: its
        # end is said where the seed's observe text shows nothing (before the listing).
        async with Client.connect(srv.ws_url) as ws:
            await ws.request("field.start", "field:ends", {
                "kind": "field", "canvas": field_ops.MIN_CANVAS, "chunk": field_ops.MIN_CANVAS,
                "chunks": 1,
                "grow": {"every_s": field_ops.MIN_GROW_S}})
            with trio.fail_after(60):
                while True:
                    try:
                        over = await ws.request("field.observe", "field:ends", {})
                    except RequestError as e:  # being generated
                        assert e.code == "generating", e
                        over = {"ended": False}
                    if over["ended"]:
                        break
                    await trio.sleep(0.2)
        async with streamable_http_client(f"{srv.url}/mcp") as streams, \
                ClientSession(streams[0], streams[1]) as last:
            await last.initialize()
            ended = _text(await last.call_tool("observe", {"game_id": "ends"}))
            assert ended.startswith(f"Revision {over['revision']}, the game has ended: "), ended
            assert ended.endswith("]."), ended


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
            await c.request("field.start", "field:slow", {"size": 14, "seed": 1})
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
        assert data[-1]["result"]["structuredContent"]["text"] == MCP_RULES_TEXT
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
    assert result.get("isError"), result
    return result["content"][0]["text"]


async def test_bad_input_over_mcp_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    token = TokenStore(tmp_path).create("agent", "mcp-player")
    async with running_server(tmp_path) as srv, httpx.AsyncClient() as http:
        url = srv.url
        async with Client.connect(srv.ws_url, token) as c:
            await c.request("field.start", "field:bad", {"size": 20, "seed": 1})
            with trio.fail_after(60):
                while True:
                    joined = await _tool(http, url, "join", {"game_id": "bad", "name": "p"},
                                         token)
                    if not joined.get("isError"):
                        break
                    await trio.sleep(0.2)
            agent = joined["structuredContent"]["agent"]
            assert agent == "a1"  # a token's caller is its name: the plain id
            before = await c.request("field.observe", "field:bad", {})
            commit = {"game_id": "bad", "agent": agent, "cells": [[0, 1]],
                      "expected_revision": before["revision"]}
            # a spectator (no token on a closed server), a bad token, a stale revision,
            # a wrong type, an unknown game: each refused with its code, nothing changes.
            assert _refusal(await _tool(http, url, "commit", commit)) == (
                "forbidden: commit needs the agent role; this caller is spectator")
            assert _refusal(await _tool(http, url, "commit", commit, "pdg_nope")) == (
                "unauthorized: the token is unknown or was revoked")
            stale = commit | {"expected_revision": before["revision"] - 1}
            assert _refusal(await _tool(http, url, "commit", stale, token)).startswith(
                "stale_revision:")
            assert _refusal(await _tool(http, url, "commit", commit | {"cells": "0=1"},
                                        token)) == "bad_request: cells: expected list"
            assert _refusal(await _tool(http, url, "commit",
                                        commit | {"game_id": "never-started"}, token)
                            ).startswith("unknown_actor:")
            assert _refusal(await _tool(http, url, "commit", commit | {"game_id": "a b"},
                                        token)).startswith("bad_request: game_id:")
            assert _refusal(await _tool(http, url, "nope", {}, token)).startswith(
                "unknown_op: there is no tool 'nope'")
            # The op's own refusal names the tool's argument, as the converter's does.
            unsized = await _tool(http, url, "start_mosaic", {"kind": "scatter"}, token)
            assert _refusal(unsized) == (
                "bad_request: size: a field without growth needs a size in 14..200")
            assert unsized["structuredContent"]["error"]["detail"] == {"path": "size"}
            r = await http.post(f"{url}/mcp", content=b"{not json", headers=HEADERS)
            assert r.status_code == 400 and "-32700" in r.text
            after = await c.request("field.observe", "field:bad", {})
        assert after == before


async def test_a_game_or_agent_that_does_not_exist_is_named_by_its_argument(
        tmp_path: Path) -> None:
    """Over MCP the tools, not the websocket ops, are what the caller knows: an unknown game
    names `game_id` and start_mosaic (as the puzzle tools name `room` and puzzle_create),
    an agent nobody joined as names `agent`, in the seed's sentence."""
    async with running_server(tmp_path, open_mode=True) as srv, \
            Client.connect(srv.ws_url) as c, \
            streamable_http_client(f"{srv.url}/mcp") as streams, \
            ClientSession(streams[0], streams[1]) as s:
        await s.initialize()
        write = {"cells": [], "expected_revision": 0}
        for name, args in (("join", {"name": "p"}), ("observe", {}), ("field_rules", {}),
                           ("reveal", {"tile": 0, "expected_revision": 0}),
                           ("commit", {"agent": "a1", **write}), ("retract", write)):
            nosuch = await s.call_tool(name, {"game_id": "nosuch", **args})
            assert nosuch.is_error and _text(nosuch) == (
                "unknown_actor: game_id: there is no such game; start_mosaic starts one"), name
            assert nosuch.structured_content["error"]["detail"] == {"path": "game_id"}, name
        await start(c, "known", size=14, seed=1)
        rev = (await c.request("field.observe", "field:known", {}))["revision"]
        for name, args in (("observe", {}), ("commit", {**write, "expected_revision": rev})):
            stranger = await s.call_tool(name, {"game_id": "known", "agent": "a99", **args})
            assert stranger.is_error and _text(stranger) == (
                "agent: Agent a99 has not joined this game; call join first."), name
            assert stranger.structured_content["error"]["detail"] == {"path": "agent"}, name


async def test_the_client_name_kept_as_a_harness_is_cut_at_utf16_code_units(
        tmp_path: Path) -> None:
    """clientInfo's name is kept to 60 characters and its version to 20 as JavaScript counts
    them (an emoji is two), a pair the cut would split left out whole."""
    store = TokenStore(tmp_path)
    clients = {store.create("agent", "named"): ("a" * 59 + EMOJI, "1"),
               store.create("agent", "versioned"): ("b", "v" * 19 + EMOJI)}
    async with running_server(tmp_path) as srv, httpx.AsyncClient() as http:
        async with Client.connect(srv.ws_url, next(iter(clients))) as c:
            await start(c, "named", size=20, seed=1)
        for token, (name, version) in clients.items():
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": name, "version": version}}}
            headers = HEADERS | {"authorization": f"Bearer {token}"}
            r = await http.post(f"{srv.url}/mcp", json=init, headers=headers)
            assert r.status_code == 200
            joined = await _tool(http, srv.url, "join", {"game_id": "named", "name": "p"}, token)
            assert not joined.get("isError"), joined
        seated = (await srv.state.directory.get("field:named")).state.state.agents
    assert [a.harness for a in seated] == ["a" * 59 + "/1", "b/" + "v" * 19]


async def test_health_percentages_round_as_the_seeds_to_fixed(tmp_path: Path) -> None:
    # one wrong cell in 16 is 6.25%: the seed's toFixed(1) writes 6.3 (Python's format, 6.2)
    token = TokenStore(tmp_path).create("agent", "rounder")
    async with running_server(tmp_path) as srv, httpx.AsyncClient() as http, \
            Client.connect(srv.ws_url, token) as c:
        to = "field:round"
        await start(c, "round", size=20, seed=1)
        j = await c.request("field.join", to, {"name": "r"})
        rev = (await c.request("field.observe", to, {"agent": j["agent"]}))["revision"]
        await c.request("field.reveal", to, {"agent": j["agent"], "tile": j["seed_tile"],
                                             "expected_revision": rev})
        live = (await srv.state.directory.get(to)).state
        cells = live.state.geo.tiles[j["seed_tile"]].cells.tolist()
        unknown = [x for x in cells if live.state.values[x] < 0][:16]
        assert len(unknown) == 16
        truth = live.truth.solution
        batch = [[x, int(truth[x]) ^ (x == unknown[-1])] for x in unknown]  # the last wrong
        r = await _tool(http, srv.url, "commit", {"game_id": "round", "agent": j["agent"],
                                                  "cells": batch, "expected_revision": rev + 1},
                        token)
        assert r["structuredContent"]["health"]["rate"] == 1 / 16
        assert r["content"][0]["text"].endswith(
            " Health warning (6.3% wrong over 16). warning: your wrong-rate is 6.3% over your "
            "last 16 committed cells; at 4% you are out for the day. Commit what you can prove.")


async def test_a_callers_client_info_is_its_own_behind_a_proxy_and_only_text(
        tmp_path: Path) -> None:
    """clientInfo names a join's harness. Behind a trusted proxy, two anonymous callers with
    one User-Agent were one slot (the proxy's address): the last to initialize named the
    other's agent. A name holding a NUL was kept too (an argument holding one is refused)."""
    async with running_server(tmp_path, open_mode=True, trusted_proxies=("127.0.0.1",)) as srv:
        async with Client.connect(srv.ws_url) as ws:
            await start(ws, "proxied", kind="scatter", size=SIZE, seed=5)
        http = {ip: httpx.AsyncClient(headers={"X-Forwarded-For": ip}, timeout=60)
                for ip in ("10.0.0.1", "10.0.0.2", "10.0.0.3")}
        async with http["10.0.0.1"], http["10.0.0.2"], http["10.0.0.3"], \
                streamable_http_client(f"{srv.url}/mcp", http_client=http["10.0.0.1"]) as x, \
                streamable_http_client(f"{srv.url}/mcp", http_client=http["10.0.0.2"]) as y, \
                streamable_http_client(f"{srv.url}/mcp", http_client=http["10.0.0.3"]) as z, \
                ClientSession(x[0], x[1], client_info=Implementation(name="harness-X",
                                                                     version="1")) as sx, \
                ClientSession(y[0], y[1], client_info=Implementation(name="harness-Y",
                                                                     version="1")) as sy, \
                ClientSession(z[0], z[1], client_info=Implementation(name="evil\0harness",
                                                                     version="1")) as sz:
            for session in (sx, sy, sz):
                await session.initialize()
            for session, name in ((sx, "xbot"), (sz, "zbot")):
                joined = await session.call_tool("join", {"game_id": "proxied", "name": name})
                assert not joined.is_error, joined
        agents = (await srv.state.directory.get("field:proxied")).state.state.agents
        assert [(a.name, a.harness) for a in agents] == [
            ("xbot", "harness-X/1"), ("zbot", f"python-httpx/{httpx.__version__}")]


async def test_one_caller_varying_its_user_agent_evicts_only_its_own_client_infos(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """clientInfo is remembered per caller, then per User-Agent: a caller initializing under
    ever new User-Agents keeps its last mcp.HARNESSES and evicts no other caller's (it did,
    once it had sent mcp.CLIENTS of them)."""
    monkeypatch.setattr(mcp_server, "CLIENTS", 4)
    store = TokenStore(tmp_path)
    steady, churner = store.create("agent", "steady"), store.create("agent", "churner")
    agents = [f"{i}-" + "x" * 4000 for i in range(3 * mcp_server.HARNESSES)]

    def headers(token: str, agent: str) -> dict[str, str]:
        return HEADERS | {"authorization": f"Bearer {token}", "user-agent": agent}

    async def initialize(http: httpx.AsyncClient, url: str, token: str, name: str,
                         agent: str) -> None:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": name}}}
        r = await http.post(f"{url}/mcp", json=init, headers=headers(token, agent))
        assert r.status_code == 200, r.text

    async with running_server(tmp_path) as srv, httpx.AsyncClient(timeout=30) as http:
        async with Client.connect(srv.ws_url, steady) as c:
            await start(c, "ua", size=20, seed=1)
        await initialize(http, srv.url, steady, "steady-harness", "ua")
        for i, agent in enumerate(agents):
            await initialize(http, srv.url, churner, f"h{i}", agent)
        for token, agent, name in ((steady, "ua", "s"), (churner, agents[-1], "c1"),
                                   (churner, agents[0], "c2")):
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "join", "arguments": {"game_id": "ua", "name": name}}}
            r = await http.post(f"{srv.url}/mcp", json=call, headers=headers(token, agent))
            assert r.status_code == 200 and '"isError":true' not in r.text, r.text
        seated = (await srv.state.directory.get("field:ua")).state.state.agents
    assert [a.harness for a in seated] == [
        "steady-harness", f"h{len(agents) - 1}", agents[0][:80]]  # the first one forgotten
