"""Replay: re-run a run record and compare every per-generation digest, bit for bit.

A record holds the answers (deterministic setup) or the accepted config, the starting
graph, seed, generation count, grid size, the model version (`model`; a record without
one was made before versions, by model 1), the accepted decisions with their generation
and graph version, and the digests. Replay never calls a model (a language model: the
simulation model is the record's version).
"""

from __future__ import annotations

from typing import Any

import attrs

from actors.ecosystem.engine import MAX_SEED, MAX_SIZE, MIN_SIZE
from actors.ecosystem.errors import EcosystemError, Shape
from actors.ecosystem.keywords import deterministic_setup
from actors.ecosystem.rates import LEGACY_MODEL, MODEL
from actors.ecosystem.run import RECORD_FORMAT, simulate
from actors.ecosystem.schedule import MAX_DECISIONS, MAX_GENERATION

_shape = Shape(lambda path, why: EcosystemError(
    "invalid_record", f"Invalid run record: {path} {why}", path))
_KEYS = ("format", "graph", "seed", "generations", "size", "decisions", "digests")


@attrs.frozen
class ReplayReport:
    """Outcome of a replay: digests checked, the run's decision and extinction events, and
    the first differing generation (if any) with both digests."""

    checked: int
    events: tuple[dict[str, Any], ...] = ()
    mismatch: int | None = None
    expected: str | None = None
    got: str | None = None

    @property
    def ok(self) -> bool:
        """True when every digest matched."""
        return self.mismatch is None


def validate_record(value: Any) -> dict[str, Any]:
    """Check a record's shape (the config and graph are validated when it runs); returns
    it with its integers as ints (a JSON 90.0 is 90) and its model version."""
    if isinstance(value, dict) and ("answers" in value) == ("config" in value):
        raise _shape.fail("", "must hold exactly one of answers and config")
    source = "answers" if isinstance(value, dict) and "answers" in value else "config"
    _shape.obj(value, "", _KEYS + (source,), ("model",))
    if value["format"] != RECORD_FORMAT:
        raise _shape.fail("format", f"must be {RECORD_FORMAT}")
    ints = {"seed": _shape.integer(value["seed"], "seed", 0, MAX_SEED),
            "generations": _shape.integer(value["generations"], "generations", 0,
                                          MAX_GENERATION),
            "size": _shape.integer(value["size"], "size", MIN_SIZE, MAX_SIZE),
            "model": _shape.integer(value.get("model", LEGACY_MODEL), "model", LEGACY_MODEL,
                                    MODEL)}
    generations = ints["generations"]
    _shape.array(value["decisions"], "decisions", 0, MAX_DECISIONS)
    digests = _shape.array(value["digests"], "digests", generations + 1, generations + 1)
    for k, digest in enumerate(digests):
        if not isinstance(digest, str):
            raise _shape.fail(f"digests[{k}]", "must be a string")
    return {**value, **ints}


def replay(record: Any) -> ReplayReport:
    """Re-run the record; report the first generation whose digest differs."""
    record = validate_record(record)
    config = (deterministic_setup(record["answers"])["config"] if "answers" in record
              else record["config"])
    result = simulate(config, record["seed"], record["generations"], graph=record["graph"],
                      decisions=record["decisions"], size=record["size"],
                      model=record["model"])
    events = tuple(e for frame in result["generations"] for e in frame["events"])
    for frame, expected in zip(result["generations"], record["digests"], strict=True):
        if frame["digest"] != expected:
            return ReplayReport(len(record["digests"]), events, frame["generation"], expected,
                                frame["digest"])
    return ReplayReport(len(record["digests"]), events)
