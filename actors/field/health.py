"""Health: an agent's wrong-rate over its last HEALTH_WINDOW committed cells.

Every committed cell (accepted or wrong) enters a per-agent ring of outcomes.
Under HEALTH_WARN the agent is healthy; from HEALTH_WARN it is warned; at
HEALTH_DEATH, once at least HEALTH_MIN cells are in the window, it dies for the
game. Death is sticky (`died_at` is the revision it happened at); the window
heals the other states on its own as honest cells push old mistakes out.
Cells rejected as `guess` (the `reject` guess policy) are not committed and
do not enter the window.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Literal

import attrs
import numpy as np

HEALTH_WINDOW = 2000
"""Committed cells in the ring."""
HEALTH_WARN = 0.015
"""Wrong-rate from which an agent is warned."""
HEALTH_DEATH = 0.04
"""Wrong-rate at which an agent dies for the game (with HEALTH_MIN cells in the window)."""
HEALTH_MIN = 300
"""Committed cells in the window before death can apply."""

HealthState = Literal["healthy", "warning", "dead"]


@attrs.frozen
class Health:
    """What an agent (and spectators) read: the rate over the window and the state."""

    state: HealthState
    rate: float
    committed: int
    wrong: int
    window: int
    died_at: int | None

    def to_json(self) -> dict:
        """Plain JSON value, keys as in the seed's `Health` type (spelled out: observe lists
        every agent's health, and `attrs.asdict` was a fifth of its cost)."""
        return {"state": self.state, "rate": self.rate, "committed": self.committed,
                "wrong": self.wrong, "window": self.window, "died_at": self.died_at}


@attrs.frozen(eq=False)
class HealthWindow:
    """The ring of outcomes (0 accepted, 1 wrong). Never mutated: `record` copies it."""

    outcomes: np.ndarray = attrs.field(repr=False)
    pos: int = 0  # next write position
    fill: int = 0  # cells in the ring
    wrong: int = 0  # wrong cells in the ring
    died_at: int | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HealthWindow):
            return NotImplemented
        return (self.pos, self.fill, self.wrong, self.died_at) == (
            other.pos, other.fill, other.wrong, other.died_at
        ) and bool(np.array_equal(self.outcomes, other.outcomes))

    __hash__ = None  # type: ignore[assignment]


def fresh_window() -> HealthWindow:
    """A new agent's empty window."""
    outcomes = np.zeros(HEALTH_WINDOW, dtype=np.uint8)
    outcomes.flags.writeable = False
    return HealthWindow(outcomes)


def record(w: HealthWindow, accepted: int, wrong: int, revision: int) -> HealthWindow:
    """The window after `accepted` then `wrong` outcomes, as committed at `revision`.

    Death applies (and stays) once the window holds at least HEALTH_MIN cells
    and the rate is at least HEALTH_DEATH.
    """
    if accepted < 0 or wrong < 0:
        raise ValueError("outcome counts are never negative")
    if accepted == 0 and wrong == 0:
        return w
    ring = w.outcomes.copy()
    pos, fill, nwrong = w.pos, w.fill, w.wrong
    for value, n in ((0, accepted), (1, wrong)):
        # Only the last HEALTH_WINDOW outcomes of a long run can stay in the ring.
        if n > HEALTH_WINDOW:
            pos = (pos + n - HEALTH_WINDOW) % HEALTH_WINDOW
            n = HEALTH_WINDOW
        idx = (pos + np.arange(n)) % HEALTH_WINDOW
        # Slots beyond `fill` are empty; their zeros leave nothing to subtract.
        nwrong -= int(ring[idx].sum())
        ring[idx] = value
        nwrong += value * n
        fill = min(HEALTH_WINDOW, fill + n)
        pos = (pos + n) % HEALTH_WINDOW
    died_at = w.died_at
    if died_at is None and fill >= HEALTH_MIN and nwrong / fill >= HEALTH_DEATH:
        died_at = revision
    ring.flags.writeable = False
    return HealthWindow(ring, pos, fill, nwrong, died_at)


def health_of(w: HealthWindow) -> Health:
    """The health read off a window."""
    rate = w.wrong / w.fill if w.fill else 0.0
    state: HealthState = "healthy"
    if w.died_at is not None:
        state = "dead"
    elif rate >= HEALTH_WARN:
        state = "warning"
    return Health(state, rate, w.fill, w.wrong, HEALTH_WINDOW, w.died_at)


def percent(rate: float) -> str:
    """`rate` in percent to one decimal, as the seed's `(rate * 100).toFixed(1)` writes it:
    half up on the double's exact value (Python's format rounds half to even: 6.25 -> 6.2)."""
    return str(Decimal(rate * 100).quantize(Decimal("0.1"), ROUND_HALF_UP))


def health_note(h: Health) -> str | None:
    """The one line an agent should read at warning or death; None when healthy."""
    death_pct = f"{HEALTH_DEATH * 100:.0f}%"
    if h.state == "dead":
        return (f"dead: your wrong-rate reached {death_pct} at revision {h.died_at}; "
                "you are out for the day, your territory stays.")
    if h.state == "warning":
        return (f"warning: your wrong-rate is {percent(h.rate)}% over your last {h.committed} "
                f"committed cells; at {death_pct} you are out for the day. "
                "Commit what you can prove.")
    return None


def dead_message(agent: str, died_at: int | None) -> str:
    """The message of the `dead` error that refuses a dead agent's writes."""
    return (f"Agent {agent} is out for the day: its wrong-rate reached {HEALTH_DEATH * 100:.0f}% "
            f"at revision {died_at}. Its territory stays; it writes no more today.")
