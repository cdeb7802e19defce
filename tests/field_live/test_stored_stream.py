"""A field stream stored before the world shape (recorded on 2026-12-01 by the field actor
of commit 8dc5267: its events, its secret, and what its ops showed) loads after it with
an identical state: every read answers as it did then, but for what was added since
(observe's `grown` and `field`, the view's `grown`; the rules text's refusal codes `agent`
and `guess`; the leaderboard's `users_total` and `models_total`)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from actors.field.rules_text import RULES_TEXT
from protocol.client import Client
from server.storage import SqliteEventStore
from tests.server.mcp_harness import tool
from tests.server.ws_harness import error, raw_client, result, running_server

RECORDED = Path(__file__).with_name("stream_2026-12-01.json")


async def test_a_stream_recorded_before_the_change_loads_with_an_identical_state(
        tmp_path: Path) -> None:
    recorded = json.loads(RECORDED.read_text())
    game, events, shows = recorded["game"], recorded["events"], recorded["shows"]
    to = f"field:{game}"
    async with SqliteEventStore.in_directory(tmp_path) as store:
        await store.save_snapshot(f"fieldtruth:{game}", 0, recorded["truth"])
        await store.append(to, 0, events)
    async with running_server(tmp_path, open_mode=True) as srv, Client.connect(srv.ws_url) as c:
        agents = {a["name"]: a["id"] for a in shows["observe_rect"]["agents"]}
        rules = await c.request("field.rules", to)
        assert rules["text"] == RULES_TEXT
        assert {**rules, "text": ""} == {**shows["rules"], "text": ""}

        async def observed(args: dict) -> dict:
            obs = await c.request("field.observe", to, args)
            assert obs.pop("grown") == 0 and obs.pop("field")["kind"] == "scatter"
            return obs

        assert await observed({"agent": agents["ann"]}) == shows["observe_a"]
        assert await observed({"rect": [0, 0, 30, 30]}) == shows["observe_rect"]
        board = await c.request("field.leaderboard", to)
        assert (board.pop("users_total"), board.pop("models_total")) == (
            len(board["users"]), len(board["models"]))
        assert board == shows["leaderboard"]

        def without_grown(view: dict) -> dict:
            assert view.pop("grown") == []  # added since: the revisions of the growths
            return view

        assert without_grown((await c.request("field.history", to, {"revision": 5}))["view"]) \
            == shows["history_5"]["view"]
        assert without_grown((await c.request("field.history", to, {
            "revision": len(events)}))["view"]) == shows["history_last"]["view"]
        async with c.subscribe(to) as sub:
            assert without_grown((await sub.__anext__()).data) == shows["snapshot"]
        # and it plays on: the next write lands at the next revision
        joined = await c.request("field.join", to, {"name": "late"})
        assert joined["revision"] == len(events) + 1
        stored = await srv.state.directory.store.read(to)
    assert [e.data for e in stored[:len(events)]] == events


async def test_a_stored_lone_surrogate_is_served_escaped_to_every_reader(
        tmp_path: Path) -> None:
    """Streams written before the protocol refused lone surrogates may hold one (a join
    name, an intent): every read and push still goes out, the text escaped."""
    recorded = json.loads(RECORDED.read_text())
    game, events = recorded["game"], recorded["events"]
    events = [dict(e) for e in events]
    joins = [e for e in events if e["kind"] == "join"]
    joins[0]["name"] = "bad\ud800name"
    commit = next(e for e in events if e["kind"] == "commit")
    commit["intent"] = "half \udc00 a pair"
    to = f"field:{game}"
    async with SqliteEventStore.in_directory(tmp_path) as store:
        await store.save_snapshot(f"fieldtruth:{game}", 0, recorded["truth"])
        await store.append(to, 0, events)
    async with running_server(tmp_path, open_mode=True) as srv, \
            raw_client(srv) as raw, Client.connect(srv.ws_url) as c:
        reply = await raw.call("field.observe", to, rect=[0, 0, 30, 30])
        names = [a["name"] for a in result(reply)["agents"]]
        assert names[0] == "bad\ud800name"
        for _ in range(3):  # the connection keeps working
            assert (await c.request("field.rules", to))["text"]
        await raw.send({"id": 77, "op": "subscribe", "to": to, "since": 0})
        assert result(await raw.recv())["rev"] == len(events)
        pushed = await raw.recv()
        assert any(e.get("intent") == "half \udc00 a pair" for e in pushed["data"])
        late = await c.request("field.join", to, {"name": "late"})
        assert late["revision"] == len(events) + 1
        refused = await raw.call("field.join", to, name="new\ud800")
        assert error(refused) == {
            "code": "bad_request", "detail": {"path": "args.name"},
            "message": "args.name: text must be valid Unicode (no NUL, no lone surrogate)"}


async def test_a_stored_lone_surrogate_is_served_escaped_over_mcp(tmp_path: Path,
                                                                  caplog) -> None:
    """A tool's result holding a stored lone surrogate (which pydantic will not write:
    the call answered HTTP 200 with an empty body, "surrogates not allowed" on the log)
    answers, each such string showing the surrogate as its escape text."""
    recorded = json.loads(RECORDED.read_text())
    game, events = recorded["game"], [dict(e) for e in recorded["events"]]
    joins = [e for e in events if e["kind"] == "join"]
    joins[0]["name"] = "bad\ud800name"
    to = f"field:{game}"
    async with SqliteEventStore.in_directory(tmp_path) as store:
        await store.save_snapshot(f"fieldtruth:{game}", 0, recorded["truth"])
        await store.append(to, 0, events)
    async with running_server(tmp_path, open_mode=True) as srv, httpx.AsyncClient() as http:
        observed = await tool(http, srv.url, "observe",
                              {"game_id": game, "rect": [0, 0, 30, 30]})
        board = await tool(http, srv.url, "list_games", {})  # and the next call is answered
    assert observed["ok"], observed
    names = [a["name"] for a in observed["structured"]["observation"]["agents"]]
    assert names[0] == "bad\\ud800name" and names[1:] == [
        j["name"] for j in joins[1:len(names)]]
    assert board["ok"]
    assert "PydanticSerializationError" not in caplog.text
