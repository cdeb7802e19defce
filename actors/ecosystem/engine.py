"""One run, one generation at a time: `start(config, graph, seed) -> state` and
`step(state, decisions_due) -> (state, frame)`.

A live run, a batch run (`run.simulate`) and a replay all advance through `step`, so
they are one code path and give the same digests. `step` never changes the state it is
given: it forks it (the fields are copied, everything else is shared or copied
shallowly), which lets a world decide a generation before it folds it.

Before generation t is simulated, changes whose time ran out revert and due decisions
fire (see `schedule`); the rates then blend any ramping or pulsing change. Decisions
handed to `step` are those accepted since the last generation; each is numbered in
acceptance order and is never due before the generation after the one it was accepted at.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from actors.ecosystem.errors import EcosystemError
from actors.ecosystem.graph import validate_rule_graph
from actors.ecosystem.rates import MODEL, Rates, compute_rates, species_rates
from actors.ecosystem.schedule import (
    MAX_DECISIONS,
    MAX_GENERATION,
    Schedule,
    validate_decisions,
)
from actors.ecosystem.score import score
from actors.ecosystem.setup import validate_config
from actors.ecosystem.sim import Fields, Metrics, stream

DEFAULT_SIZE = 64
MIN_SIZE, MAX_SIZE = 8, 512
MAX_SEED = 2**63 - 1


def _chaos(seed: int, generation: int, config: dict[str, Any],
           graphs: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """The two volatility draws, made only when a chaotic volatility needs them."""
    hazard = pressure = 1.0
    if config["environment"]["volatility"] == "chaotic":
        hazard = float(stream(seed, generation, "hazard_chaos").uniform(0.5, 1.5))
    if any(g["environment"]["volatility"] == "chaotic" for g in graphs):
        pressure = float(stream(seed, generation, "pressure_chaos").uniform(0.5, 1.5))
    return hazard, pressure


class RateCache:
    """`species_rates` per graph object of one run, under the run's model version (graphs
    are never mutated in place; holding each graph keeps its id from being reused). Forks
    of a run share it."""

    def __init__(self, model: int = MODEL) -> None:
        self.model = model
        self._bases: dict[int, tuple[dict[str, Any], Rates]] = {}

    def base(self, config: dict[str, Any], graph: dict[str, Any]) -> Rates:
        """The graph's generation-independent rates."""
        if id(graph) not in self._bases:
            self._bases[id(graph)] = (graph, species_rates(config, graph, self.model))
        return self._bases[id(graph)][1]


def effective_rates(config: dict[str, Any], graph: dict[str, Any], schedule: Schedule,
                    generation: int, seed: int, cache: RateCache | None = None) -> Rates:
    """Rates of the current graph, shifted back by each change's unfinished transition."""
    cache = cache or RateCache()
    blends = schedule.blends(generation)
    chaos = _chaos(seed, generation, config,
                   [graph] + [g for b in blends for g in b[:2]])

    def rates(g: dict[str, Any]) -> Rates:
        """Rates of graph `g` at this generation, from its cached base."""
        return compute_rates(config, g, generation, chaos, cache.base(config, g))

    out = rates(graph)
    for before, after, weight in blends:
        out = out.shifted(rates(before), rates(after), weight - 1.0)
    return out


def make_frame(m: Metrics, ids: Sequence[str], points: dict[str, float],
               events: list[dict[str, Any]], version: int) -> dict[str, Any]:
    """What one generation shows: per-species biomass, population (occupied cells) and
    alive flags, the resource level, predation, occupied share, score, graph version,
    the decision and change outcomes (`trigger` names a fired decision's activation) and
    extinctions, and the digest of the replay contract."""
    return {"generation": m.generation,
            "biomass": dict(zip(ids, m.totals, strict=True)),
            "population": dict(zip(ids, m.population, strict=True)),
            "alive": dict(zip(ids, m.alive, strict=True)),
            "resource": m.resource, "predation": m.predation, "occupied": m.occupied,
            "score": points, "graphVersion": version,
            "events": events + [{"generation": m.generation, "outcome": "extinct",
                                 "species": sid} for sid in m.extinct_now],
            "digest": m.digest()}


