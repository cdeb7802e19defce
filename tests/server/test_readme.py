"""The README's first hour, as a newcomer types it: `make serve` on a fresh solver cache,
the first 100 x 100 field ready within 10 s with progress pushed before it, then every
other command of the README's code blocks, typed as written.

The commands run in a scratch folder that stands for a fresh clone (the repository's
files linked in, its own `./data`), so `./data` is the scratch one; the port is the one
thing changed (`PORT` for make, and `127.0.0.1:8000` in a command becomes the free port
picked), because another server may hold 8000 on a shared machine. NUMBA_CACHE_DIR points
at an empty folder, so `make serve` pays the solver's compile as a fresh clone does.
`make test` is the suite itself and is not run from inside it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import trio

from protocol.client import Client

REPO = Path(__file__).resolve().parents[2]
LINKED = ("Makefile", "pyproject.toml", ".venv", "examples")  # .venv: the package, editable
NOT_RUN = {"make test": "the test suite itself"}
READY_BOUND = 10.0  # seconds: the bound for the first 100 x 100 field


def readme_commands() -> list[str]:
    """Every line of the README's code blocks (indented four spaces)."""
    lines = (REPO / "README.md").read_text().splitlines()
    return [line[4:] for line in lines if line.startswith("    ") and line.strip()]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(proc: subprocess.Popen[str], port: int, limit: float) -> list[str]:
    """The lines make serve printed until the server listens on `port`."""
    out: list[str] = []
    deadline = time.monotonic() + limit
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError("make serve exited:\n" + "".join(out))
        out.append(line)
        if f"listening on http://127.0.0.1:{port}" in line:
            return out
    raise AssertionError("make serve did not listen:\n" + "".join(out))


async def _first_field(url: str, token: str) -> tuple[float, int, int]:
    """Start a 100 x 100 field; (seconds until its manifest arrived, progress pushes before
    it, tiles)."""
    async with Client.connect(url, token=token) as c:
        began = time.monotonic()
        started = await c.request("field.start", "field:first", {"size": 100, "seed": 1})
        assert started["status"] == "generating"
        progress = 0
        async with c.subscribe("field:first") as sub:
            with trio.fail_after(60):
                async for push in sub:
                    if push.kind == "snapshot" and push.data.get("status") == "ready":
                        break
                    if push.kind == "snapshot" and "progress" in push.data:
                        progress += 1
                    if push.kind == "events" and any(e["kind"] == "manifest"
                                                     for e in push.data):
                        break
        ready = time.monotonic() - began
        rules = await c.request("field.observe", "field:first", {"rect": [0, 0, 100, 100]})
        return ready, progress, rules["tiles_total"]


def test_every_readme_command_works_as_typed_after_make_serve(tmp_path: Path) -> None:
    commands = readme_commands()
    assert commands[0] == "make serve" and "make test" in commands
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in LINKED:
        (clone / name).symlink_to(REPO / name)
    (clone / "README.md").write_text((REPO / "README.md").read_text())
    port = _free_port()
    env = dict(os.environ, PORT=str(port), NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               PYTHONUNBUFFERED="1")
    env.pop("DATA", None)
    # nothing to install: make serve runs no pip when nothing changed
    dry = subprocess.run(["make", "-n", "serve"], cwd=clone, env=env, text=True,
                         capture_output=True, check=True).stdout
    assert "pip" not in dry, dry

    began = time.monotonic()
    serve = subprocess.Popen(["make", "serve"], cwd=clone, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
    try:
        printed = _wait_listening(serve, port, 240)
        listening = time.monotonic() - began
        warm = next(line for line in printed if "field solver ready" in line)
        owner = (clone / "data" / "owner.token").read_text().strip()
        ready, progress, tiles = trio.run(_first_field, f"ws://127.0.0.1:{port}/ws", owner)
        print(f"\nfresh solver cache: {warm.strip()}; make serve listening after "
              f"{listening:.1f} s; first 100 x 100 field ({tiles} tiles) ready "
              f"{ready:.2f} s after field.start, {progress} progress pushes before it")
        assert progress >= 1
        assert ready <= READY_BOUND, f"the first field took {ready:.1f} s"

        ran = []
        for command in commands:
            if command in NOT_RUN or command == "make serve":
                continue
            typed = command.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
            done = subprocess.run(typed, shell=True, cwd=clone, env=env, text=True, check=False,
                                  capture_output=True, timeout=240)
            assert done.returncode == 0, f"{command!r} failed:\n{done.stdout}{done.stderr}"
            ran.append((command, done.stdout))
        outputs = dict(ran)
        assert "'agent': 'a1'" in outputs["make agent GAME=demo"]
        assert re.search(r"started game [0-9a-f-]{36}", outputs["make mcp-agent"])
        assert re.search(r"^pdg_\S+$", outputs["make token NAME=alice"], re.MULTILINE)
        assert "alice\tagent" in outputs[".venv/bin/petridish token list --data ./data"]
        assert json.loads(outputs["curl -s http://127.0.0.1:8000/healthz"])["ok"] is True
        assert {c for c, _ in ran} | set(NOT_RUN) | {"make serve"} == set(commands)
    finally:
        os.killpg(serve.pid, signal.SIGTERM)
        try:
            serve.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
