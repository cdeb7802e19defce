"""The example agents end as docs/field-live.md says, over the websocket and over MCP alike:
one line on stderr and an exit status (0 played to the end, 1 error, 2 dead, 3 nothing left
it can play), never a traceback; and the MCP one waits out a spent server time, as
protocol/client.py does."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from examples.field_mcp import play
from protocol.client import Client
from server.budgets import Budgets
from tests.field_live._live import die_on_ws, start
from tests.server import burn_world
from tests.server.ws_harness import running_server

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = {"websocket": "field_agent.py", "mcp": "field_mcp.py"}


async def _run(over: str, srv, *args: str) -> subprocess.CompletedProcess[bytes]:
    """The example agent `over` the websocket or MCP, against `srv`, to its end."""
    url = srv.ws_url if over == "websocket" else f"{srv.url}/mcp"
    cmd = [sys.executable, str(REPO / "examples" / SCRIPTS[over]), "--url", url, *args]
    with trio.fail_after(180):
        return await trio.run_process(cmd, capture_stdout=True, capture_stderr=True,
                                      check=False)


def _said(done: subprocess.CompletedProcess[bytes]) -> str:
    """What the agent said on stderr: its last line (the lines before are its log)."""
    assert b"Traceback" not in done.stderr, done.stderr.decode()[-3000:]
    return done.stderr.decode().splitlines()[-1]


async def test_the_mcp_agent_waits_out_its_spent_server_time(tmp_path: Path) -> None:
    """docs/agents.md: an MCP request refused for spent server time (HTTP 429, the SDK's
    MCPError carrying the `over_budget` refusal) is sent again after `retry_after`; the
    example agent crashed on the first one while anyone else used the server."""
    budgets = Budgets(cpu_rate=0.05, cpu_rate_agent=0.05, cpu_burst=0.05,
                      cpu_burst_anonymous=0.05)
    async with running_server(tmp_path, open_mode=True, budgets=budgets,
                              **burn_world.settings()) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as c:
        await start(c, "tight", size=14, seed=2)
        async with burn_world.others_busy(srv):
            with trio.fail_after(120):
                figures = await play(f"{srv.url}/mcp", "tight")
        final = await c.request("field.observe", "field:tight", {})
    assert srv.state.metrics.budget_hits.labels("cpu").value > 0  # it was refused, and waited
    assert figures["agent"].startswith("a1~")
    assert final["totals"]["solved"] == final["tiles_total"]


async def test_the_mcp_agent_waits_out_its_spent_http_requests(tmp_path: Path) -> None:
    """docs/agents.md: an MCP request past its address's `http_rate` is refused as one past
    its server time is (HTTP 429, `over_budget`, `detail.budget: "http_rate"`), and sent
    again after `retry_after`; the example agent stopped on it ('error: over_budget: more
    than 20 HTTP requests per second from this address; slow down')."""
    async with running_server(tmp_path, open_mode=True,
                              budgets=Budgets(http_rate=10, http_burst=10)) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as c:
        await start(c, "hurried", size=14, seed=2)
        with trio.fail_after(120):
            figures = await play(f"{srv.url}/mcp", "hurried")
        final = await c.request("field.observe", "field:hurried", {})
    assert srv.state.metrics.budget_hits.labels("http_rate").value > 0  # refused, and waited
    assert figures["agent"].startswith("a1~")
    assert final["totals"]["solved"] == final["tiles_total"]


@pytest.mark.parametrize("over", list(SCRIPTS))
async def test_a_dead_agent_says_so_and_exits_2(tmp_path: Path, over: str) -> None:
    async with running_server(tmp_path) as srv:
        token = srv.state.tokens.create("agent", "mallory")
        async with Client.connect(srv.ws_url, token) as c:
            await start(c, "deaths", size=40, seed=3)
            solution = (await srv.state.directory.get("field:deaths")).state.truth.solution
            me = await die_on_ws(c, "deaths", solution, "reckless")
        # the same user joins again: its dead agent back, refused on its first write
        done = await _run(over, srv, "--token", token, "--game", "deaths")
    assert done.returncode == 2, done.stderr.decode()[-3000:]
    assert re.fullmatch(rf"dead: Agent {me} is out for the day: its wrong-rate reached 4% at "
                        r"revision \d+\. Its territory stays; it writes no more today\.",
                        _said(done)), _said(done)
    assert done.stdout == b""


@pytest.mark.parametrize(("over", "said"), [
    ("websocket", ("error: unknown_actor: there is no world 'field:nosuch'; field.start "
                   "creates it")),
    ("mcp", "error: unknown_actor: game_id: there is no such game; start_mosaic starts one")])
async def test_a_game_that_does_not_exist_is_one_line_and_exit_1(
        tmp_path: Path, over: str, said: str) -> None:
    async with running_server(tmp_path, open_mode=True) as srv:
        done = await _run(over, srv, "--game", "nosuch")
    assert (done.returncode, _said(done)) == (1, said), done.stderr.decode()[-3000:]


@pytest.mark.parametrize("over", list(SCRIPTS))
async def test_an_agent_left_nothing_to_play_stops_and_exits_3(
        tmp_path: Path, over: str) -> None:
    """The walk-through as the docs once ordered it: a bot joins field:demo, reveals its
    seed tile and leaves; that tile is its group's to commit, so the example agent that
    plays field:demo next is left a frontier it may not play, and the field stays still.
    It observed every 0.2 s for ever; now it stops after `--patience` still observes."""
    async with running_server(tmp_path, open_mode=True) as srv:
        async with Client.connect(srv.ws_url) as bot:
            await start(bot, "demo", size=20, seed=1)
            me = await bot.request("field.join", "field:demo", {"name": "bot", "model": "x"})
            obs = await bot.request("field.observe", "field:demo", {"agent": me["agent"]})
            await bot.request("field.reveal", "field:demo", {
                "agent": me["agent"], "tile": me["seed_tile"],
                "expected_revision": obs["revision"]})
        done = await _run(over, srv, "--game", "demo", "--patience", "5")
        async with Client.connect(srv.ws_url) as c:
            final = await c.request("field.observe", "field:demo", {})
    assert done.returncode == 3, done.stderr.decode()[-3000:]
    assert re.fullmatch(
        r"nothing left this agent can play: no hidden tile on its frontier, no cell of its "
        rf"territory left to commit; its frontier's tiles \[{me['seed_tile']}\] were revealed "
        rf"by other groups, theirs to commit; nobody wrote for 6 observes \(revision "
        rf"{final['revision']}\)", _said(done)), _said(done)
    assert final["totals"]["solved"] < final["tiles_total"]
