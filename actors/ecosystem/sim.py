"""The density-field simulation: one basal resource field and one density field per species
on a toroidal grid, advanced a generation at a time.

Per generation: `SUBSTEPS` explicit Euler substeps of feeding (Holling type II on the
resource for basal roles and along directed `consumes` edges only; a scavenger also eats
the dead of what it consumes), mortality, crowding, competition, saturating mutualism and
self-interactions; logistic resource regrowth with a small floor; then one 4-neighbour
dispersal step. The per-cell update uses only + - * / (and max), so every CPU produces the
same bits. A species whose biomass falls below
`EXTINCTION_MEAN` per cell is extinct: its field is zeroed, for good.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import attrs
import numpy as np

from actors.ecosystem.graph import BASAL_ROLES, SPECIES_IDS
from actors.ecosystem.rates import Rates

FIELD = np.float32         # cell precision: half the memory traffic of float64, same bits
                           # on every CPU (IEEE + - * / are exact-rounded at any width)
SUBSTEPS = 2
DT = 1.0 / SUBSTEPS
RESOURCE_FLOOR = 0.02      # regrowth seed so an emptied cell can recover
EXTINCTION_MEAN = 1e-4     # mean density per cell below which a species is gone
DENORMAL_CUT = 1e-12       # densities below this are set to 0 (keeps arithmetic fast)
OCCUPIED = 0.05            # total density at which a cell counts as occupied
MAX_OUTFLOW = 0.5          # dispersal never sends away more than this share of a cell
STRIPE = 16                # spacing of fragmentation barriers, in cells
DIGITS = 6                 # rounding of totals before they enter metrics and digests

# purposes of the per-(seed, generation, purpose) random streams
PURPOSES = {"terrain": 0, "founders": 1, "weather": 2, "hazard_chaos": 3, "pressure_chaos": 4}


def stream(seed: int, generation: int, purpose: str) -> np.random.Generator:
    """The one generator for (seed, generation, purpose)."""
    ss = np.random.SeedSequence(entropy=seed, spawn_key=(generation, PURPOSES[purpose]))
    return np.random.Generator(np.random.PCG64(ss))


@attrs.frozen
class Metrics:
    """What one generation shows: rounded totals, mean resource, predation, alive flags."""

    generation: int
    totals: tuple[float, ...]
    resource: float
    predation: float
    occupied: float
    alive: tuple[bool, ...]
    extinct_now: tuple[str, ...]
    population: tuple[int, ...] = ()  # cells each species holds (density > OCCUPIED);
                                      # not part of the digest

    def digest(self) -> str:
        """Hex digest of the rounded figures (the replay contract)."""
        body = json.dumps([self.generation, self.totals, self.resource, self.predation,
                           self.occupied, self.alive], separators=(",", ":"))
        return hashlib.sha256(body.encode()).hexdigest()[:32]


def _bump(size: int, cy: float, cx: float, radius: float) -> np.ndarray:
    """(1 - d^2/r^2)^2 clipped at 0, on the torus: a blob made of * + - only."""
    axis = np.arange(size, dtype=np.float64)
    dy = np.abs(axis - cy)
    dy = np.minimum(dy, size - dy)
    dx = np.abs(axis - cx)
    dx = np.minimum(dx, size - dx)
    d2 = (dy * dy)[:, None] + (dx * dx)[None, :]
    core = np.maximum(1.0 - d2 / (radius * radius), 0.0)
    return core * core


class Fields:
    """Mutable field state of one run; `step` advances it by one generation, `copy` forks it.

    Fields live in one (S, N, N) array and every per-cell operation writes into a
    preallocated buffer (`out=`): at 64x64 numpy's per-call allocation would otherwise
    cost more than the arithmetic.
    """

    def __init__(self, config: dict[str, Any], graph: dict[str, Any], seed: int,
                 size: int = 64) -> None:
        self.size = size
        self.seed = seed
        self.ids = SPECIES_IDS[:len(graph["species"])]
        self.capacity_map = self._terrain(config["environment"]["distribution"])
        stripes = np.zeros((size, size), FIELD)
        stripes[::STRIPE, :] = 1.0
        stripes[:, ::STRIPE] = 1.0
        self.stripes = stripes
        self.resource = self.capacity_map * 0.8
        self.fields = self._founders(config["founders"], graph)
        self.alive = [True] * len(self.ids)
        plane = (size, size)
        self._buf = {name: np.zeros(plane, FIELD) for name in ("dR", "t1", "t2", "c", "pred")}
        self._dX = np.zeros_like(self.fields)
        self._inflow = np.zeros_like(self.fields)

    def copy(self) -> Fields:
        """An independent fork: own fields, resource and alive flags. The terrain maps are
        never written after construction, and the scratch buffers are written before they
        are read within each `step`, so forks share both (forks of one run are stepped one
        at a time, never from two threads at once)."""
        out = copy.copy(self)
        out.resource = self.resource.copy()
        out.fields = self.fields.copy()
        out.alive = list(self.alive)
        return out

    def _terrain(self, distribution: str) -> np.ndarray:
        """Base capacity map (mean about 1): scattered noise or a few rich clusters."""
        rng = stream(self.seed, 0, "terrain")
        n = self.size
        if distribution == "clustered":
            field = np.full((n, n), 0.35)
            for cy, cx in rng.uniform(0, n, size=(6, 2)):
                field = field + 1.3 * _bump(n, cy, cx, n / 5.0)
            return np.minimum(field, 1.6).astype(FIELD)
        return (0.8 + 0.4 * rng.uniform(size=(n, n))).astype(FIELD)

    def _founders(self, founders: dict[str, str], graph: dict[str, Any]) -> np.ndarray:
        """Initial densities: patches per species; balance scales prey vs predators."""
        rng = stream(self.seed, 0, "founders")
        n = self.size
        patches, radius = (1, n / 3.0) if founders["diversity"] == "focused" else (6, n / 8.0)
        prey_m, pred_m = {"prey_heavy": (1.4, 0.6), "balanced": (1.0, 1.0),
                          "predator_heavy": (0.8, 1.6)}[founders["balance"]]
        fields = np.zeros((len(graph["species"]), n, n))
        for k, s in enumerate(graph["species"]):
            peak = 0.5 * prey_m if s["role"] in BASAL_ROLES else 0.2 * pred_m
            fields[k] = 0.02 * peak
            for cy, cx in rng.uniform(0, n, size=(patches, 2)):
                fields[k] += peak * _bump(n, cy, cx, radius)
        return fields.astype(FIELD)

    def metrics(self, generation: int, predation: float, extinct_now: tuple[str, ...] = (),
                totals: np.ndarray | None = None) -> Metrics:
        """Round the current state into a `Metrics` value (`totals` if already summed)."""
        occupied = float(np.count_nonzero(self.fields.sum(axis=0) > OCCUPIED)) / (
            self.size * self.size)
        if totals is None:
            totals = self.fields.sum(axis=(1, 2), dtype=np.float64)
        population = np.count_nonzero(self.fields > OCCUPIED, axis=(1, 2))
        return Metrics(generation, tuple(round(float(t), DIGITS) for t in totals),
                       round(float(self.resource.mean(dtype=np.float64)), DIGITS),
                       round(predation, DIGITS),
                       round(occupied, DIGITS), tuple(self.alive), extinct_now,
                       tuple(int(p) for p in population))

    def step(self, rates: Rates, generation: int) -> Metrics:
        """Advance one generation under `rates`; returns its metrics."""
        n_sp = len(self.ids)
        live = self.alive
        b = self._buf
        dR, t1, t2, c, pred = b["dR"], b["t1"], b["t2"], b["c"], b["pred"]
        dX = self._dX
        weather = stream(self.seed, generation, "weather").uniform(
            0.85, 1.15, (self.size,) * 2).astype(FIELD)
        # Python floats and FIELD arrays keep every operation in FIELD precision.
        cap = self.capacity_map * float(rates.capacity)
        if rates.fragmentation > 0.0:
            cap = cap * (1.0 - float(rates.fragmentation) * self.stripes)
        inv_cap = 1.0 / cap
        regrow = weather * float(rates.regrowth)
        feedback = float(rates.feedback)
        neg_crowd = (-rates.crowding[:, None, None]).astype(FIELD)
        mort = rates.mortality[:, None, None].astype(FIELD)
        basal = [(i, float(rates.uptake[i]), float(rates.efficiency[i])) for i in range(n_sp)
                 if rates.uptake[i] > 0.0 and live[i]]
        edges = [(j, i, float(rates.attack[j, i]), float(rates.efficiency[j]))
                 for j in range(n_sp) for i in range(n_sp)
                 if rates.attack[j, i] > 0.0 and live[j] and live[i]]
        pairs = [(i, k, float(rates.competition[i, k]), float(rates.mutualism[i, k]),
                  float(rates.mutualism[k, i]))
                 for i in range(n_sp) for k in range(i + 1, n_sp) if live[i] and live[k]]
        selfish = [(i, float(rates.cooperation[i]),
                    float(rates.cannibalism[i]) * (1.0 - 0.5 * float(rates.efficiency[i])))
                   for i in range(n_sp) if live[i]]
        scavengers = [(s, float(rates.scavenging[s]),
                       [(k, float(rates.mortality[k]), float(rates.carrion[s, k]))
                        for k in range(n_sp) if rates.carrion[s, k] > 0.0 and live[k]])
                      for s in range(n_sp) if rates.scavenging[s] > 0.0 and live[s]]
        pred.fill(0.0)
        R, X = self.resource, self.fields
        for _ in range(SUBSTEPS):
            # resource: regrow * (R + floor) * (1 - R/K) [* max(0, 1 + fb (1 - R/K))]
            np.multiply(R, inv_cap, out=t1)
            np.subtract(1.0, t1, out=t1)
            np.add(R, RESOURCE_FLOOR, out=dR)
            dR *= t1
            dR *= regrow
            if feedback > 0.0:
                t1 *= feedback
                t1 += 1.0
                # Far above K (a fragmentation barrier lowered it) the factor would turn
                # negative and the decline into runaway growth, to inf and NaN.
                np.maximum(t1, 0.0, out=t1)
                dR *= t1
            # every species: X * (-m - q X)
            np.multiply(X, neg_crowd, out=dX)
            dX -= mort
            dX *= X
            for i, u, e in basal:  # Holling II on the resource: uR / (1 + uR) * X
                np.multiply(R, u, out=c)
                np.add(c, 1.0, out=t2)
                c /= t2
                c *= X[i]
                dR -= c
                c *= e
                dX[i] += c
            for j, i, a, e in edges:  # j eats i: a X_i / (1 + a X_i) * X_j
                np.multiply(X[i], a, out=c)
                np.add(c, 1.0, out=t2)
                c /= t2
                c *= X[j]
                dX[i] -= c
                pred += c
                c *= e
                dX[j] += c
            for i, k, comp, mu_ik, mu_ki in pairs:
                if comp > 0.0:
                    np.multiply(X[i], X[k], out=c)
                    c *= comp
                    dX[i] -= c
                    dX[k] -= c
                for gain, other, rate in ((i, k, mu_ik), (k, i, mu_ki)):
                    if rate > 0.0:  # saturating: rate X_gain X_other / (1 + X_other)
                        np.add(X[other], 1.0, out=t2)
                        np.divide(X[other], t2, out=c)
                        c *= X[gain]
                        c *= rate
                        dX[gain] += c
            for i, coop, cann in selfish:
                if coop > 0.0:  # saturating self-benefit: coop X^2 / (1 + X)
                    np.add(X[i], 1.0, out=t2)
                    np.divide(X[i], t2, out=c)
                    c *= X[i]
                    c *= coop
                    dX[i] += c
                if cann > 0.0:  # cannibalism net of the half that is converted back
                    np.multiply(X[i], X[i], out=c)
                    c *= cann
                    dX[i] -= c
            for s, rate, dead in scavengers:  # carrion's mortality, saturating in X_s
                if not dead:
                    continue
                t1.fill(0.0)
                for k, m, share in dead:
                    np.multiply(X[k], m, out=c)
                    if share != 1.0:  # a ramping edge (x * 1.0 is x: whole shares skip it)
                        c *= share
                    t1 += c
                np.add(X[s], 1.0, out=t2)
                np.divide(X[s], t2, out=c)
                c *= t1
                c *= rate
                dX[s] += c
            dR *= DT
            R += dR
            np.maximum(R, 0.0, out=R)
            dX *= DT
            X += dX
            np.maximum(X, 0.0, out=X)
        self._disperse(rates)
        return self._census(generation, float(pred.sum(dtype=np.float64)) * DT)

    def _disperse(self, rates: Rates) -> None:
        """4-neighbour dispersal on the torus; avoidance raises the outflow near the avoided."""
        X = self.fields
        out = X * rates.dispersal[:, None, None].astype(FIELD)
        c, t2 = self._buf["c"], self._buf["t2"]
        for i in range(len(self.ids)):
            avoided = [k for k in range(len(self.ids)) if k != i and rates.avoidance[i, k] > 0.0
                       and self.alive[i] and self.alive[k]]
            for k in avoided:
                np.add(X[k], 1.0, out=t2)
                np.divide(X[k], t2, out=c)
                c *= float(rates.avoidance[i, k])
                c += 1.0
                out[i] *= c
            if avoided:  # never send away more than half of a cell
                np.multiply(X[i], MAX_OUTFLOW, out=c)
                np.minimum(out[i], c, out=out[i])
        inflow = self._inflow
        inflow[:, 1:, :] = out[:, :-1, :]
        inflow[:, 0, :] = out[:, -1, :]
        inflow[:, :-1, :] += out[:, 1:, :]
        inflow[:, -1, :] += out[:, 0, :]
        inflow[:, :, 1:] += out[:, :, :-1]
        inflow[:, :, 0] += out[:, :, -1]
        inflow[:, :, :-1] += out[:, :, 1:]
        inflow[:, :, -1] += out[:, :, 0]
        X -= out
        inflow *= 0.25
        X += inflow
        X[X < DENORMAL_CUT] = 0.0

    def _census(self, generation: int, predation: float) -> Metrics:
        """Declare extinctions (a discrete event) and return the generation's metrics."""
        totals = self.fields.sum(axis=(1, 2), dtype=np.float64)
        floor = EXTINCTION_MEAN * self.size * self.size
        gone = []
        for i in range(len(self.ids)):
            if self.alive[i] and totals[i] < floor:
                self.alive[i] = False
                self.fields[i] = 0.0
                totals[i] = 0.0
                gone.append(self.ids[i])
        return self.metrics(generation, predation, tuple(gone), totals)
