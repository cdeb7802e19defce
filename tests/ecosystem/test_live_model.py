"""Opt-in: the setup through a real OpenAI-compatible endpoint.

Setting `PETRIDISH_MODEL_URL` and `PETRIDISH_MODEL` (and the key in `PETRIDISH_MODEL_KEY`,
or a file named by `PETRIDISH_MODEL_KEY_FILE`) is the opt-in: without both the test is
skipped, with both any pytest run that collects this file runs it (`-m live_model` runs it
alone). It makes real (possibly paid) requests, so `make test` deselects its `live_model`
marker whatever the environment holds. It checks the contract, not the model's taste:
ordinary answers end accepted, blocked or in the labelled fallback within thirteen calls,
and no key reaches the output.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from actors.ecosystem.graph import validate_rule_graph
from actors.ecosystem.interpret import MAX_CALLS, review_focuses
from actors.ecosystem.model_options import KEY_ENV
from actors.ecosystem.setup import validate_config
from server.cli import main

URL, MODEL = os.environ.get("PETRIDISH_MODEL_URL"), os.environ.get("PETRIDISH_MODEL")
KEY_FILE = os.environ.get("PETRIDISH_MODEL_KEY_FILE")
ANSWERS = {"world": "A quiet pond where algae bloom and snails graze",
           "threat": "A hungry pike stalks the snails at dusk",
           "reward": "Keep all three species alive"}

pytestmark = [
    pytest.mark.live_model,
    pytest.mark.skipif(not (URL and MODEL), reason="set PETRIDISH_MODEL_URL and "
                       "PETRIDISH_MODEL to call a real endpoint"),
]


def test_ordinary_answers_through_a_real_endpoint(capsys) -> None:
    options = ["--model-url", URL or "", "--model", MODEL or "", "--model-timeout", "120"]
    if KEY_FILE:
        options += ["--model-key-file", KEY_FILE]
    code = main(["ecosystem", "setup", "--answers", json.dumps(ANSWERS), *options])
    out, err = capsys.readouterr()
    result = json.loads(out)
    key = os.environ.get(KEY_ENV)
    if KEY_FILE:
        key = Path(KEY_FILE).read_text().strip()
    assert not key or (key not in out and key not in err)
    assert 1 <= result["calls"] <= MAX_CALLS
    if result["status"] == "accepted":
        assert code == 0 and result["source"] == "model"
        assert validate_config(result["config"])["rules"] == validate_rule_graph(result["graph"])
        names = [o["name"] for o in result["named_intent"]["organisms"]]
        assert [s["name"] for s in result["graph"]["species"]] == names
    elif result["status"] == "blocked":
        assert code == 3 and result["config"] is None
        assert result["review_focus"] in review_focuses(
            {"species": [{"id": o["slot"]} for o in result["named_intent"]["organisms"]]})
    else:
        assert code == 0 and result["source"] == "deterministic_fallback"
        assert result["failure"]["stage"] and result["failure"]["code"]
