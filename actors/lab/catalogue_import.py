"""A SQLite catalogue written before the lab's event stream (`actors/lab/store.py`, up to
commit d27f0b3, schema versions 1 and 2), read once and turned into the events the live
lab would have stored. I/O: this module opens the SQLite file (read-only).

Order: `created`, then the directives, births, rejections and votes merged by their
times (a vote carries the ratings that replaying the catalogue's vote log produces),
then `proven` for every `render_ok` and `killed` for every dead organism (the catalogue
kept no time for those). `import_events` folds the result and refuses (ImportMismatch)
unless the fold reproduces every organism and directive of the catalogue: status,
render_ok, error, ratings, judged counts and lineage. Benching is not imported: it lives
in memory with the strikes, as the seed says (the count is reported).
"""

from __future__ import annotations

import contextlib
import json
import math
import sqlite3
from pathlib import Path

import attrs

from actors.lab.births import rejection
from actors.lab.directives import Directive
from actors.lab.events import (
    Born,
    Created,
    DirectiveAdded,
    Event,
    Killed,
    Proven,
    VoteCast,
)
from actors.lab.ratings import Rating, update
from actors.lab.state import Lab, evolve, initial


class ImportMismatch(ValueError):
    """The fold of the imported events does not reproduce the catalogue."""


@attrs.frozen
class Imported:
    """The events to store, the state they fold to, and the benched rows not imported."""

    events: list[Event]
    state: Lab
    benched: int


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _rows(db: sqlite3.Connection, sql: str) -> list[sqlite3.Row]:
    return list(db.execute(sql))


def import_events(path: str | Path, name: str = "main", seed: int | None = None) -> Imported:
    """The events of the catalogue at `path` for lab `name`, checked against it."""
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
        db.row_factory = sqlite3.Row
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version not in (1, 2):
            raise ImportMismatch(f"not a lab catalogue of schema version 1 or 2: {version}")
        directives = _rows(db, "SELECT * FROM directives ORDER BY born_at, id")
        organisms = _rows(db, "SELECT * FROM organisms ORDER BY born_at, id")
        births = {r["organism_id"]: r["source"]
                  for r in _rows(db, "SELECT * FROM births ORDER BY id DESC")}
        rejections = _rows(db, "SELECT * FROM rejections ORDER BY id")
        votes = _rows(db, "SELECT * FROM votes ORDER BY id")
    state = initial(name)
    timed: list[tuple[int, int, int, Event]] = []  # (t, kind order, row order, event)
    for i, r in enumerate(directives):
        d = Directive(r["id"], r["track"], r["text"], tuple(json.loads(r["parents"])),
                      r["origin"])
        timed.append((_ms(r["born_at"]), 0, i, DirectiveAdded(d, _ms(r["born_at"]))))
    for i, r in enumerate(organisms):
        timed.append((_ms(r["born_at"]), 1, i, Born(
            r["id"], r["track"], r["code"], r["title"], tuple(json.loads(r["parents"])),
            r["directive_id"], births.get(r["id"], "import"), "", None, r["prompt"],
            _ms(r["born_at"]))))
    for i, r in enumerate(rejections):
        timed.append((_ms(r["at"]), 2, i, rejection(r["track"], r["code"], r["reason"],
                                                    r["source"], "", (), _ms(r["at"]))))
    for i, r in enumerate(votes):
        timed.append((_ms(r["at"]), 3, i, r))  # rated below, in order
    events: list[Event] = [Created(state.seed if seed is None else seed)]
    state = evolve(state, events[0])
    for _, _, i, item in sorted(timed, key=lambda x: x[:3]):
        event = _vote(state, item, i) if isinstance(item, sqlite3.Row) else item
        state = evolve(state, event)
        events.append(event)
    end = max([x[0] for x in timed] or [0])
    for r in organisms:
        for event in ([Proven(r["id"], "owner", "", end)] if r["render_ok"] else []) + (
                [Killed(r["id"], r["error"] or "dead (imported without an error)", end)]
                if r["status"] == "dead" else []):
            state = evolve(state, event)
            events.append(event)
    _check(state, organisms, directives)
    return Imported(events, state, sum(1 for r in organisms if r["benched"]))


def _vote(state: Lab, r: sqlite3.Row, i: int) -> VoteCast:
    w, lo = state.organisms[r["winner"]], state.organisms[r["loser"]]
    rw, rl = update(w.rating, lo.rating)
    rated: tuple = ()
    if (w.directive in state.directives and lo.directive in state.directives
            and w.directive != lo.directive):
        dw, dl = update(state.directives[w.directive].rating,
                        state.directives[lo.directive].rating)
        rated = ((w.directive, dw), (lo.directive, dl))
    return VoteCast(f"import-{i}", w.id, lo.id, r["surface"], r["client"], _ms(r["at"]), rw, rl,
                    rated)


def _same(a: Rating, mu: float, sigma: float) -> bool:
    return math.isclose(a.mu, mu, abs_tol=1e-9) and math.isclose(a.sigma, sigma, abs_tol=1e-9)


def _check(state: Lab, organisms: list[sqlite3.Row], directives: list[sqlite3.Row]) -> None:
    wrong = []
    for r in organisms:
        o = state.organisms[r["id"]]
        if ((o.status, o.render_ok, o.error, o.judged, o.parents, o.title) != (
                r["status"], bool(r["render_ok"]), r["error"] if r["status"] == "dead" else None,
                r["judged"], tuple(json.loads(r["parents"])), r["title"])
                or not _same(o.rating, r["mu"], r["sigma"])):
            wrong.append(r["id"])
    for r in directives:
        if not _same(state.directives[r["id"]].rating, r["mu"], r["sigma"]):
            wrong.append(r["id"])
    if wrong:
        raise ImportMismatch("the imported events do not reproduce the catalogue for "
                             + ", ".join(wrong[:10]))
