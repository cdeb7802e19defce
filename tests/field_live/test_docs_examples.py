"""docs/agents.md's Python examples run as written against a real server (its address put
in for 127.0.0.1:8000): each a whole program, in a process of its own."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server.server_process import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = re.findall(r"```python\n(.*?)```", (ROOT / "docs/agents.md").read_text(),
                      re.DOTALL)
PROGRAMS = [code for code in EXAMPLES if "trio.run(main)" in code]


def test_every_example_is_a_whole_program() -> None:
    assert len(PROGRAMS) == 2
    assert all("async with" not in line for code in EXAMPLES if code not in PROGRAMS
               for line in code.splitlines() if not line.startswith(" "))


@pytest.mark.parametrize("code", PROGRAMS, ids=["mcp", "websocket"])
def test_an_example_runs_as_written(code: str, tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", "--open") as server:
        program = code.replace("http://127.0.0.1:8000", server.http_url).replace(
            "ws://127.0.0.1:8000", server.ws_url.removesuffix("/ws"))
        done = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True,
                              text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    printed = done.stdout.strip()
    assert re.fullmatch(r"Revision \d+: revealed tile \d+ .*|\d+", printed), printed
