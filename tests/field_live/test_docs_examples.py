"""docs/agents.md's Python examples run as written against a real server (its address put
in for 127.0.0.1:8000): each a whole program, in a process of its own. They run as an open
server's anonymous agent, and as the README runs them: on a closed server (`make serve`)
with the agent token `make token` prints in `PETRIDISH_TOKEN`, the websocket one before
`make agent GAME=demo`, which still plays `field:demo` to the end."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from protocol.client import Client, RequestError
from tests.server.server_process import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = re.findall(r"```python\n(.*?)```", (ROOT / "docs/agents.md").read_text(),
                      re.DOTALL)
PROGRAMS = [code for code in EXAMPLES if "trio.run(main)" in code]
MCP, WEBSOCKET = PROGRAMS if len(PROGRAMS) == 2 else ("", "")
REVEALED = r"Revision \d+: revealed tile \d+ .*|\d+"  # what each example prints


def run_example(code: str, server: ServerProcess, token: str | None = None
                ) -> subprocess.CompletedProcess[str]:
    """Run `code` against `server`, with `token` in PETRIDISH_TOKEN (None: unset)."""
    program = code.replace("http://127.0.0.1:8000", server.http_url).replace(
        "ws://127.0.0.1:8000", server.ws_url.removesuffix("/ws"))
    env = {k: v for k, v in os.environ.items() if k != "PETRIDISH_TOKEN"}
    if token is not None:
        env["PETRIDISH_TOKEN"] = token
    return subprocess.run([sys.executable, "-c", program], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240, check=False)


def assert_revealed(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr[-2000:]
    printed = done.stdout.strip()
    assert re.fullmatch(REVEALED, printed), printed


def agent_token(server: ServerProcess, name: str = "alice") -> str:
    """`make token NAME=alice`: an agent token, created by the command line beside the
    running server."""
    done = subprocess.run([sys.executable, "-m", "server.cli", "token", "create", "--role",
                           "agent", "--name", name, "--data", str(server.data_dir)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    token, = re.findall(r"^pdg_\S+$", done.stdout, re.MULTILINE)
    return token


async def _join_refusal(url: str, token: str, to: str) -> str:
    async with Client.connect(url, token=token) as c:
        try:
            await c.request("field.join", to, {"name": "probe"})
        except RequestError as e:
            return e.code
    return "joined"


def test_every_example_is_a_whole_program() -> None:
    assert len(PROGRAMS) == 2
    assert all("async with" not in line for code in EXAMPLES if code not in PROGRAMS
               for line in code.splitlines() if not line.startswith(" "))


@pytest.mark.parametrize("code", PROGRAMS, ids=["mcp", "websocket"])
def test_an_example_runs_as_written_anonymously_on_an_open_server(code: str,
                                                                   tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", "--open") as server:
        done = run_example(code, server)
    assert_revealed(done)


def test_the_mcp_example_plays_with_a_token_and_says_why_it_is_refused_without(
        tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data") as server:  # closed, as `make serve`
        refused = run_example(MCP, server)
        done = run_example(MCP, server, agent_token(server))
    assert refused.returncode == 1 and refused.stdout == ""
    assert re.fullmatch(r"forbidden: .*spectator.*\n", refused.stderr), refused.stderr
    assert_revealed(done)


def test_make_agent_plays_the_demo_to_the_end_after_the_websocket_example(
        tmp_path: Path) -> None:
    """Followed as written: the websocket example plays a game of its own, so `make agent
    GAME=demo` after it still plays field:demo to the end (the example once revealed a tile
    of field:demo and left, and the example agent then waited there for ever)."""
    with ServerProcess(tmp_path / "data") as server:  # closed, as `make serve`
        assert server.owner_token is not None
        done = run_example(WEBSOCKET, server, agent_token(server))
        # make agent GAME=demo: the example agent, as the owner, plays field:demo to the end
        agent = subprocess.run([sys.executable, "examples/field_agent.py", "--url",
                                server.ws_url, "--token", server.owner_token, "--game", "demo",
                                "--start", "20"], cwd=ROOT, capture_output=True, text=True,
                               timeout=240, check=False)
        assert agent.returncode == 0, agent.stderr[-2000:]
        # no seat is left on it: it was played to the end
        assert trio.run(_join_refusal, server.ws_url, agent_token(server, "bob"),
                        "field:demo") in {"no_room", "ended"}
    assert_revealed(done)
