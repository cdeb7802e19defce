"""Score: the five documented components and their weighted total."""

from __future__ import annotations

import math

import pytest

from actors.ecosystem.run import simulate
from actors.ecosystem.score import components, score
from actors.ecosystem.setup import default_config
from actors.ecosystem.sim import Metrics


def m(totals: tuple, alive: tuple, occupied: float = 0.5) -> Metrics:
    return Metrics(1, totals, 0.5, 0.0, occupied, alive, ())


def test_components_follow_the_formulas() -> None:
    founding = m((100.0, 100.0), (True, True))
    previous = m((150.0, 150.0), (True, True))
    now = m((300.0, 100.0), (True, True), occupied=0.75)
    parts = components(now, previous, founding)
    shares = (0.75, 0.25)
    assert parts == {
        "survive": 1.0,
        "replicate": 1.0,  # 400 >= 2 * 200
        "cooperate": pytest.approx(-sum(p * math.log(p) for p in shares) / math.log(2)),
        "explore": 0.75,
        "adapt": pytest.approx(1 - 2 * 100 / 300),
    }


def test_extinction_and_collapse_lower_the_score() -> None:
    founding = m((100.0, 100.0), (True, True))
    now = m((50.0, 0.0), (True, False), occupied=0.1)
    parts = components(now, m((200.0, 50.0), (True, True)), founding)
    assert parts["survive"] == 0.5 and parts["cooperate"] == 0.0
    assert parts["replicate"] == 0.125 and parts["adapt"] == 0.0


def test_total_is_the_config_weighted_sum() -> None:
    weights = {"survive": 0.5, "replicate": 0.0, "cooperate": 0.0, "explore": 0.5, "adapt": 0.0}
    founding = m((100.0, 100.0), (True, True))
    points = score(m((100.0, 0.0), (True, False), 0.4), founding, founding, weights)
    assert points["total"] == pytest.approx(0.5 * 0.5 + 0.5 * 0.4)


def test_every_frame_carries_a_bounded_score() -> None:
    for frame in simulate(default_config(), 1, 20, size=16)["generations"]:
        assert set(frame["score"]) == {"survive", "replicate", "cooperate", "explore",
                                       "adapt", "total"}
        assert all(0.0 <= v <= 1.0 for v in frame["score"].values())
