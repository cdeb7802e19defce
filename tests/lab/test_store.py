"""The catalogue: migrations, validated births, rejections, transactional writes."""

from __future__ import annotations

import contextlib
import sqlite3

import pytest

from actors.lab.dealing import cross_refusal
from actors.lab.directives import seed_directive
from actors.lab.organism import organism_id
from actors.lab.seeding import rng_for
from actors.lab.store import MIGRATIONS, Catalogue, CatalogueError
from actors.lab.validation import static_reason

SHADER = """void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    fragColor = vec4(uv, 0.5 + 0.5 * sin(u_time), 1.0);
}
"""


@pytest.fixture
def cat(tmp_path):
    c = Catalogue(tmp_path / "lab.sqlite", validator=static_reason)
    yield c
    c.close()


def variant(i: int) -> str:
    return SHADER.replace("0.5 + 0.5", f"0.{i} + 0.5")


def _index_exists(path, name: str) -> bool:
    with contextlib.closing(sqlite3.connect(str(path))) as db:
        return (
            db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (name,)
            ).fetchone()
            is not None
        )


def test_migrations_are_versioned_and_upgrade_an_old_catalogue(tmp_path) -> None:
    path = tmp_path / "old.sqlite"
    with contextlib.closing(sqlite3.connect(str(path))) as db:  # a catalogue at version 1
        db.executescript(MIGRATIONS[0])
        db.execute(
            "INSERT INTO rejections (track, code, reason, source, at) "
            "VALUES ('panel', 'x', 'too short', 'daemon', 0)"
        )
        db.execute("PRAGMA user_version = 1")
        db.commit()
    assert not _index_exists(path, "organisms_by_track")
    upgraded = Catalogue(path)
    assert upgraded.version == len(MIGRATIONS) == 2
    assert upgraded.rejections() == [("panel", "too short", "daemon")]  # data kept
    upgraded.close()
    assert _index_exists(path, "organisms_by_track")
    reopened = Catalogue(path)  # nothing applied twice
    assert reopened.version == 2
    reopened.close()


def test_valid_birth_is_inserted_with_render_ok_zero_and_a_birth_row(cat) -> None:
    out = cat.offer(
        "shader",
        SHADER,
        source="daemon",
        now=5.0,
        title="Soft Glow",
        parents=("s-a", "s-b"),
        prompt="contract + directive",
    )
    assert out.reason is None and out.organism_id == organism_id("shader", SHADER)
    o = cat.organism(out.organism_id)
    assert (o.status, o.render_ok, o.error, o.judged, o.benched) == ("alive", False, None, 0, False)
    assert o.parents == ("s-a", "s-b") and o.title == "Soft Glow"
    assert cat.births() == [(out.organism_id, "daemon", 5.0)]


def test_failed_candidate_is_logged_and_never_inserted(cat) -> None:
    out = cat.offer("shader", "uniform float u_x;\n" + SHADER, source="visitor", now=1.0)
    assert out == out.__class__(None, "extra uniform")
    assert cat.organisms() == [] and cat.births() == []
    assert cat.rejections() == [("shader", "extra uniform", "visitor")]
    dup = cat.offer("shader", SHADER, source="daemon", now=2.0)
    again = cat.offer("shader", SHADER, source="daemon", now=3.0)
    assert again.reason == f"duplicate of {dup.organism_id}" and len(cat.organisms()) == 1


def test_render_ok_and_invalid_marks(cat) -> None:
    a = cat.offer("shader", variant(1), source="daemon", now=1.0).organism_id
    b = cat.offer("shader", variant(2), source="daemon", now=1.0).organism_id
    assert cat.mark_ok(a) is True and cat.organism(a).render_ok
    assert cat.mark_ok(a) is False  # already proven: no change
    cat.mark_invalid(b, "ERROR: 0:3: 'x' : undeclared identifier")
    dead = cat.organism(b)
    assert dead.status == "dead" and dead.error.startswith("ERROR:")
    assert cat.mark_ok(b) is False and not cat.organism(b).render_ok
    cat.bench(a)
    assert cat.organism(a).benched
    with pytest.raises(CatalogueError, match=r"^unknown organism 'nope'$"):
        cat.mark_ok("nope")


