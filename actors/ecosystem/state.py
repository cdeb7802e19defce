"""The state of a run, `ecosystem:<run id>`, and how each event changes it. Pure.

A stored `generation` event folds by stepping the engine again (a decided one carries the
stepped engine): a restart re-simulates the run from its setup (or from its latest state
snapshot, `snapshot.py`), at most 180 generations, and refuses a stream whose digests the
engine no longer reproduces.
"""

from __future__ import annotations

import hashlib
from typing import Any

import attrs

from actors.ecosystem.density import Coarse, coarse
from actors.ecosystem.engine import RunState, start, step
from actors.ecosystem.errors import EcosystemError
from actors.ecosystem.events import (
    Controlled,
    Ended,
    Event,
    Generated,
    Patched,
    Phrased,
    Scheduled,
    SetUp,
)
from actors.world import Refusal
from protocol.errors import ErrorCode
from protocol.ops.ecosystem import EcosystemCode

DEFAULT_SPEED = 10  # generations a second


@attrs.frozen
class PendingSetup:
    """A create the model is interpreting: canonical answers, owner, engine seed, size."""

    answers: dict[str, str]
    owner: str
    seed: int
    size: int


@attrs.frozen
class Run:
    """The folded state: setup, the engine at the latest generation, every frame, the
    accepted decisions (and how each came), the controls, the end and its phrasing; for
    history, each graph version and a coarse picture of every generation.

    `setting_up` (a create the model is interpreting) and `blocked` (the last setup the
    fidelity review did not approve) are kept in memory only, by the actor."""

    name: str
    rev: int = 0
    setup: SetUp | None = None
    engine: RunState | None = attrs.field(default=None, eq=False, repr=False)
    frames: tuple[dict[str, Any], ...] = ()
    decisions: tuple[dict[str, Any], ...] = ()
    vias: tuple[str, ...] = ()  # "patch" or "schedule", per decision
    playing: bool = False
    speed: int = DEFAULT_SPEED
    controls: int = 0  # `Controlled` events stored
    ended: Ended | None = None
    phrasing: Phrased | None = None
    graphs: dict[int, dict[str, Any]] = attrs.field(factory=dict, eq=False, repr=False)
    densities: tuple[Coarse, ...] = attrs.field(default=(), eq=False, repr=False)
    setting_up: PendingSetup | None = None
    blocked: dict[str, Any] | None = None

    @property
    def generation(self) -> int:
        """The latest generation (-1 before the setup)."""
        return len(self.frames) - 1

    @property
    def due(self) -> tuple[dict[str, Any], ...]:
        """Decisions accepted since the last generation, for the next step."""
        handed = len(self.engine.decisions) if self.engine is not None else 0
        return self.decisions[handed:]

    @property
    def graph(self) -> dict[str, Any]:
        """The current rule graph."""
        assert self.engine is not None
        return self.engine.graph


def initial(name: str) -> Run:
    """A run that was never created."""
    return Run(name)


def run_seed(state: Run) -> int:
    """The world's seed for `ctx.rng`: from the run's name, so runs draw apart."""
    return int.from_bytes(hashlib.sha256(state.name.encode()).digest()[:8], "big")


def refold(state: Run, frame: dict[str, Any]) -> RunState:
    """The engine after a stored generation, simulated again from the state before it; an
    `invalid_record` EcosystemError when its digest is not the stored frame's (the engine
    no longer reproduces the stream: the run cannot go on exactly)."""
    assert state.setup is not None
    s = state.setup
    engine = (step(state.engine, state.due)[0] if state.engine is not None else
              start(s.config, s.graph, s.seed, s.size, s.model))
    if engine.frame["digest"] != frame.get("digest"):
        g = engine.generation
        raise EcosystemError("invalid_record", f"Invalid run record: generation {g} simulates "
                             f"to digest {engine.frame['digest']}, the stream holds "
                             f"{frame.get('digest')}", f"frames[{g}].digest")
    return engine


def evolve(state: Run, event: Event) -> Run:
    """The state after one event (a decoded `Generated` steps the engine again)."""
    return attrs.evolve(state, rev=state.rev + 1, **_changes(state, event))


def _changes(state: Run, event: Event) -> dict[str, Any]:
    if isinstance(event, SetUp):
        return {"setup": event, "setting_up": None, "blocked": None}
    if isinstance(event, Generated):
        engine = event.engine if event.engine is not None else refold(state, event.frame)
        version = engine.graph["version"]
        graphs = state.graphs if version in state.graphs else {**state.graphs,
                                                               version: engine.graph}
        return {"engine": engine, "frames": state.frames + (event.frame,), "graphs": graphs,
                "densities": state.densities + (coarse(engine),)}
    if isinstance(event, Patched | Scheduled):
        via = "patch" if isinstance(event, Patched) else "schedule"
        return {"decisions": state.decisions + (event.decision,), "vias": state.vias + (via,)}
    if isinstance(event, Controlled):
        return {"playing": event.playing, "speed": event.speed, "controls": state.controls + 1}
    if isinstance(event, Phrased):
        return {"phrasing": event}
    return {"ended": event, "playing": False}


def unready(state: Run) -> Refusal | None:
    """No run yet: being set up by the model, its setup blocked by the fidelity review (it
    may be created again), or never created."""
    if state.setup is not None:
        return None
    if state.setting_up is not None:
        return Refusal(EcosystemCode.SETTING_UP, "the model is interpreting this run's "
                       "answers; its setup follows")
    if state.blocked is not None:
        return Refusal(EcosystemCode.SETUP_BLOCKED, "the model's fidelity review did not "
                       "approve this run's setup; it may be created again",
                       {"review_focus": state.blocked["review_focus"]})
    return Refusal(ErrorCode.UNKNOWN_ACTOR, "this run has not been created")
