"""`petridish lab gate` end to end: headless Chromium proves the backlog through the arena
page; a heavy shader at the validator's cost limit does not hang it (the cap fires, the
browser is relaunched, the gate moves on and says so); without Playwright it says what to
install."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from server import lab_gate
from tests.lab.live import HEAVY, LINK_FAILS, birth, born, new_lab, variant, with_owner
from tests.server.server_process import REPO, ServerProcess


@pytest.mark.browser
def test_the_gate_proves_the_backlog_and_a_heavy_shader_does_not_hang_it(
        chromium_path: str, tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data") as server:
        async def setup(c):
            lab = await new_lab(c, "gate")
            heavy = (await birth(c, lab, HEAVY))["id"]  # oldest first: the gate meets it first
            good = (await birth(c, lab, variant(5)))["id"]
            bad = (await birth(c, lab, LINK_FAILS))["id"]
            panel = (await born(c, lab, 1, "panel"))[0]
            return heavy, good, bad, panel

        heavy, good, bad, panel = with_owner(server, setup)
        out = subprocess.run(
            [sys.executable, "-m", "server.cli", "lab", "gate", "--url", server.http_url,
             "--data", str(tmp_path / "data"), "--world", "gate", "--cap", "2",
             "--chromium", chromium_path],
            check=False, cwd=REPO, capture_output=True, text=True, timeout=240)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert len(lines) == 5, out.stdout  # a progress line per organism, then the summary
        assert lines[0].startswith(f"gate [1] {heavy} (shader) capped at 2 s: left unproven, "
                                   "browser relaunched")
        assert f"gate [2] {good} (shader) proven" in lines[1]
        assert f"gate [3] {bad} (shader) dead: " in lines[2] and "v_uv" in lines[2]
        assert f"gate [4] {panel} (panel) proven" in lines[3]
        assert [line.rsplit("; ", 1)[1] for line in lines[:4]] == [
            "3 waiting", "2 waiting", "1 waiting", "0 waiting"]  # it was 4 on every line
        assert lines[4] == ("gate: 4 judged: 2 proven, 1 dead, 1 capped, 0 crashed; "
                            "2 browser launches")

        async def after(c):
            return {o: await c.request("lab.status", "lab:gate", {"id": o})
                    for o in (heavy, good, bad, panel)}

        status = with_owner(server, after)
        assert (status[heavy]["status"], status[heavy]["render_ok"]) == ("alive", False)
        assert status[good]["render_ok"] and status[panel]["render_ok"]
        assert status[bad]["status"] == "dead" and "v_uv" in status[bad]["reason"]


def test_without_playwright_the_gate_says_what_to_install(monkeypatch, tmp_path: Path,
                                                          capsys) -> None:
    monkeypatch.setitem(sys.modules, "playwright", None)
    monkeypatch.setitem(sys.modules, "playwright.async_api", None)
    (tmp_path / "owner.token").write_text("pdg_x\n")
    args = argparse.Namespace(url="http://127.0.0.1:9", data=tmp_path, token_file=None,
                              world="main", track="all", cap=1.0, limit=0, chromium=None)
    assert lab_gate.main(args) == 2
    assert lab_gate.MISSING_PLAYWRIGHT in capsys.readouterr().err
    assert "pip install 'petridish[gate]'" in lab_gate.MISSING_PLAYWRIGHT


def test_the_gate_needs_the_owner_token(tmp_path: Path, capsys) -> None:
    args = argparse.Namespace(url="http://127.0.0.1:9", data=tmp_path, token_file=None,
                              world="main", track="all", cap=1.0, limit=0, chromium=None)
    assert lab_gate.main(args) == 2
    assert "owner.token is missing" in capsys.readouterr().err
