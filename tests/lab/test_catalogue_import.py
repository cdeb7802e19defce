"""`petridish lab import`: a catalogue written by the SQLite catalogue of d27f0b3 becomes
the lab's event stream, and the fold of that stream is the catalogue."""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
import trio

from actors.lab.catalogue_import import ImportMismatch, import_events
from actors.lab.rules import WORLD
from server.cli import main
from server.storage import SqliteEventStore

FIXTURE = Path(__file__).parent / "fixtures" / "catalogue_d27f0b3.sqlite"


@pytest.fixture
def catalogue(tmp_path: Path) -> Path:
    copy = tmp_path / "lab.sqlite"
    shutil.copy(FIXTURE, copy)
    return copy


def _rows(path: Path, sql: str) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(str(path))) as db:
        return list(db.execute(sql))


def test_the_import_folds_to_the_catalogue(catalogue: Path) -> None:
    imported = import_events(catalogue)
    s = imported.state
    assert (len(s.organisms), len(s.directives), s.rejected, s.votes, imported.benched) == (
        7, 2, 3, 4, 1)
    for oid, status, ok, error, mu, sigma, judged, parents in _rows(
            catalogue, "SELECT id, status, render_ok, error, mu, sigma, judged, parents "
                       "FROM organisms"):
        o = s.organisms[oid]
        assert (o.status, o.render_ok, o.error, o.judged) == (status, bool(ok), error, judged)
        assert (o.rating.mu, o.rating.sigma) == pytest.approx((mu, sigma), abs=1e-9)
        assert list(o.parents) == json.loads(parents)
    for did, mu, sigma in _rows(catalogue, "SELECT id, mu, sigma FROM directives"):
        assert (s.directives[did].rating.mu, s.directives[did].rating.sigma) == \
            pytest.approx((mu, sigma), abs=1e-9)
    kinds = [type(e).__name__ for e in imported.events]
    assert kinds[0] == "Created" and kinds.count("VoteCast") == 4 and kinds.count("Born") == 7
    assert imported.state.benched == frozenset()  # benching is not imported: memory only


def test_an_old_version_1_catalogue_imports_too(catalogue: Path) -> None:
    with contextlib.closing(sqlite3.connect(str(catalogue))) as db:
        db.executescript("DROP INDEX organisms_by_track; DROP INDEX votes_by_time; "
                         "PRAGMA user_version = 1;")
    assert len(import_events(catalogue).state.organisms) == 7


def test_a_catalogue_the_events_cannot_reproduce_is_refused(catalogue: Path) -> None:
    with contextlib.closing(sqlite3.connect(str(catalogue))) as db:
        oid = db.execute("SELECT id FROM organisms ORDER BY born_at LIMIT 1").fetchone()[0]
        db.execute("UPDATE organisms SET mu = 99 WHERE id = ?", (oid,))
        db.commit()
    with pytest.raises(ImportMismatch, match=rf"^the imported events do not reproduce the "
                                             rf"catalogue for {oid}$"):
        import_events(catalogue)


async def _stream(data: Path, stream: str) -> list[dict]:
    async with SqliteEventStore.in_directory(data) as store:
        return [e.data for e in await store.read(stream)]


def test_the_cli_writes_the_stream_the_server_loads(catalogue: Path, tmp_path: Path,
                                                     capsys) -> None:
    data = tmp_path / "data"
    assert main(["lab", "import", str(catalogue), "--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("imported 7 organisms, 2 directives, 3 rejections and 4 votes into "
                          "lab:main at revision 22")
    state = WORLD.initial("main")
    for data_event in trio.run(_stream, data, "lab:main"):
        state = WORLD.evolve(state, WORLD.codec.decode(data_event))
    assert state.pool() == import_events(catalogue).state.pool()
    assert main(["lab", "import", str(catalogue), "--data", str(data)]) == 1
    assert "lab:main already has events" in capsys.readouterr().err
    assert main(["lab", "import", str(tmp_path / "missing.sqlite"), "--data", str(data)]) == 2
