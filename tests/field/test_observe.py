"""Observe: the agent's neighbourhood within the radius, earned values only, fog, rects,
full listings on small fields only, truncation."""

from __future__ import annotations

import numpy as np
import pytest

from actors.field import referee
from actors.field.events import GameRules, ManifestEvent
from actors.field.fold import HIDDEN, State, apply_event, new_state
from actors.field.geometry import Manifest, TileShape
from actors.field.health import health_note, health_of
from actors.field.observe import MAX_FULL_G, MAX_OBSERVE_TILES, OBSERVE_RADIUS, observe
from actors.field.territory import frontier, reached, territory
from tests.field._games import Game, play_random, scatter


def _gap(a: tuple, b: tuple) -> int:
    """Chebyshev distance between two cell boxes (x0, y0, w, h); 0 when they overlap."""
    dx = max(0, b[0] - (a[0] + a[2] - 1), a[0] - (b[0] + b[2] - 1))
    dy = max(0, b[1] - (a[1] + a[3] - 1), a[1] - (b[1] + b[3] - 1))
    return max(dx, dy)


def _box(s: State, t: int) -> tuple:
    sh = s.geo.tiles[t].shape
    return (sh.x0, sh.y0, sh.w, sh.h)


def _played(fog: bool) -> Game:
    g = Game(scatter("referee", 60), rules=GameRules(fog=fog), seed=11)
    play_random(g, np.random.default_rng(11), steps=40, agents=2)
    return g


@pytest.mark.parametrize("fog", [False, True])
def test_agent_view_lists_the_neighbourhood_and_only_earned_values(fog: bool) -> None:
    g = _played(fog)
    s = g.state
    for i, a in enumerate(s.agents):
        obs = observe(s, agent=a.id)
        listed = {v["id"]: v for v in obs["tiles"]}
        terr = territory(s, i)
        near = {t for t in range(len(s.geo.tiles))
                if any(_gap(_box(s, t), _box(s, u)) <= OBSERVE_RADIUS for u in terr)}
        expect = near | set(frontier(s, i))
        if fog:
            expect = {t for t in expect if s.status[t] != HIDDEN or t in reached(s, i)}
        assert set(listed) == expect
        assert obs["frontier"] == frontier(s, i) and obs["territory"] == terr
        assert set(obs["frontier"]) <= set(listed)
        for t, view in listed.items():
            tg = s.geo.tiles[t]
            assert (view["cells"], view["m"], [list(r) for r in view["rects"]]) == (
                tg.n, tg.m, [list(r) for r in tg.shape.rects])
        open_cells = {c for t, v in listed.items() if v["status"] != "hidden"
                      for c in s.geo.tiles[t].cells.tolist()}
        known = dict(map(tuple, obs["known"]))
        assert set(known) == {c for c in open_cells if s.values[c] >= 0}
        assert all(s.values[c] == v for c, v in known.items())
        h = health_of(s.stats[i].health)
        assert obs["health"] == h.to_json()
        assert obs.get("note") == health_note(h)


def test_fog_hides_unreached_hidden_tiles() -> None:
    s = _played(True).state
    obs = observe(s, agent="a1")
    reach = reached(s, 0)
    hidden = [v["id"] for v in obs["tiles"] if v["status"] == "hidden"]
    assert hidden and set(hidden) <= reach
    assert not any(v["status"] == "hidden" for v in observe(s, rect=[0, 0, 60, 60])["tiles"])
    assert observe(s)["fog"] is True


def test_rect_and_full_listings() -> None:
    s = _played(False).state
    rect = observe(s, rect=[10, 10, 5, 5])
    expect = {t for t in range(len(s.geo.tiles)) if _gap(_box(s, t), (10, 10, 5, 5)) == 0}
    assert {v["id"] for v in rect["tiles"]} == expect
    assert s.manifest.G <= MAX_FULL_G and len(observe(s)["tiles"]) == len(s.geo.tiles)
    for bad in ([0, 0, 0, 5], [60, 0, 1, 1], [0, 0, 1], "x", [0, 0, True, 1]):
        r = observe(s, rect=bad)
        assert isinstance(r, referee.Refusal) and r.code == "bad_request"
    r = observe(s, agent="a9")
    assert isinstance(r, referee.Refusal) and r.code == "agent"


def _grid_of_squares(G: int) -> State:
    """A G x G field of non-overlapping 2 x 2 tiles (valid: two lines of length 2 per side)."""
    tiles = tuple(TileShape(k, 2 * (k % (G // 2)), 2 * (k // (G // 2)), 2, 2, ((0, 0, 2, 2),))
                  for k in range((G // 2) ** 2))
    middle = (G // 4) * (G // 2) + G // 4
    return apply_event(new_state(), ManifestEvent(
        rev=1, t=0, rules=GameRules(), manifest=Manifest(G=G, tiles=tiles,
                                                         seed_rings=((middle,),))))


def test_big_fields_refuse_full_listings_and_cut_long_ones() -> None:
    assert "tiles" in observe(_grid_of_squares(MAX_FULL_G))  # 3,600 tiles, 120 a side
    s = _grid_of_squares(MAX_FULL_G + 2)
    r = observe(s)
    assert isinstance(r, referee.Refusal) and r.code == "too_large"
    assert r.message == ("full listings exist only on fields up to 120 cells a side; "
                         "observe {agent} or {rect}")
    s = apply_event(s, referee.join(s, np.random.default_rng(0), name="p", model="m", user="u",
                                    harness="h", t=0))
    obs = observe(s, agent="a1")
    assert obs["truncated"] is True and len(obs["tiles"]) == MAX_OBSERVE_TILES
    seed = s.agents[0].seed_tile
    assert seed in {v["id"] for v in obs["tiles"]}  # the frontier is kept

    def centre_dist(t: int) -> float:  # the cut keeps the tiles nearest the seed tile's centre
        (x, y, w, h), (sx, sy, sw, sh) = _box(s, t), _box(s, seed)
        return float(np.hypot(x + w / 2 - sx - sw / 2, y + h / 2 - sy - sh / 2))
    listed = {v["id"] for v in obs["tiles"]}
    dropped = [t for t in range(len(s.geo.tiles)) if t not in listed
               and _gap(_box(s, t), _box(s, seed)) <= OBSERVE_RADIUS]
    assert max(map(centre_dist, listed)) <= min(map(centre_dist, dropped))
    assert observe(s, rect=[0, 0, 100, 100])["truncated"] is True
