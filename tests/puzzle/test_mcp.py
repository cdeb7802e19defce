"""The puzzle room over MCP with the `mcp` client: create a room, read the board as a text grid,
win level 1 through the tools (moves, undo, reset, hint), go on to level 2; the keyed room id
keeps another anonymous caller out; bad arguments and spectators are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import jsonschema
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from actors.puzzle.catalog import bundled
from actors.puzzle.tools import TOOLS
from tests.server.mcp_harness import tool
from tests.server.ws_harness import running_server


async def _tool(session: ClientSession, name: str, args: dict[str, Any]) -> Any:
    return await session.call_tool(name, args)


async def test_an_mcp_client_wins_level_1_through_the_tools(tmp_path: Path) -> None:
    solution = bundled("starter").levels[0].solution or ""
    async with running_server(tmp_path, open_mode=True) as srv, \
            streamable_http_client(f"{srv.url}/mcp") as streams, \
            ClientSession(streams[0], streams[1]) as s:
        await s.initialize()
        listed = {t.name for t in (await s.list_tools()).tools}
        assert {t.name for t in TOOLS} <= listed
        prompt = await s.get_prompt("puzzle_play")
        assert "puzzle_create" in prompt.messages[0].content.text

        created = await _tool(s, "puzzle_create", {"room": "mcp1"})
        assert not created.is_error, created
        room = created.structured_content["room_id"]
        assert room.startswith("mcp1~")
        text = created.content[0].text
        assert "0 BABA IS   YOU" in text and "baba*" in text and "Rules: baba is you" in text

        stranger = await _tool(s, "puzzle_move", {"room": "mcp1", "moves": "r"})
        assert stranger.is_error and stranger.structured_content["error"]["code"] == "forbidden"

        won = await _tool(s, "puzzle_move", {"room": room, "moves": solution})
        assert won.structured_content["room"]["won"] and "Won!" in won.content[0].text
        assert won.structured_content["played"] == len(solution)
        undone = await _tool(s, "puzzle_undo", {"room": room})
        assert undone.structured_content["room"]["moves"] == solution[:-1]
        reset = await _tool(s, "puzzle_reset", {"room": room})
        assert reset.structured_content["room"]["moves"] == ""
        seen = await _tool(s, "puzzle_view", {"room": room})
        assert seen.structured_content["room"]["board"]["grid"] in seen.content[0].text
        hint = await _tool(s, "puzzle_hint", {"room": room, "budget_ms": 8000})
        moves = hint.structured_content["hint"]["moves"]
        assert hint.structured_content["hint"]["status"] == "solved" and moves in (
            hint.content[0].text)
        again = await _tool(s, "puzzle_move", {"room": room, "moves": moves + "r"})
        assert again.structured_content["room"]["won"]
        assert again.structured_content["played"] == len(moves)
        assert "was refused: game_over" in again.content[0].text
        nxt = await _tool(s, "puzzle_next", {"room": room})
        assert nxt.structured_content["room"]["level_id"] == "walls"
        assert "Level 2/25 'walls'" in nxt.content[0].text

        bad = await _tool(s, "puzzle_move", {"room": room, "moves": "x"})
        assert bad.is_error and bad.structured_content["error"]["detail"] == {"path": "moves"}
        long = await _tool(s, "puzzle_move", {"room": room, "moves": "r" * 201})
        assert long.is_error and long.structured_content["error"]["code"] == "bad_request"
        odd = await _tool(s, "puzzle_view", {"room": "no room"})
        assert odd.is_error and odd.structured_content["error"]["detail"] == {"path": "room"}


async def test_a_spectator_over_mcp_watches_but_does_not_play(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, \
            streamable_http_client(f"{srv.url}/mcp") as streams, \
            ClientSession(streams[0], streams[1]) as s:
        await s.initialize()
        refused = await _tool(s, "puzzle_create", {"room": "x"})
        assert refused.is_error and refused.structured_content["error"]["code"] == "forbidden"
        missing = await _tool(s, "puzzle_view", {"room": "x"})
        assert missing.structured_content["error"] == {  # the tool's words, not the op's
            "code": "unknown_actor", "message": "room: there is no such room; puzzle_create "
            "makes one", "detail": {"path": "room"}}


async def test_a_room_name_with_a_tilde_is_refused_rather_than_created_unplayable(
        tmp_path: Path) -> None:
    """`NAME~KEY` is how a room id carries an anonymous caller's key: `puzzle_create {room:
    "tl~x"}` created `puzzle:tl` and told its creator to carry `tl~x`, which then spoke as the
    key `x`: `forbidden` in its own room."""
    async with running_server(tmp_path) as srv, httpx.AsyncClient() as http:
        ann = srv.state.tokens.create("agent", "ann")
        refused = await tool(http, srv.url, "puzzle_create", {"room": "tl~x"}, ann)
        assert refused["error"] == {"code": "bad_request", "message": "room: 1 to 80 characters "
                                    "of a-z, A-Z, 0-9, '_', '.' and '-'", "detail": {"path": "room"}}
        missing = await tool(http, srv.url, "puzzle_view", {"room": "tl"})
        assert missing["error"]["code"] == "unknown_actor"


async def test_the_tools_schemas_refuse_what_the_tools_refuse(tmp_path: Path) -> None:
    """A model reads the listing: an argument the tool refuses (its own check, beyond the
    bounds) must break the listed schema too, and one it takes must meet it."""
    samples = {("puzzle_move", "moves"): ["r", "udlrs", "", "x", "R", "r d"],
               ("puzzle_move", "room"): ["sch", "sch~", "~k", "a b", "x/y", "-ok.1"],
               ("view_run", "run_id"): ["no run", "run~", "r.1", "a" * 81]}
    async with running_server(tmp_path, open_mode=True) as srv, \
            streamable_http_client(f"{srv.url}/mcp") as streams, \
            ClientSession(streams[0], streams[1]) as s:
        await s.initialize()
        listed = {t.name: t.input_schema for t in (await s.list_tools()).tools}
        room = (await _tool(s, "puzzle_create", {"room": "sch"})).structured_content["room_id"]
        for (name, arg), values in samples.items():
            base = {"room": room, "moves": "r"} if name == "puzzle_move" else {}
            for value in values:
                reply = await _tool(s, name, {**base, arg: value})
                error = reply.structured_content.get("error", {})
                refused = error.get("code") == "bad_request" and error["detail"].get(
                    "path") == arg  # (a well-formed name of no world is unknown_actor)
                meets = jsonschema.Draft202012Validator(listed[name]).is_valid(
                    {**base, arg: value})
                assert meets != refused, (name, arg, value, reply.content[0].text)
