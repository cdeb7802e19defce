"""Replay: recorded runs with patches and scheduled changes reproduce every digest."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter

import pytest

from actors.ecosystem.errors import EcosystemError
from actors.ecosystem.replay import replay
from actors.ecosystem.schedule import ACTIVATIONS, DURATIONS, TRANSITIONS
from tests.ecosystem.records import FIXTURE, build_records


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return json.loads(FIXTURE.read_text())


@pytest.fixture(scope="module")
def reports(records: list[dict]) -> list:
    return [replay(record) for record in records]


def test_twenty_recorded_runs_replay_bit_for_bit(records: list[dict], reports: list) -> None:
    assert len(records) == 20
    for record, report in zip(records, reports, strict=True):
        assert report.ok, (record["seed"], report.mismatch, report.expected, report.got)
        assert report.checked == record["generations"] + 1


def test_corpus_exercises_every_trigger_kind_and_outcome(records: list[dict],
                                                         reports: list) -> None:
    fired: Counter = Counter()
    outcomes: Counter = Counter()
    for record, report in zip(records, reports, strict=True):
        for event in report.events:
            outcomes[event["outcome"]] += 1
            if event["outcome"] == "applied":
                change = record["decisions"][event["decision"]]["change"]
                fired[change["activation"]] += 1
                fired[change["transition"]] += 1
                fired[change["duration"]] += 1
                fired[change["patch"]["kind"]] += 1
    for kind in (*ACTIVATIONS, *TRANSITIONS, *DURATIONS, "pair", "self", "environment"):
        assert fired[kind] > 0, kind
    for outcome in ("applied", "reverted", "stale_graph_version", "unchanged", "rejected",
                    "extinct"):
        assert outcomes[outcome] > 0, outcome
    assert {"answers" in r for r in records} == {True, False}


def test_fresh_records_replay() -> None:
    for record in build_records(seed_base=7000, count=3):
        assert replay(json.loads(json.dumps(record))).ok


def test_a_record_written_with_integral_floats_replays(records: list[dict]) -> None:
    """A JSON writer may write the integer 90 as 90.0; the record means the same run."""
    record = copy.deepcopy(records[1])
    for key in ("seed", "generations", "size"):
        record[key] = float(record[key])
    for decision in record["decisions"]:
        decision["generation"] = float(decision["generation"])
        decision["change"]["generation"] = float(decision["change"]["generation"])
    record["graph"]["version"] = 1.0
    assert replay(record).ok
    record["seed"] = 101.5
    with pytest.raises(EcosystemError, match="^Invalid run record: seed must be an integer$"):
        replay(record)


def test_a_changed_digest_or_decision_is_caught(records: list[dict]) -> None:
    record = copy.deepcopy(records[1])
    record["digests"][17] = "0" * 32
    report = replay(record)
    assert (report.ok, report.mismatch, report.expected) == (False, 17, "0" * 32)
    record = copy.deepcopy(records[3])
    applied = next(e for e in replay(record).events if e["outcome"] == "applied")
    record["decisions"][applied["decision"]]["change"]["transition"] = "pulse" if (
        record["decisions"][applied["decision"]]["change"]["transition"] != "pulse") else "ramp"
    report = replay(record)
    assert not report.ok and report.mismatch >= applied["generation"]


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda r: r.pop("seed"), "Invalid run record: seed is required"),
    (lambda r: r.update(format="other"), "Invalid run record: format must be lifepot-run/1"),
    (lambda r: r.update(digests=r["digests"][:-1]),
     "Invalid run record: digests must hold 91..91 items"),
    (lambda r: r.update(config={}), ("Invalid run record:  must hold exactly one of answers "
                                    "and config")),
    (lambda r: r.update(extra=1), "Invalid run record: extra is not an accepted key"),
])
def test_malformed_records_are_refused(records: list[dict], mutate, message: str) -> None:
    record = copy.deepcopy(records[0])
    mutate(record)
    with pytest.raises(EcosystemError, match=f"^{re.escape(message)}$") as err:
        replay(record)
    assert err.value.code == "invalid_record"


def test_record_with_a_bad_decision_is_refused(records: list[dict]) -> None:
    record = copy.deepcopy(records[0])
    record["decisions"][0]["change"]["activation"] = "someday"
    with pytest.raises(EcosystemError, match=r"^Invalid scheduled change: decisions\[0\]"
                       r"\.change\.activation must be one of immediate, "):
        replay(record)
