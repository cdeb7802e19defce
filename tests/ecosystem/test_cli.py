"""`petridish ecosystem setup | validate-graph | run | replay`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.ecosystem.graph import default_rule_graph
from actors.ecosystem.keywords import deterministic_setup
from actors.ecosystem.setup import default_config
from server.cli import main

ANSWERS = {"world": "grass and deer", "threat": "wolves", "reward": "survive"}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["ecosystem", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_setup_prints_the_deterministic_config_and_graph(capsys) -> None:
    code, out, _ = run(capsys, "setup", "--answers", json.dumps(ANSWERS))
    result, expected = json.loads(out), deterministic_setup(ANSWERS)
    assert code == 0 and (result["status"], result["source"]) == ("fallback",
                                                                  "deterministic_fallback")
    assert (result["config"], result["graph"]) == (expected["config"], expected["graph"])
    assert result["failure"] is None and result["calls"] == 0


def test_setup_prints_the_schema_error(capsys) -> None:
    code, out, err = run(capsys, "setup", "--answers", json.dumps({**ANSWERS, "x": "1"}))
    assert (code, out, err) == (1, "", "Invalid setup answers: x is not an accepted key\n")


def test_validate_graph(capsys, tmp_path: Path) -> None:
    good = tmp_path / "graph.json"
    good.write_text(json.dumps(default_rule_graph()))
    code, out, _ = run(capsys, "validate-graph", str(good))
    assert code == 0 and json.loads(out) == default_rule_graph()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**default_rule_graph(), "surprise": True}))
    assert run(capsys, "validate-graph", str(bad)) == (
        1, "", "Invalid ecosystem rule graph (at surprise)\n")
    named = default_rule_graph()
    named["species"][0]["name"] = "x" * 41
    bad.write_text(json.dumps(named))
    assert run(capsys, "validate-graph", str(bad)) == (
        1, "", "Invalid ecosystem rule graph (at species[0].name)\n")
    config = tmp_path / "config.json"
    config.write_text(json.dumps(default_config()))
    code, _, err = run(capsys, "run", "--config", str(config), "--graph", str(bad), "--seed",
                       "1", "--generations", "1")
    assert (code, err) == (1, "Invalid ecosystem rule graph (at species[0].name)\n")
    order = default_rule_graph()
    order["species"].reverse()
    bad.write_text(json.dumps(order))
    code, _, err = run(capsys, "validate-graph", str(bad))
    assert code == 1 and err == ("Ecosystem species must be in canonical prefix order A, B; "
                                 "got B, A\n")


def test_run_prints_frames_and_a_record_that_replays(capsys, tmp_path: Path) -> None:
    decisions = tmp_path / "decisions.json"
    decisions.write_text(json.dumps([{"generation": 0, "graphVersion": 1, "change": {
        "generation": 2, "activation": "immediate", "duration": "short", "transition": "pulse",
        "patch": {"kind": "self", "species": "A", "value": "cooperative"}}}]))
    code, out, _ = run(capsys, "run", "--answers", json.dumps(ANSWERS), "--decisions",
                       str(decisions), "--seed", "4", "--generations", "12", "--size", "16",
                       "--json")
    assert code == 0
    result = json.loads(out)
    frames = result["generations"]
    assert [f["generation"] for f in frames] == list(range(13))
    assert set(frames[3]) >= {"generation", "biomass", "alive", "resource", "score", "digest"}
    assert set(frames[3]["biomass"]) == {"A", "B", "C"}
    assert frames[2]["events"][0]["outcome"] == "applied"
    assert result["record"]["answers"] == ANSWERS
    record = tmp_path / "record.json"
    record.write_text(json.dumps(result))  # the whole output replays, as does the record
    code, out, _ = run(capsys, "replay", str(record))
    assert code == 0 and json.loads(out) == {"ok": True, "digests": 13}
    tampered = result["record"]
    tampered["digests"][5] = "f" * 32
    record.write_text(json.dumps(tampered))
    code, _, err = run(capsys, "replay", str(record))
    assert code == 2 and err.startswith(f"digest differs at generation 5: expected {'f' * 32}")


def test_run_from_config_and_graph_files(capsys, tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(default_config()))
    graph = tmp_path / "graph.json"
    graph.write_text(json.dumps(default_rule_graph()))
    code, out, _ = run(capsys, "run", "--config", str(config), "--graph", str(graph),
                       "--seed", "1", "--generations", "3", "--size", "16")
    assert code == 0 and len(out.splitlines()) == 4
    bad = default_config()
    bad["fitness"]["adapt"] = 0.5
    config.write_text(json.dumps(bad))
    code, _, err = run(capsys, "run", "--config", str(config), "--seed", "1",
                       "--generations", "3")
    assert code == 1 and err == "Invalid life config: fitness weights must total 1 (within 1e-9)\n"
    code, _, err = run(capsys, "run", "--answers", json.dumps(ANSWERS), "--seed", "1",
                       "--generations", "181")
    assert code == 1 and err == "generations must be an integer within 0..180\n"
