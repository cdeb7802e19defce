"""`petridish puzzle`: solve, replay, share and unshare on level, pack and Keke files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from server.cli import main
from tests.conftest import shared_path
from tests.puzzle.boards import make_level, sample_pack


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["puzzle", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def level_file(tmp_path: Path) -> str:
    path = tmp_path / "corridor.json"
    path.write_text(json.dumps(make_level(["B=Y..", "b...f", "F=V.."])))
    return str(path)


def test_solve_prints_the_json_result(capsys: pytest.CaptureFixture[str], level_file: str
                                      ) -> None:
    code, out, _ = run(capsys, "solve", level_file, "--strategy", "bfs", "--json")
    result = json.loads(out)
    assert code == 0
    assert {k: result[k] for k in ("status", "moves")} == {"status": "solved", "moves": "rrrr"}
    assert result["expanded"] > 0 and result["seconds"] >= 0


def test_solve_verbose_traces_and_profile_override(capsys: pytest.CaptureFixture[str],
                                                   level_file: str) -> None:
    code, out, err = run(capsys, "solve", level_file, "--profile", "keke", "-v")
    assert code == 0 and out.startswith("solved: rrrr (4 moves") and "fast model" in out
    assert "goal after" in err


def test_solve_a_keke_file_level(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(shared_path("baba-corpus", "keke", "full_biy_LEVELS.json"))
    code, out, _ = run(capsys, "solve", path, "--level", "12", "--json")
    result = json.loads(out)
    assert code == 0 and result["status"] == "solved"
    code, out, _ = run(capsys, "replay", path, "--level", "12", "--moves", result["moves"],
                       "--json")
    assert json.loads(out) == {"won": True, "won_at": len(result["moves"]), "lost": False,
                               "steps": len(result["moves"])}


def test_capped_solve_exits_1(capsys: pytest.CaptureFixture[str], level_file: str) -> None:
    code, out, _ = run(capsys, "solve", level_file, "--max-nodes", "1", "--json")
    assert code == 1 and json.loads(out)["status"] == "complexity_blocked"


def test_replay(capsys: pytest.CaptureFixture[str], level_file: str) -> None:
    code, out, _ = run(capsys, "replay", level_file, "--moves", "rrrrll", "--json")
    assert code == 0
    assert json.loads(out) == {"won": True, "won_at": 4, "lost": False, "steps": 4}
    code, out, _ = run(capsys, "replay", level_file, "--moves", "rr", "--json")
    assert code == 1
    assert json.loads(out) == {"won": False, "won_at": None, "lost": False, "steps": 2}


def test_share_and_unshare_a_pack(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "pack.json"
    path.write_text(json.dumps(sample_pack()))
    code, link, _ = run(capsys, "share", str(path))
    assert code == 0 and link.startswith("pd1.")
    code, out, _ = run(capsys, "unshare", link.strip())
    assert code == 0
    assert json.loads(out)["levels"][2]["mechanics"][0]["type"] == "frail_floor"
    packed = tmp_path / "again.json"
    packed.write_text(out)
    code, again, _ = run(capsys, "share", str(packed))
    assert again == link
    code, out, _ = run(capsys, "solve", str(packed), "--level", "one", "--json")
    assert code == 0 and json.loads(out)["status"] == "solved"


def test_share_refuses_a_keke_file_with_fields_it_would_drop(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A Keke file holds maps only: mechanic declarations (here one with a callback URL) are not
    silently dropped on the way to a link, the file is refused with their paths."""
    path = tmp_path / "keke.json"
    path.write_text(json.dumps({"mechanics": ["teleporter"], "levels": [
        {"ascii": "_____\n_b12_\n_..f_\n_____", "colour": "red", "mechanics": [
            {"id": "t", "type": "teleporter", "version": 9,
             "config": {"callback": "https://evil.example/x.js"}}]}]}))
    code, out, err = run(capsys, "share", str(path))
    assert code == 2 and out == ""
    assert err.splitlines()[1:] == [
        ("  mechanics: unknown field (a Keke level file has levels; mechanics are declared in "
         "our pack format, host supports: frail_floor@1, plate_gate@1)"),
        "  levels[0].colour: unknown field (a Keke level has ascii, author, id, name, solution)",
        ("  levels[0].mechanics: unknown field (a Keke level has ascii, author, id, name, "
         "solution; mechanics are declared in our pack format, host supports: frail_floor@1, "
         "plate_gate@1)")]


@pytest.mark.parametrize(("argv", "message"), [
    (["unshare", "pd9.abc"], "bad_prefix: a share link starts with 'pd1.'"),
    (["solve", "/nonexistent.json"], "/nonexistent.json: cannot read JSON"),
    (["solve", "{file}", "--level", "nope"], "no level 'nope' in pack"),
    (["solve", "{file}", "--profile", "modern"], "unknown profile 'modern'"),
    (["replay", "{file}", "--moves", "rx"], "--moves must be a string over u d l r s"),
    (["solve", "{bad}"], 'objects[0].noun: unknown noun "frog"'),
])
def test_bad_input_exits_2_with_a_message(capsys: pytest.CaptureFixture[str], level_file: str,
                                          tmp_path: Path, argv: list[str], message: str) -> None:
    bad = tmp_path / "bad.json"
    data = make_level(["B=Y.", "b..."])
    data["objects"][0]["noun"] = "frog"
    bad.write_text(json.dumps(data))
    code, out, err = run(capsys, *(a.format(file=level_file, bad=bad) for a in argv))
    assert code == 2 and out == "" and message in err
