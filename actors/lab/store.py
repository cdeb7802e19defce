"""The catalogue: SQLite tables for organisms, directives, rejections, raw votes and births.

Migrations are numbered and recorded in `PRAGMA user_version`; each runs in its own
transaction. Every write method is one transaction: a failure leaves nothing behind.
A candidate is validated before it may be inserted; a failed candidate is logged as a
rejection and never becomes an organism. Times are parameters (seconds), never read here.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs

from actors.lab.directives import Directive
from actors.lab.organism import Organism, organism_id
from actors.lab.ratings import Rating, bradley_terry, update
from actors.lab.validation import validate

MIGRATIONS: tuple[str, ...] = (
    # 1: the catalogue
    """
    CREATE TABLE directives (
        id TEXT PRIMARY KEY,
        track TEXT NOT NULL CHECK (track IN ('shader', 'panel')),
        text TEXT NOT NULL,
        parents TEXT NOT NULL DEFAULT '[]',
        origin TEXT NOT NULL,
        born_at REAL NOT NULL,
        mu REAL NOT NULL,
        sigma REAL NOT NULL
    );
    CREATE TABLE organisms (
        id TEXT PRIMARY KEY,
        track TEXT NOT NULL CHECK (track IN ('shader', 'panel')),
        code TEXT NOT NULL,
        title TEXT,
        parents TEXT NOT NULL DEFAULT '[]',
        prompt TEXT,
        directive_id TEXT REFERENCES directives(id),
        born_at REAL NOT NULL,
        status TEXT NOT NULL DEFAULT 'alive' CHECK (status IN ('alive', 'dead')),
        render_ok INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        mu REAL NOT NULL,
        sigma REAL NOT NULL,
        judged INTEGER NOT NULL DEFAULT 0,
        benched INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE rejections (
        id INTEGER PRIMARY KEY,
        track TEXT NOT NULL,
        code TEXT NOT NULL,
        reason TEXT NOT NULL,
        source TEXT NOT NULL,
        at REAL NOT NULL
    );
    CREATE TABLE votes (
        id INTEGER PRIMARY KEY,
        winner TEXT NOT NULL REFERENCES organisms(id),
        loser TEXT NOT NULL REFERENCES organisms(id),
        client TEXT NOT NULL,
        surface TEXT NOT NULL,
        at REAL NOT NULL
    );
    CREATE TABLE births (
        id INTEGER PRIMARY KEY,
        organism_id TEXT NOT NULL REFERENCES organisms(id),
        source TEXT NOT NULL,
        at REAL NOT NULL
    );
    """,
    # 2: the indexes the dealing queries and the refit read through
    """
    CREATE INDEX organisms_by_track ON organisms (track, status, render_ok);
    CREATE INDEX votes_by_time ON votes (at);
    """,
)


class CatalogueError(ValueError):
    """A write the catalogue refused; nothing was changed."""


@attrs.frozen
class BirthOutcome:
    """The result of offering a candidate: the new organism's id, or the rejection reason."""

    organism_id: str | None
    reason: str | None


class Catalogue:
    """One SQLite catalogue file (or `:memory:`).

    `validator` is the admission check applied by `offer`; it defaults to `validate`
    (tests that do not exercise the compile step may pass `static_reason`).
    """

    def __init__(self, path: str | Path, validator: Callable[[str, str], str | None] = validate):
        self._db = sqlite3.connect(str(path), isolation_level=None)
        self._db.execute("PRAGMA foreign_keys = ON")
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = FULL")
        self._validate = validator
        self.migrate()

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    @property
    def version(self) -> int:
        """The schema version (number of migrations applied)."""
        return self._db.execute("PRAGMA user_version").fetchone()[0]

    def migrate(self, target: int = len(MIGRATIONS)) -> int:
        """Apply pending migrations up to `target`, each in its own transaction."""
        for number in range(self.version + 1, target + 1):
            with self._tx() as db:
                for statement in MIGRATIONS[number - 1].split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version = {number}")
        return self.version

    # --- organisms -----------------------------------------------------------------------

    def offer(
        self,
        track: str,
        code: str,
        *,
        source: str,
        now: float,
        title: str | None = None,
        parents: tuple[str, ...] = (),
        prompt: str | None = None,
        directive_id: str | None = None,
    ) -> BirthOutcome:
        """Validate a candidate and either insert it (with its birth) or log its rejection."""
        reason = self._validate(track, code)
        oid = organism_id(track, code)
        if (
            directive_id is not None
            and not self._db.execute(
                "SELECT 1 FROM directives WHERE id = ?", (directive_id,)
            ).fetchone()
        ):
            raise CatalogueError(f"unknown directive {directive_id!r}")
        with self._tx() as db:
            if (
                reason is None
                and db.execute("SELECT 1 FROM organisms WHERE id = ?", (oid,)).fetchone()
            ):
                reason = f"duplicate of {oid}"
            if reason is not None:
                db.execute(
                    "INSERT INTO rejections (track, code, reason, source, at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (track, code, reason, source, now),
                )
                return BirthOutcome(None, reason)
            r = Rating()
            db.execute(
                "INSERT INTO organisms (id, track, code, title, parents, prompt, directive_id, "
                "born_at, mu, sigma) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    oid,
                    track,
                    code,
                    title,
                    json.dumps(list(parents)),
                    prompt,
                    directive_id,
                    now,
                    r.mu,
                    r.sigma,
                ),
            )
            db.execute(
                "INSERT INTO births (organism_id, source, at) VALUES (?, ?, ?)", (oid, source, now)
            )
        return BirthOutcome(oid, None)

    def organism(self, oid: str) -> Organism:
        """One organism; raises CatalogueError when the id is unknown."""
        return self._require(self._db, oid)

    def organisms(self, track: str | None = None) -> list[Organism]:
        """All organisms (of one track), oldest first."""
        sql = f"SELECT {_ORGANISM_COLUMNS} FROM organisms"
        rows = (
            self._db.execute(sql + " WHERE track = ? ORDER BY born_at, id", (track,))
            if track
            else self._db.execute(sql + " ORDER BY born_at, id")
        )
        return [_organism(r) for r in rows]

    def mark_ok(self, oid: str) -> bool:
        """Set render_ok on a live organism; False (and no change) when proven or not live."""
        with self._tx() as db:
            self._require(db, oid)
            cur = db.execute(
                "UPDATE organisms SET render_ok = 1 WHERE id = ? AND render_ok = 0 "
                "AND status = 'alive' AND error IS NULL",
                (oid,),
            )
        return cur.rowcount == 1

    def mark_invalid(self, oid: str, error: str) -> None:
        """The owner's compile gate failed: the organism dies and keeps the error."""
        with self._tx() as db:
            self._require(db, oid)
            db.execute("UPDATE organisms SET status = 'dead', error = ? WHERE id = ?", (error, oid))

    def bench(self, oid: str) -> None:
        """Stop dealing an organism as a canary (it stays alive)."""
        with self._tx() as db:
            self._require(db, oid)
            db.execute("UPDATE organisms SET benched = 1 WHERE id = ?", (oid,))

    # --- votes and ratings -----------------------------------------------------------------

    def record_vote(
        self, winner: str, loser: str, *, client: str, surface: str, now: float
    ) -> tuple[Rating, Rating]:
        """Log one raw vote and move both live ratings and judged counts, atomically."""
        if winner == loser:
            raise CatalogueError("a vote needs two different organisms")
        with self._tx() as db:
            w, lo = self._require(db, winner), self._require(db, loser)
            if w.track != lo.track:
                raise CatalogueError("a vote compares two organisms of one track")
            db.execute(
                "INSERT INTO votes (winner, loser, client, surface, at) VALUES (?, ?, ?, ?, ?)",
                (winner, loser, client, surface, now),
            )
            rw, rl = update(w.rating, lo.rating)
            for oid, r in ((winner, rw), (loser, rl)):
                db.execute(
                    "UPDATE organisms SET mu = ?, sigma = ?, judged = judged + 1 WHERE id = ?",
                    (r.mu, r.sigma, oid),
                )
            self._rate_directives(db, winner, loser)
        return rw, rl

    def _rate_directives(self, db: sqlite3.Connection, winner: str, loser: str) -> None:
        """A vote between organisms born of two different directives also rates the directives."""
        ids = [
            db.execute("SELECT directive_id FROM organisms WHERE id = ?", (o,)).fetchone()[0]
            for o in (winner, loser)
        ]
        if None in ids or ids[0] == ids[1]:
            return
        dw, dl = (self._directive_rating(db, d) for d in ids)
        for did, r in zip(ids, update(dw, dl), strict=True):
            db.execute("UPDATE directives SET mu = ?, sigma = ? WHERE id = ?", (r.mu, r.sigma, did))

    @staticmethod
    def _directive_rating(db: sqlite3.Connection, did: str) -> Rating:
        mu, sigma = db.execute("SELECT mu, sigma FROM directives WHERE id = ?", (did,)).fetchone()
        return Rating(mu, sigma)

    def votes(self) -> list[tuple[str, str]]:
        """The raw vote log as (winner, loser), in arrival order."""
        return list(self._db.execute("SELECT winner, loser FROM votes ORDER BY id"))

    def refit(self) -> dict[str, float]:
        """Bradley-Terry strengths refitted from the raw vote log (the source of truth)."""
        return bradley_terry(self.votes())

    def rejections(self) -> list[tuple[str, str, str]]:
        """Every logged rejection as (track, reason, source), oldest first."""
        return list(self._db.execute("SELECT track, reason, source FROM rejections ORDER BY id"))

    def births(self) -> list[tuple[str, str, float]]:
        """Every birth as (organism id, source, time), oldest first."""
        return list(self._db.execute("SELECT organism_id, source, at FROM births ORDER BY id"))

    # --- directives ------------------------------------------------------------------------

    def add_directive(self, d: Directive, now: float) -> None:
        """Insert a directive; raises CatalogueError when its id exists already."""
        try:
            with self._tx() as db:
                db.execute(
                    "INSERT INTO directives (id, track, text, parents, origin, born_at, "
                    "mu, sigma) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        d.id,
                        d.track,
                        d.text,
                        json.dumps(list(d.parents)),
                        d.origin,
                        now,
                        d.rating.mu,
                        d.rating.sigma,
                    ),
                )
        except sqlite3.IntegrityError as exc:
            raise CatalogueError(f"directive {d.id!r} not inserted: {exc}") from None

    def directives(self, track: str) -> list[Directive]:
        """A track's directives, oldest first."""
        rows = self._db.execute(
            "SELECT id, track, text, parents, origin, mu, sigma FROM "
            "directives WHERE track = ? ORDER BY born_at, id",
            (track,),
        )
        return [
            Directive(i, t, x, tuple(json.loads(p)), o, Rating(mu, s))
            for i, t, x, p, o, mu, s in rows
        ]

    def _require(self, db: sqlite3.Connection, oid: str) -> Organism:
        row = db.execute(
            f"SELECT {_ORGANISM_COLUMNS} FROM organisms WHERE id = ?", (oid,)
        ).fetchone()
        if row is None:
            raise CatalogueError(f"unknown organism {oid!r}")
        return _organism(row)


_ORGANISM_COLUMNS = (
    "id, track, code, title, parents, status, render_ok, error, mu, sigma, judged, benched"
)


def _organism(row: tuple) -> Organism:
    oid, track, code, title, parents, status, ok, error, mu, sigma, judged, benched = row
    return Organism(
        oid,
        track,
        code,
        title,
        tuple(json.loads(parents)),
        status,
        bool(ok),
        error,
        Rating(mu, sigma),
        judged,
        bool(benched),
    )
