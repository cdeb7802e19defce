"""One run: config + graph + seed + accepted decisions -> per-generation frames and a record.

Generation 0 is the founders' state; generations 1..G are simulated. Before generation t
is simulated, expired temporary changes revert and due decisions fire (see `schedule`);
the rates then blend any ramping or pulsing change. The record holds everything a replay
needs and no model output beyond the accepted config and graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from actors.ecosystem.errors import EcosystemError
from actors.ecosystem.keywords import deterministic_setup
from actors.ecosystem.rates import Rates, compute_rates, species_rates
from actors.ecosystem.rules import validate_rule_graph
from actors.ecosystem.schedule import MAX_GENERATION, Schedule
from actors.ecosystem.score import score
from actors.ecosystem.setup import canonical_answers, config_graph, validate_config
from actors.ecosystem.sim import Metrics, World, stream

RECORD_FORMAT = "lifepot-run/1"
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
    """`species_rates` per graph object of one run (graphs are never mutated in place;
    holding each graph keeps its id from being reused)."""

    def __init__(self) -> None:
        self._bases: dict[int, tuple[dict[str, Any], Rates]] = {}

    def base(self, config: dict[str, Any], graph: dict[str, Any]) -> Rates:
        """The graph's generation-independent rates."""
        if id(graph) not in self._bases:
            self._bases[id(graph)] = (graph, species_rates(config, graph))
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


def _frame(m: Metrics, ids: Sequence[str], points: dict[str, float],
           events: list[dict[str, Any]], version: int) -> dict[str, Any]:
    return {"generation": m.generation,
            "totals": dict(zip(ids, m.totals, strict=True)),
            "alive": dict(zip(ids, m.alive, strict=True)),
            "resource": m.resource, "predation": m.predation, "occupied": m.occupied,
            "score": points, "graphVersion": version,
            "events": events + [{"generation": m.generation, "outcome": "extinct",
                                 "species": sid} for sid in m.extinct_now],
            "digest": m.digest()}


def simulate(config: Any, seed: int, generations: int, *, graph: Any = None,
             decisions: Sequence[Any] = (), size: int = DEFAULT_SIZE,
             answers: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a world; returns `{"generations": [frame, ...], "record": {...}}`.

    `graph` defaults to the config's own rules (or the default graph). When `answers`
    is given the record stores them (the config is their deterministic setup).
    """
    config = validate_config(config)
    if answers is not None and deterministic_setup(answers)["config"] != config:
        raise EcosystemError("invalid_run", "config is not the deterministic setup of the answers",
                             "answers")
    graph = validate_rule_graph(graph if graph is not None else config_graph(config))
    for name, value, low, high in (("seed", seed, 0, MAX_SEED),
                                   ("generations", generations, 0, MAX_GENERATION),
                                   ("size", size, MIN_SIZE, MAX_SIZE)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise EcosystemError("invalid_run", f"{name} must be an integer within {low}..{high}",
                                 name)
    schedule = Schedule.from_decisions(decisions)
    accepted = [decision for _, decision in schedule.pending]
    start_graph = graph
    world = World(config, graph, seed, size)
    cache = RateCache()
    history = [world.metrics(0, 0.0)]
    weights = config["fitness"]
    frames = [_frame(history[0], world.ids, score(history[0], history[0], history[0], weights),
                     [], graph["version"])]
    for t in range(1, generations + 1):
        graph, events = schedule.advance(t, graph, history)
        metrics = world.step(effective_rates(config, graph, schedule, t, seed, cache), t)
        history.append(metrics)
        frames.append(_frame(metrics, world.ids, score(metrics, history[t - 1], history[0],
                                                       weights), events, graph["version"]))
    record: dict[str, Any] = {"format": RECORD_FORMAT}
    if answers is not None:
        record["answers"] = canonical_answers(answers)
    else:
        record["config"] = config
    record.update({"graph": start_graph, "seed": seed, "generations": generations,
                   "size": size, "decisions": accepted,
                   "digests": [f["digest"] for f in frames]})
    return {"generations": frames, "record": record}
