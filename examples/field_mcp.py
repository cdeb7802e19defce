"""The example agent over MCP: the same play as examples/field_agent.py, spoken as MCP
tool calls to `/mcp` (streamable HTTP, stateless) with the official `mcp` SDK client.

    python examples/field_mcp.py --url http://127.0.0.1:8000/mcp --game ID [--start SIZE]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import trio

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from examples.field_agent import play_on
from protocol.client import RequestError

_REFUSAL = re.compile(r"([a-z_]+): (.*?)(?: detail: (\{.*\}))?$", re.DOTALL)


class McpClient:
    """What `Agent` needs of a client (`request(op, to, args)`), over MCP tool calls."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def request(self, op: str, to: str, args: dict[str, Any]) -> Any:
        """Call tool `field_<verb>` for actor `to`; a tool error becomes a RequestError."""
        game = to.partition(":")[2]
        result = await self.session.call_tool(op.replace(".", "_"), {"game_id": game, **args})
        if result.is_error:
            text = result.content[0].text.removeprefix(f"Error executing tool {op.replace('.', '_')}: ")
            m = _REFUSAL.match(text)
            if m is None:
                raise RequestError("", text)
            raise RequestError(m[1], m[2], json.loads(m[3]) if m[3] else {})
        return result.structured_content


async def play(url: str, game: str, *, start: int | None = None, seed: int = 0,
               name: str = "mcp-example") -> dict:
    """Play `game` over MCP to the end (starting it first when asked); figures."""
    async with streamable_http_client(url) as streams, \
            ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        return await play_on(McpClient(session), game, start=start,  # type: ignore[arg-type]
                             seed=seed, name=name, model="none")


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:8000/mcp")
    p.add_argument("--game", required=True)
    p.add_argument("--start", type=int, metavar="SIZE")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    print(trio.run(lambda: play(args.url, args.game, start=args.start, seed=args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