def test_votes_are_raw_logged_and_move_ratings_atomically(cat) -> None:
    a, b, c = (cat.offer("shader", variant(i), source="d", now=1.0).organism_id for i in (1, 2, 3))
    rw, rl = cat.record_vote(a, b, client="k1", surface="public", now=2.0)
    assert cat.organism(a).rating == rw and cat.organism(b).rating == rl and rw.mu > rl.mu
    assert cat.organism(a).judged == 1 and cat.organism(c).judged == 0
    cat.record_vote(c, a, client="k2", surface="owner", now=3.0)
    assert cat.votes() == [(a, b), (c, a)]
    assert set(cat.refit()) == {a, b, c}
    before = [cat.organism(x) for x in (a, b, c)]
    with pytest.raises(CatalogueError, match=r"^unknown organism 'ghost'$"):
        cat.record_vote(a, "ghost", client="k", surface="public", now=4.0)
    with pytest.raises(CatalogueError, match=r"^a vote needs two different organisms$"):
        cat.record_vote(a, a, client="k", surface="public", now=4.0)
    assert [cat.organism(x) for x in (a, b, c)] == before and len(cat.votes()) == 2


def test_a_failure_inside_a_write_rolls_everything_back(cat, monkeypatch) -> None:
    a, b = (cat.offer("shader", variant(i), source="d", now=1.0).organism_id for i in (1, 2))
    before = [cat.organism(x) for x in (a, b)]

    def boom(*args):
        raise RuntimeError("disk on fire")

    # the vote row is written, then the ratings update fails: nothing may remain
    monkeypatch.setattr("actors.lab.store.update", boom)
    with pytest.raises(RuntimeError, match="disk on fire"):
        cat.record_vote(a, b, client="k", surface="public", now=2.0)
    assert cat.votes() == [] and [cat.organism(x) for x in (a, b)] == before


def test_directives_are_stored_and_rated_through_their_organisms(cat) -> None:
    d1 = seed_directive("shader", rng_for(1, "directive", 0))
    d2 = seed_directive("shader", rng_for(1, "directive", 1))
    cat.add_directive(d1, now=0.0)
    cat.add_directive(d2, now=0.5)
    with pytest.raises(CatalogueError):
        cat.add_directive(d1, now=1.0)
    with pytest.raises(CatalogueError, match=r"^unknown directive 'dx'$"):
        cat.offer("shader", variant(9), source="d", now=1.0, directive_id="dx")
    a = cat.offer("shader", variant(1), source="d", now=1.0, directive_id=d1.id).organism_id
    b = cat.offer("shader", variant(2), source="d", now=1.0, directive_id=d2.id).organism_id
    cat.record_vote(a, b, client="k", surface="owner", now=2.0)
    stored = {d.id: d for d in cat.directives("shader")}
    assert stored[d1.id].rating.mu > 25 > stored[d2.id].rating.mu
    assert stored[d1.id].text == d1.text and cat.directives("panel") == []


def test_visitor_cross_of_proven_parents_gives_an_unproven_child(cat) -> None:
    a, b = (cat.offer("shader", variant(i), source="d", now=1.0).organism_id for i in (1, 2))
    assert cross_refusal(cat.organism(a), cat.organism(b)) == "parent not proven"
    cat.mark_ok(a)
    cat.mark_ok(b)
    assert cross_refusal(cat.organism(a), cat.organism(b)) is None
    kid = cat.offer("shader", variant(3), source="visitor", now=2.0, parents=(a, b)).organism_id
    child = cat.organism(kid)
    assert child.parents == (a, b) and not child.render_ok and not child.proven
    assert cat.births()[-1] == (kid, "visitor", 2.0)
