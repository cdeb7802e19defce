"""A run's export: its stored events as JSON lines, and the replay record they make.

An export is one JSON object per line, the run's stored events in stream order (the
`events.encode` form): the `setup` event first, then `generation` frames 0..G with the
`patch`, `schedule`, `control` and `end` events between them. `record_of_export` turns it
into a `lifepot-run/1` record (the config and starting graph, seed, size, the simulation's
model version, the decisions in acceptance order and every frame's digest), which
`replay.replay` re-runs with no language model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from actors.ecosystem.errors import EcosystemError
from actors.ecosystem.events import Event, Generated, Patched, Scheduled, SetUp, decode, encode
from actors.ecosystem.run import RECORD_FORMAT

MAX_LINES = 5000  # 181 frames, the decisions and controls of a run fit well within


def _refuse(line: int, why: str) -> EcosystemError:
    return EcosystemError("invalid_record", f"Invalid run export: line {line} {why}",
                          f"line {line}")


def lines_of(records: Iterable[dict[str, Any]]) -> str:
    """The export of a run's stored records: one compact JSON object per line."""
    return "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)


def export_lines(events: Sequence[Event]) -> str:
    """The export of a run's events (their stored JSON, one per line)."""
    return lines_of(encode(e) for e in events)


def parse_export(text: str) -> list[Event]:
    """The events of an export (strict: every nonblank line one event, setup first)."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if len(lines) > MAX_LINES:
        raise _refuse(MAX_LINES + 1, f"exceeds {MAX_LINES} lines")
    events: list[Event] = []
    for n, line in lines:
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise TypeError
            events.append(decode(data))
        except (ValueError, KeyError, TypeError):
            raise _refuse(n, "is not a stored run event") from None
    if not events or not isinstance(events[0], SetUp):
        raise _refuse(lines[0][0] if lines else 1, "must be the setup event")
    return events


def record_of_export(events: Iterable[Event]) -> dict[str, Any]:
    """The replay record of a run's events (its generations so far)."""
    events = list(events)
    setup = events[0]
    assert isinstance(setup, SetUp)
    decisions = [e.decision for e in events if isinstance(e, Patched | Scheduled)]
    frames = [e.frame for e in events if isinstance(e, Generated)]
    for k, frame in enumerate(frames):
        if not isinstance(frame, dict) or frame.get("generation") != k:
            raise EcosystemError("invalid_record",
                                 f"Invalid run export: frame {k} is missing or out of order",
                                 f"frames[{k}]")
    return {"format": RECORD_FORMAT, "config": setup.config, "graph": setup.graph,
            "seed": setup.seed, "generations": len(frames) - 1, "size": setup.size,
            "model": setup.model, "decisions": decisions,
            "digests": [f.get("digest") for f in frames]}


def is_export(text: str) -> bool:
    """Whether a file's text looks like an export: JSON lines (a first line that is a JSON
    object and more lines after it), or a setup event alone. A record is one JSON value."""
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        first = json.loads(lines[0]) if lines else None
    except ValueError:
        return False
    return isinstance(first, dict) and (first.get("type") == "setup" or len(lines) > 1)
