"""Health, the seed's four tests: honest play stays healthy; a warning heals as the window
flushes; death at 4% is sticky and refuses every write; the oracle probe bleeds out
before 300 wrong cells."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.field.events import Accepted, CommitEvent
from actors.field.fold import HIDDEN, apply_event
from actors.field.health import (
    HEALTH_DEATH,
    HEALTH_MIN,
    HEALTH_WARN,
    HEALTH_WINDOW,
    fresh_window,
    health_of,
    record,
)
from actors.field.observe import observe
from actors.field.territory import frontier
from tests.field._games import Game, Refused, scatter


def _game() -> tuple[Game, str]:
    # a field is one component, so from any seed tile the whole field (over 2,000 cells,
    # a full window's worth for the warning test) can be played
    g = Game(scatter("health", 100))
    return g, g.join_at(g.truth.manifest.seed_tiles[0])


def _health(g: Game, agent: str):
    return health_of(g.state.stats[g.index(agent)].health)


def test_honest_play_stays_healthy() -> None:
    g, agent = _game()
    g.feed(agent, 600, 0)
    h = _health(g, agent)
    assert h.state == "healthy"
    assert h.wrong == 0
    assert h.committed >= 600
    assert h.window == HEALTH_WINDOW


def test_a_warning_heals_as_the_window_flushes() -> None:
    g, agent = _game()
    g.feed(agent, 400, 50)  # 2% wrong: warning, not death
    h = _health(g, agent)
    assert h.state == "warning"
    assert HEALTH_WARN <= h.rate < HEALTH_DEATH
    few = [[c, g.sol(c)] for c in g.next_tile(agent)[:3]]
    r = g.commit(agent, few, "one more")
    assert r["health"]["state"] == "warning"
    assert r["note"].startswith("warning")
    g.feed(agent, HEALTH_WINDOW, 0)  # a full window of honest cells later: healthy
    h = _health(g, agent)
    assert h.state == "healthy"
    assert h.wrong == 0
    assert h.committed == HEALTH_WINDOW


def test_death_at_four_percent_is_sticky_and_refuses_every_write() -> None:
    g, agent = _game()
    with pytest.raises(Refused) as exc:  # 5% wrong: dead once 300 cells are in the window
        g.feed(agent, 100_000, 20)
    assert exc.value.code == "dead"
    h = _health(g, agent)
    assert h.state == "dead"
    assert h.died_at is not None and h.died_at > 0
    assert h.committed >= HEALTH_MIN
    obs = observe(g.state, agent=agent)
    assert obs["health"]["state"] == "dead"
    assert obs["note"].startswith("dead")
    hidden = next(t for t in frontier(g.state, g.index(agent)) if g.state.status[t] == HIDDEN)
    for write in (lambda: g.reveal(agent, hidden), lambda: g.commit(agent, [[0, 0]]),
                  lambda: g.retract(agent, [0])):
        with pytest.raises(Refused, match=r"^dead: Agent a1 is out for the day: its wrong-rate "
                           rf"reached 4% at revision {h.died_at}\."):
            write()
    # sticky: a window of correct cells folded on top heals the window, not the state
    s = g.state
    tile = int(next(t for t in range(len(s.geo.tiles)) if s.status[t] == HIDDEN))
    cells = [c for c in s.geo.tiles[tile].cells.tolist() if s.values[c] < 0][:40]
    for _ in range(60):
        s = apply_event(s, CommitEvent(
            rev=s.revision + 1, t=0, agent=agent, intent="after death",
            accepted=tuple(Accepted(c, g.sol(c), "forced", ("run",)) for c in cells)))
    after = health_of(s.stats[g.index(agent)].health)
    assert after.state == "dead"
    assert after.died_at == h.died_at
    assert after.wrong == 0


def test_the_oracle_probe_bleeds_out_before_300_wrong_cells() -> None:
    g, agent = _game()
    pending: dict[int, int] = {}
    wrong_total = 0
    dead = False
    for _ in range(200):
        try:
            if pending:
                batch = [[c, v] for c, v in pending.items()]
                pending.clear()
                g.commit(agent, batch, "complements")
                continue
            unknown = g.next_tile(agent)
            if not unknown:
                continue
            r = g.commit(agent, [[c, 0] for c in unknown], "probe zeros")
            for rej in r["rejected"]:
                if rej["reason"] == "wrong":
                    wrong_total += 1
                    pending[rej["id"]] = 1 - rej["v"]
            if r["health"]["state"] == "dead":
                dead = True
                break
        except Refused as e:
            assert e.code == "dead"
            dead = True
            break
    assert dead, "the probe died"
    assert wrong_total < HEALTH_MIN, f"bled {wrong_total} wrong cells before dying"
    with pytest.raises(Refused) as exc:
        g.commit(agent, [[1, 1]], "again")
    assert exc.value.code == "dead"


def test_window_ring_dies_on_the_batch_that_crosses_the_line() -> None:
    w = fresh_window()
    for rev, (accepted, wrong) in enumerate([(5, 1), (1999, 3), (2500, 0), (10, 200)], start=1):
        w = record(w, accepted, wrong, rev)
    assert w.died_at == 4  # 200 wrong of the last 2,000
    assert record(w, 5000, 0, 5).died_at == 4


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2500), st.integers(0, 150)), max_size=12))
def test_window_ring_matches_a_plain_list(batches: list[tuple[int, int]]) -> None:
    w, plain, died = fresh_window(), [], None
    for rev, (accepted, wrong) in enumerate(batches, start=1):
        w = record(w, accepted, wrong, rev)
        plain = (plain + [0] * accepted + [1] * wrong)[-HEALTH_WINDOW:]
        if died is None and len(plain) >= HEALTH_MIN and sum(plain) / len(plain) >= HEALTH_DEATH:
            died = rev
        assert (w.fill, w.wrong, w.died_at) == (len(plain), sum(plain), died)
        h = health_of(w)
        expect = "dead" if died else "warning" if plain and sum(plain) / len(plain) >= HEALTH_WARN \
            else "healthy"
        assert h.state == expect
