"""`petridish field propagate | count | generate` from the command line parser."""

from __future__ import annotations

import json

import pytest

from server.cli import main
from tests.conftest import shared_path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["field", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_propagate_prints_the_corpus_closure(capsys):
    puzzles = shared_path("takuzu-corpus", "tatham-unruly-unique.txt").read_text().splitlines()
    closed = shared_path("takuzu-corpus", "tatham-unruly-unique.depth0.txt").read_text()
    w, h, _, puzzle, _ = puzzles[1 + 400].split()  # an Easy one that depth 0 may not close
    expected = closed.splitlines()[1 + 400].split()
    code, out, _ = run(capsys, "propagate", w, h, puzzle)
    assert code == 0 and out == expected[3] + "\n"
    code, out, _ = run(capsys, "propagate", w, h, puzzle, "-v")
    lines = out.splitlines()
    assert code == 0 and lines[-1] == expected[3]
    assert len(lines) - 1 == int(expected[2])
    assert all(" = " in ln and " by " in ln for ln in lines[:-1])


def test_propagate_depth_one_goes_further(capsys):
    puzzles = shared_path("takuzu-corpus", "tatham-unruly-unique.txt").read_text().splitlines()
    w, h, _, puzzle, solution = next(ln.split() for ln in puzzles[1:] if " Normal " in ln)
    code, out, _ = run(capsys, "propagate", w, h, puzzle, "--depth", "1")
    assert code == 0 and out.strip() == solution


def test_count(capsys):
    assert run(capsys, "count", "4", "4", "." * 16) == (0, "72\n", "")
    assert run(capsys, "count", "6", "6", "." * 36, "--cap", "100") == (0, "100\n", "")


@pytest.mark.parametrize(("argv", "code", "message"), [
    (("count", "4", "4", "..."), 2, "error: CELLS has 3 characters, W x H is 16\n"),
    (("count", "4", "4", "x" * 16), 2, "error: CELLS may hold only '.', '0' and '1', not ['x']\n"),
    (("count", "5", "4", "." * 20), 2,
     "error: not a playable tile: a horizontal line of odd length 5\n"),
    (("propagate", "4", "4", "000" + "." * 13), 1,
     "error: these cells break the rules or admit no solution\n"),
    (("count", "4", "4", "." * 16, "--cap", "0"), 2, "error: --cap must be >= 1\n"),
])
def test_bad_input_is_refused(capsys, argv, code, message):
    got, out, err = run(capsys, *argv)
    assert (got, out, err) == (code, "", message)


def test_generate_writes_the_same_file_twice(capsys, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path in (a, b):
        code, _, err = run(capsys, "generate", "--layout", "scatter", "--size", "24",
                           "--seed", "11", "--out", str(path))
        assert code == 0 and "tiles on a 24 canvas" in err
    assert a.read_bytes() == b.read_bytes()
    data = json.loads(a.read_text())
    assert set(data) == {"manifest", "solution", "givens"}
    assert data["manifest"]["G"] == 24 and len(data["solution"]) == 24
    assert len(data["givens"]) == len(data["manifest"]["tiles"]) > 0
    code, _, err = run(capsys, "generate", "--size", "4", "--seed", "1", "--out", str(a))
    assert code == 2 and err == "error: --size must be in 8..1000, not 4\n"


def test_generate_chunks_starts_in_the_middle(capsys, tmp_path):
    path = tmp_path / "c.json"
    code, _, _ = run(capsys, "generate", "--layout", "chunks", "--size", "72", "--seed", "3",
                     "--chunks", "1", "--chunk", "24", "--out", str(path))
    assert code == 0
    manifest = json.loads(path.read_text())["manifest"]
    assert manifest["chunks"] == [[1, 1]] and manifest["layout"] == "chunks"
    assert all(24 <= t["y0"] < 48 for t in manifest["tiles"])
    code, _, err = run(capsys, "generate", "--layout", "chunks", "--size", "72", "--seed", "3",
                       "--chunks", "4", "--chunk", "24", "--out", str(path))
    assert code == 2 and err == "error: 4 x 4 chunks of 24 do not fit a 72 canvas\n"
