"""The adversarial corpus in tests/lab/corpus: every case gets exactly its expected result."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from actors.lab.validate_shader import glslang_path
from actors.lab.validation import validate

CORPUS = Path(__file__).parent / "corpus"
CASES = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))["cases"]


def test_corpus_size_and_mix() -> None:
    counts = Counter((c["track"], c["expect"] is None) for c in CASES)
    for track in ("shader", "panel"):
        assert counts[track, True] + counts[track, False] >= 40
        assert counts[track, True] >= 10 and counts[track, False] >= 25
    assert all(c["why"].strip() for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_corpus_case(case: dict) -> None:
    if case.get("needs_glslang") and glslang_path() is None:
        pytest.skip("reason comes from glslangValidator, which is not installed")
    code = (CORPUS / case["file"]).read_text(encoding="utf-8")
    assert validate(case["track"], code) == case["expect"], case["why"]