@attrs.define(eq=False)
class RunState:
    """One run at its latest generation. Treat it as a value: `step` returns a new one."""

    config: dict[str, Any]
    graph: dict[str, Any]  # the current graph (replaced, never mutated)
    seed: int
    size: int
    fields: Fields
    schedule: Schedule
    history: list[Metrics]  # history[t]: the metrics of generation t
    decisions: list[dict[str, Any]]  # accepted so far; a decision's index is its position
    frame: dict[str, Any]  # the latest generation's frame
    cache: RateCache  # holds the run's model version

    @property
    def generation(self) -> int:
        """The latest simulated generation (0: the founders)."""
        return len(self.history) - 1

    @property
    def ids(self) -> tuple[str, ...]:
        """The species ids, A.."""
        return self.fields.ids

    def fork(self) -> RunState:
        """An independent copy to step from."""
        return attrs.evolve(self, fields=self.fields.copy(), schedule=self.schedule.copy(),
                            history=list(self.history), decisions=list(self.decisions))


def check_run_parameters(seed: Any, size: Any, generations: Any = 0) -> None:
    """Seed, grid size and generation count within their ranges (`invalid_run`)."""
    for name, value, low, high in (("seed", seed, 0, MAX_SEED),
                                   ("generations", generations, 0, MAX_GENERATION),
                                   ("size", size, MIN_SIZE, MAX_SIZE)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise EcosystemError("invalid_run", f"{name} must be an integer within {low}..{high}",
                                 name)


def start(config: Any, graph: Any, seed: int, size: int = DEFAULT_SIZE,
          model: int = MODEL) -> RunState:
    """A run at generation 0 (the founders), from a config, a graph and a seed, under model
    version `model` (`rates.MODEL`; a stored run's own to replay it)."""
    config = validate_config(config)
    graph = validate_rule_graph(graph)
    check_run_parameters(seed, size)
    fields = Fields(config, graph, seed, size)
    founding = fields.metrics(0, 0.0)
    frame = make_frame(founding, fields.ids,
                       score(founding, founding, founding, config["fitness"]), [],
                       graph["version"])
    return RunState(config, graph, seed, size, fields, Schedule(), [founding], [], frame,
                    RateCache(model))


def step(state: RunState, decisions_due: Sequence[Any] = (), *, fork: bool = True
         ) -> tuple[RunState, dict[str, Any]]:
    """Accept `decisions_due`, then simulate the next generation; returns (state, frame).

    `state` itself is left as it was, unless `fork=False`: a caller that drops the state
    it passes (a batch run) saves the copy; it must then not use `state` again. Decisions
    are validated (a refused one raises its `EcosystemError` and nothing happens) and may
    not predate the current generation.
    """
    if state.generation >= MAX_GENERATION:
        raise EcosystemError("invalid_run", f"the run has reached generation {MAX_GENERATION}",
                             "generation")
    if len(state.decisions) + len(decisions_due) > MAX_DECISIONS:
        raise EcosystemError("invalid_run", f"a run holds at most {MAX_DECISIONS} decisions",
                             "decisions")
    generation = state.generation
    accepted = validate_decisions(decisions_due, len(state.decisions))
    for k, decision in enumerate(accepted, len(state.decisions)):
        if decision["generation"] < generation:
            raise EcosystemError(
                "invalid_schedule", f"Invalid scheduled change: decisions[{k}].generation "
                f"must not precede the run's generation {generation}",
                f"decisions[{k}].generation")
    new = state.fork() if fork else state
    new.schedule.pending.extend(enumerate(accepted, len(new.decisions)))
    new.decisions.extend(accepted)
    t = generation + 1
    new.graph, events = new.schedule.advance(t, new.graph, new.history)
    metrics = new.fields.step(
        effective_rates(new.config, new.graph, new.schedule, t, new.seed, new.cache), t)
    new.history.append(metrics)
    points = score(metrics, new.history[t - 1], new.history[0], new.config["fitness"])
    new.frame = make_frame(metrics, new.ids, points, events, new.graph["version"])
    return new, new.frame
