"""`bench load` for a moment, at tiny sizes: both scenarios run against their servers (their
data where `--data` says) and every figure the goals are judged by is there, with the round
trips it counts. No speed is asserted, nor whether a goal is met. Counts it cannot measure
are refused as arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import load


def test_both_scenarios_report_their_figures_and_goals(tmp_path: Path) -> None:
    # Before: its servers' data went into the repository (a killed run left it there), and
    # 21 round trips in 2 blocks measured 20 but said 21.
    result = load.main(["--idle", "20", "--half-open", "2", "--samples", "10",
                        "--hostile-samples", "21", "--blocks", "2", "--data", str(tmp_path)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hostile", "idle"]
    idle = result["idle_and_half_open"]
    assert (idle["idle"], idle["half_open"], idle["samples"]) == (20, 2, 10)
    assert (idle["idle_held"], idle["refused"]) == (20, 0)
    assert idle["half_open_closed_by_server"] >= 2
    hostile = result["hostile_reader"]
    assert (hostile["samples"], hostile["blocks"], hostile["refused"]) == (20, 2, 0)
    assert hostile["reader"]["answered"] > 0
    for spread in (idle["quiet"], idle["loaded"], hostile["quiet"], hostile["hostile"]):
        assert set(spread) == {"p50_ms", "p90_ms", "p99_ms"}
        assert all(value > 0 for value in spread.values())
    assert hostile["p99_ratio"] > 0
    goals = result["goals"]
    assert set(goals) == {"loaded_p99_under_50_ms", "hostile_p99_at_most_2x"}
    assert goals["loaded_p99_under_50_ms"]["p99_ms"] == idle["loaded"]["p99_ms"]
    assert goals["hostile_p99_at_most_2x"]["ratio"] == hostile["p99_ratio"]
    assert all(isinstance(goal["met"], bool) for goal in goals.values())
    assert len(result["load_average_before"]) == len(result["load_average_after"]) == 3


@pytest.mark.parametrize(("argv", "error"), [
    (["--hostile-samples", "3", "--blocks", "4"],
     "--hostile-samples 3 is fewer than --blocks 4: each block needs a round trip"),
    (["--samples", "0"], "argument --samples: 0 is less than 1"),
    (["--blocks", "0"], "argument --blocks: 0 is less than 1"),
    (["--idle", "-1"], "argument --idle: -1 is less than 0"),
], ids=["fewer-samples-than-blocks", "no-samples", "no-blocks", "negative"])
def test_counts_it_cannot_measure_are_refused(argv: list[str], error: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    # Before: fewer hostile samples than blocks measured nothing and failed in the
    # percentile (IndexError), after starting a server.
    with pytest.raises(SystemExit) as exited:
        load.parse(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"python -m bench load: error: {error}"


def test_a_data_directory_with_a_run_in_it_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Before: a second run into the same --data found the first run's field and failed
    # at its `field.start` (already exists), after starting a server.
    (tmp_path / "idle").mkdir()
    with pytest.raises(SystemExit):
        load.parse(["--data", str(tmp_path)])
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"python -m bench load: error: --data {tmp_path} is not empty: a run starts its "
        "worlds afresh")
    assert load.parse(["--data", str(tmp_path / "new")]).data == tmp_path / "new"


def test_a_data_path_that_is_a_file_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Before: NotADirectoryError from listing it, not a parser error.
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit):
        load.parse(["--data", str(tmp_path / "file")])
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"python -m bench load: error: --data {tmp_path / 'file'} is not a directory")
