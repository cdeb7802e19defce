"""The example agent over MCP: the same play as examples/field_agent.py, spoken as the seed's
MCP tool calls (`list_games`, `start_mosaic`, `join`, `observe`, `reveal`, `commit`,
`field_rules`) to `/mcp` (streamable HTTP, stateless) with the official `mcp` SDK client.

    python examples/field_mcp.py [--url http://127.0.0.1:8000/mcp] [--token T]
        [--game ID | --start SIZE] [--seed S] [--name NAME]

Without --game and --start it plays today's daily game (the first of `list_games`);
`--start SIZE` starts a SIZE x SIZE scatter game first (`start_mosaic`: the server names
it with a uuid, printed before play). Without a token, the server must run with `--open`.
A request refused for spent server time (`over_budget` `cpu`, HTTP 429) is sent again after
its `retry_after`, as protocol/client.py does on the websocket, and so is one refused for its
address's spent HTTP requests (`over_budget` `http_rate`, HTTP 429). It ends as
examples/field_agent.py does, with its exit statuses and messages.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import trio
from mcp.shared.exceptions import MCPError

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from examples.field_agent import PATIENCE, add_patience, play_on, report
from protocol.client import ClientError, RequestError, rest_of

T = TypeVar("T")
WAIT = 30.0  # seconds one call may wait out its over_budget refusals (the websocket's timeout)
# The websocket op the example agent speaks -> the seed's MCP tool.
TOOLS = {"field.rules": "field_rules", "field.observe": "observe", "field.join": "join",
         "field.reveal": "reveal", "field.commit": "commit", "field.retract": "retract"}


def undelta(coded: dict[str, Any]) -> list[list[int]]:
    """The observation's delta-coded known cells as [cell, value] pairs (cumulative sum)."""
    out, cell = [], 0
    for gap, v in zip(coded["ids"], coded["values"], strict=True):
        cell += gap
        out.append([cell, int(v)])
    return out


class McpClient:
    """What `Agent` needs of a client (`request(op, to, args)`), over the seed's tools."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call a tool; its structuredContent, or a RequestError from its error."""
        result = await patiently(lambda: self.session.call_tool(name, arguments))
        data = result.structured_content or {}
        if result.is_error:
            error = data.get("error") or {"code": "", "message": result.content[0].text}
            raise RequestError(error["code"], error["message"], error.get("detail") or {})
        return data

    async def request(self, op: str, to: str, args: dict[str, Any]) -> Any:
        """The op as its tool for game `to`'s id; an observation comes back decoded."""
        if op == "field.join":
            args = {k: v for k, v in args.items() if k != "harness"}  # MCP: from clientInfo
        data = await self.tool(TOOLS[op], {"game_id": to.partition(":")[2], **args})
        if op == "field.observe":
            obs = data["observation"]
            return {**obs, "known": undelta(obs["known"])}
        if op == "field.rules":  # the websocket's growth period
            grow = data.get("grow")
            return {**data, "grow": None if grow is None else {
                "every_s": grow["every_minutes"] * 60}}
        return data


def refusal(error: MCPError) -> RequestError:
    """An MCP error as the refusal it carries (`data`: {code, message, detail}), else as
    its JSON-RPC code and message."""
    data = error.data if isinstance(error.data, dict) else {}
    if isinstance(data.get("code"), str):
        return RequestError(data["code"], str(data.get("message", "")), data.get("detail"))
    return RequestError(str(error.code), error.message)


def rest(refused: RequestError) -> float | None:
    """Seconds until `refused` may be sent again: spent server time (`rest_of`), or the
    address's spent HTTP requests (`over_budget` `http_rate`: every MCP call is one);
    None for any other refusal."""
    detail = refused.detail if isinstance(refused.detail, dict) else {}
    if refused.code == "over_budget" and detail.get("budget") == "http_rate":
        wait = detail.get("retry_after")
        return float(wait) if isinstance(wait, int | float) and wait >= 0 else None
    return rest_of(refused)


async def patiently(send: Callable[[], Awaitable[T]]) -> T:
    """`send()`, sent again after each refusal for spent server time or HTTP requests
    (`over_budget` `cpu` or `http_rate`) once its `retry_after` has passed, while that ends
    within WAIT seconds of the first try; any other MCP error (or a refusal it cannot wait
    out) is raised as a RequestError."""
    until = trio.current_time() + WAIT
    while True:
        try:
            return await send()
        except MCPError as e:
            refused = refusal(e)
            wait = rest(refused)
            if wait is None or trio.current_time() + wait >= until:
                raise refused from None
            await trio.sleep(wait)


async def play(url: str, game: str | None = None, *, token: str | None = None,
               start: int | None = None, seed: int = 0, name: str = "mcp-example",
               patience: int = PATIENCE) -> dict:
    """Play `game` (default: today's daily game; `start`: a new SIZE x SIZE game) to the end
    over MCP; figures, with the game id. What ends the session is raised as itself, not in
    the SDK's exception groups."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    try:
        async with httpx2.AsyncClient(headers=headers,
                                      timeout=httpx2.Timeout(30, read=300)) as http, \
                streamable_http_client(url, http_client=http) as streams, \
                ClientSession(streams[0], streams[1]) as session:
            await patiently(session.initialize)
            client = McpClient(session)
            if start is not None:
                game = (await client.tool("start_mosaic", {"kind": "scatter", "size": start,
                                                          "seed": seed}))["game_id"]
                print(f"started game {game}", flush=True)
            elif game is None:
                game = (await client.tool("list_games", {}))["games"][0]["game_id"]
            figures = await play_on(client, game, start=None,  # type: ignore[arg-type]
                                    seed=seed, name=name, model="none", patience=patience)
            return {"game": game, **figures}
    except BaseExceptionGroup as group:
        raise only(group) from None


def only(group: BaseExceptionGroup) -> BaseException:
    """The one exception the nested task groups of `group` hold, else `group` itself."""
    inner: BaseException = group
    while isinstance(inner, BaseExceptionGroup) and len(inner.exceptions) == 1:
        inner = inner.exceptions[0]
    return group if isinstance(inner, BaseExceptionGroup) else inner


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:8000/mcp")
    p.add_argument("--token", help="an agent token (petridish token create); none on --open")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--game", help="the game id to play (default: today's daily game)")
    which.add_argument("--start", type=int, metavar="SIZE", help="start a SIZE x SIZE game")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--name", default="mcp-example")
    add_patience(p)
    args = p.parse_args(argv)
    return report(lambda: play(args.url, args.game, token=args.token, start=args.start,
                               seed=args.seed, name=args.name, patience=args.patience),
                  (ClientError, OSError, httpx2.HTTPError))


if __name__ == "__main__":
    sys.exit(main())
