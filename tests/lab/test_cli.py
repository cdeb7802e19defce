"""`petridish lab validate` and `petridish lab breed`."""

from __future__ import annotations

import json
from pathlib import Path

from actors.lab.validation import validate
from server.cli import main

CORPUS = Path(__file__).parent / "corpus"


def test_validate_ok_exits_zero(capsys) -> None:
    assert (
        main(["lab", "validate", "--track", "shader", str(CORPUS / "shader" / "ok_gradient.frag")])
        == 0
    )
    assert capsys.readouterr().out == "ok\n"


def test_validate_prints_the_reason_and_exits_one(capsys) -> None:
    assert (
        main(["lab", "validate", "--track", "panel", str(CORPUS / "panel" / "css_url.html")]) == 1
    )
    assert capsys.readouterr().out == "css url()\n"


def test_validate_unreadable_file(tmp_path, capsys) -> None:
    assert main(["lab", "validate", "--track", "panel", str(tmp_path / "missing.html")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_breed_writes_valid_organisms_and_a_manifest(tmp_path, capsys) -> None:
    out = tmp_path / "pool"
    assert (
        main(["lab", "breed", "--track", "panel", "--seed", "4", "--count", "3", "--out", str(out)])
        == 0
    )
    files = sorted(out.glob("*.html"))
    assert len(files) == 3
    assert all(validate("panel", f.read_text()) is None for f in files)
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(f"{m['id']}.html" for m in manifest) == [f.name for f in files]
    assert "wrote 3 panel organisms" in capsys.readouterr().out
    again = tmp_path / "again"
    main(["lab", "breed", "--track", "panel", "--seed", "4", "--count", "3", "--out", str(again)])
    assert [f.read_text() for f in sorted(again.glob("*.html"))] == [f.read_text() for f in files]


def test_breed_shader_files(tmp_path) -> None:
    assert (
        main(
            [
                "lab",
                "breed",
                "--track",
                "shader",
                "--seed",
                "1",
                "--count",
                "2",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    assert len(list(tmp_path.glob("*.frag"))) == 2
