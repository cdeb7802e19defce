"""examples/ecosystem_agent.py plays a run to its end against a live server, patching
the rule graph when a species nears extinction (the desert's wolves do)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import trio

from protocol.client import Client
from tests.ecosystem.live import SIZE, WAIT
from tests.server.ws_harness import running_server

REPO = Path(__file__).resolve().parents[2]


async def test_the_example_agent_finishes_a_run(tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as running:
        with trio.fail_after(WAIT):
            done = await trio.run_process(
                [sys.executable, str(REPO / "examples" / "ecosystem_agent.py"), "--url",
                 running.ws_url, "--run", "desert", "--size", str(SIZE), "--seed", "1"],
                capture_stdout=True, stderr=subprocess.STDOUT, check=False)
        out = done.stdout.decode()
        assert done.returncode == 0, out
        summary = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
        assert summary["generation"] == 180 and summary["patches"], summary
        async with Client.connect(running.ws_url) as c:
            view = (await c.request("ecosystem.view", "ecosystem:desert", {}))["view"]
    assert view["end"] is not None
    assert [d["change"]["patch"] for d in view["decisions"]] == [
        p["patch"] for p in summary["patches"]]
    first = summary["patches"][0]
    assert first["species"] == "C"  # the wolves, below a fifth of their founders


async def test_the_example_agent_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    """Answers that are not JSON, or a URL with no websocket behind it: one line on stderr
    and exit 2, never a traceback."""
    agent = [sys.executable, str(REPO / "examples" / "ecosystem_agent.py")]
    async with running_server(tmp_path, open_mode=True) as running:
        wrong = running.ws_url.replace("/ws", "/nowhere")
        not_json = ("ecosystem_agent.py: error: argument --answers: not JSON: Expecting "
                    "value: line 1 column 1 (char 0)")
        # the status is the transport's to choose
        refused = f"error: cannot connect to {wrong}: server rejected WebSocket connection: HTTP "
        for argv, said in ((["--answers", "notjson"], not_json), (["--url", wrong], refused)):
            with trio.fail_after(WAIT):
                done = await trio.run_process(agent + argv, capture_stdout=True,
                                              capture_stderr=True, check=False)
            lines = done.stderr.decode().splitlines()
            assert (done.returncode, done.stdout) == (2, b"") and lines[-1].startswith(said)
            assert "Traceback" not in done.stderr.decode()
