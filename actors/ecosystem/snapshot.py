"""A run's state as a JSON store snapshot, and back (`World.snapshot`). Pure.

A run saves one every 60 events (`rules.SNAPSHOT_EVERY`); a load restores the latest and
folds only the events after it, so the generations before it are not simulated again.
`load(dump(s))` equals, exactly, the state a replay of the same events folds: the engine's
float32 fields as base64 of their little-endian bytes (with dtype and shape), every other
float as JSON writes a Python float (its shortest repr, read back to the same bits),
tuples and integer keys as lists. What needs no simulation is rebuilt rather than stored:
the terrain maps (from the setup's seed, as `engine.start` made them), the engine's
config, seed and size (the setup's), its latest frame (the run's last), the decisions it
was handed (validated again, as `engine.step` did) and an empty rate cache. `setting_up`
and `blocked` are the actor's memory, not the stream's: a snapshot has neither, as a
replay has neither.

`VERSION` names the layout: `load` refuses any other (ValueError) and the runtime then
folds the whole stream instead.
"""

from __future__ import annotations

import base64
from typing import Any

import attrs
import numpy as np

from actors.ecosystem.density import Coarse
from actors.ecosystem.engine import RateCache, RunState
from actors.ecosystem.events import decode, encode
from actors.ecosystem.schedule import Blend, Holding, Schedule, validate_decisions
from actors.ecosystem.sim import FIELD, Fields, Metrics
from actors.ecosystem.state import Run

VERSION = 1
_BYTES = np.dtype(FIELD).newbyteorder("<")  # the planes' stored bytes, on any CPU


def _planes(array: np.ndarray) -> dict[str, Any]:
    return {"dtype": _BYTES.str, "shape": list(array.shape),
            "data": base64.b64encode(array.astype(_BYTES).tobytes()).decode("ascii")}


def _unplanes(data: dict[str, Any]) -> np.ndarray:
    raw = np.frombuffer(base64.b64decode(data["data"], validate=True), np.dtype(data["dtype"]))
    return raw.reshape(data["shape"]).astype(FIELD)  # a writable copy: `step` writes in place


def _engine(e: RunState) -> dict[str, Any]:
    s = e.schedule
    return {
        "graph": e.graph, "handed": len(e.decisions),
        "resource": _planes(e.fields.resource), "fields": _planes(e.fields.fields),
        "alive": list(e.fields.alive),
        "history": [attrs.asdict(m, recurse=False) for m in e.history],
        "pending": [index for index, _ in s.pending],  # each is decision `index`
        "holdings": [attrs.asdict(h, recurse=False) for h in s.holdings],
        "bases": [[*key, value] for key, value in s.bases.items()],
        "transitions": [attrs.asdict(b, recurse=False) for b in s.transitions]}


def _unengine(data: dict[str, Any], run: Run) -> RunState:
    setup = run.setup
    assert setup is not None
    fields = Fields(setup.config, setup.graph, setup.seed, setup.size)
    fields.resource, fields.fields = _unplanes(data["resource"]), _unplanes(data["fields"])
    fields.alive = list(data["alive"])
    decisions = validate_decisions(run.decisions[:data["handed"]])
    schedule = Schedule(
        [(index, decisions[index]) for index in data["pending"]],
        [Holding(**{**h, "key": tuple(h["key"])}) for h in data["holdings"]],
        {(kind, target): value for kind, target, value in data["bases"]},
        [Blend(**{**b, "key": tuple(b["key"])}) for b in data["transitions"]])
    history = [Metrics(**{k: tuple(v) if isinstance(v, list) else v for k, v in m.items()})
               for m in data["history"]]
    return RunState(setup.config, data["graph"], setup.seed, setup.size, fields, schedule,
                    history, decisions, run.frames[-1], RateCache(setup.model))


def dump(state: Run) -> dict[str, Any]:
    """The state as a JSON snapshot (see the module docstring)."""
    return {
        "v": VERSION, "name": state.name, "rev": state.rev,
        "setup": None if state.setup is None else encode(state.setup),
        "frames": list(state.frames), "decisions": list(state.decisions),
        "vias": list(state.vias), "playing": state.playing, "speed": state.speed,
        "controls": state.controls,
        "ended": None if state.ended is None else encode(state.ended),
        "phrasing": None if state.phrasing is None else encode(state.phrasing),
        "graphs": [[version, graph] for version, graph in state.graphs.items()],
        "densities": [[d.generation, d.side, d.ids, d.scales,
                       base64.b64encode(d.data).decode("ascii")] for d in state.densities],
        "engine": None if state.engine is None else _engine(state.engine)}


def load(data: Any) -> Run:
    """The state of `dump`'s snapshot; ValueError for a snapshot of another `VERSION`
    (KeyError, TypeError or ValueError for one this module never wrote)."""
    version = data.get("v") if isinstance(data, dict) else None
    if version != VERSION:
        raise ValueError(f"ecosystem snapshot version {version!r}, not {VERSION}")
    run = Run(
        data["name"], data["rev"],
        setup=None if data["setup"] is None else decode(data["setup"]),
        frames=tuple(data["frames"]), decisions=tuple(data["decisions"]),
        vias=tuple(data["vias"]), playing=data["playing"], speed=data["speed"],
        controls=data["controls"],
        ended=None if data["ended"] is None else decode(data["ended"]),
        phrasing=None if data["phrasing"] is None else decode(data["phrasing"]),
        graphs={v: graph for v, graph in data["graphs"]},
        densities=tuple(Coarse(g, side, tuple(ids), tuple(scales),
                               base64.b64decode(b, validate=True))
                        for g, side, ids, scales, b in data["densities"]))
    if data["engine"] is None:
        return run
    return attrs.evolve(run, engine=_unengine(data["engine"], run))
