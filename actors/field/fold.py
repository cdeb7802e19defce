"""The event fold: a field's state as a pure function of its events.

`apply_event(prev, ev) -> next` never mutates `prev`: per-cell and per-tile arrays
live in persistent chunked stores (`cellstore.py`) that share untouched chunks, and
everything else is frozen attrs values and tuples, so every earlier state stays
intact and readable (spectators scrub history; replay rebuilds the same state).

The fold decides nothing: which cells are accepted, which tiles are solved and who
meets whom are in the events, decided by `referee.py`. The fold only records them
and keeps the counts that analysis, leaderboards and rendering read.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import attrs
import numpy as np

from actors.field.cellstore import CellStore
from actors.field.events import (
    CommitEvent,
    Event,
    GameRules,
    GrowEvent,
    JoinEvent,
    ManifestEvent,
    Meet,
    RetractEvent,
    RevealEvent,
    Solved,
)
from actors.field.geometry import Geometry, Manifest
from actors.field.health import HealthWindow, fresh_window, record

HIDDEN, REVEALED, SOLVED = 0, 1, 2  # tile status
STATUS_NAMES = ("hidden", "revealed", "solved")
UNKNOWN, GIVEN, FORCED, GUESS = 0, 1, 2, 3  # cell source
MAP_TILE = 64  # side, in cells, of the squares a renderer redraws ("map tiles")
IMPLICIT_AGENT = "a0"  # the seed's single implicit player: writes that name no agent
HIST_BUCKETS = 24  # log2 buckets of batch sizes and gaps


class FoldError(ValueError):
    """An event that cannot follow the state (wrong revision, unknown agent, no field yet)."""


@attrs.frozen
class AgentInfo:
    """Who an agent is; set at join and never changed."""

    id: str
    name: str
    model: str
    user: str
    harness: str
    joined: int  # revision of the join event
    seed_tile: int
    machine: str = ""  # a digest of the machine id the agent joined with ("" without one)


@attrs.frozen
class AgentStats:
    """What an agent did, as counts the analysis and the boards read."""

    forced: int = 0
    guess: int = 0
    wrong: int = 0
    reveals: int = 0
    solved: int = 0
    reward: int = 0
    meets: int = 0
    retracted: int = 0
    last_solved: int | None = None
    last_commit_t: int | None = None
    revealed_tiles: tuple[int, ...] = ()
    solved_tiles: tuple[int, ...] = ()
    steps: tuple[int, int, int, int] = (0, 0, 0, 0)  # bfs, dfs, greedy, informative reveals
    health: HealthWindow = attrs.field(factory=fresh_window)


@attrs.frozen
class Totals:
    """Field-wide counts."""

    reward: int = 0
    forced: int = 0
    guess: int = 0
    wrong: int = 0
    known: int = 0
    revealed: int = 0
    solved: int = 0
    meets: int = 0
    commits: int = 0
    retracted: int = 0


@attrs.frozen
class Groups:
    """Persistent union-find over agent indices (union by size; ties keep the smaller index)."""

    parent: tuple[int, ...] = ()
    size: tuple[int, ...] = ()

    def add(self) -> Groups:
        """One more agent, alone in its group."""
        return Groups(self.parent + (len(self.parent),), self.size + (1,))

    def find(self, i: int) -> int:
        """The root agent index of i's group (no path compression: the value is shared)."""
        while self.parent[i] != i:
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> Groups:
        """The groups with a's and b's merged."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return self
        if (self.size[rb], -rb) > (self.size[ra], -ra):
            ra, rb = rb, ra
        parent, size = list(self.parent), list(self.size)
        parent[rb] = ra
        size[ra] += size[rb]
        return Groups(tuple(parent), tuple(size))


def _hist_add(hist: tuple[int, ...], value: int) -> tuple[int, ...]:
    b = min(max(value, 0).bit_length(), HIST_BUCKETS - 1)
    return hist[:b] + (hist[b] + 1,) + hist[b + 1:]


_EMPTY_HIST = (0,) * HIST_BUCKETS


@attrs.frozen
class State:
    """A field at one revision. Read it; change it only through `apply_event`.

    Per cell (G*G): `values` (-1 unknown, 0, 1), `source` (UNKNOWN/GIVEN/FORCED/GUESS),
    `owner` (index of the agent whose commit made it known, -1 otherwise).
    Per tile: `status` (HIDDEN/REVEALED/SOLVED), `revealer` and `solver` (agent index or -1).
    `batch_hist` / `gap_hist`: log2 histograms of accepted cells per commit and of
    milliseconds between an agent's commits (bucket b holds values of bit length b).
    `dirty`: the map tiles (MAP_TILE squares, id = row * map_cols + col) the last event
    changed, for incremental rendering.
    """

    revision: int = 0
    manifest: Manifest | None = None
    geo: Geometry | None = attrs.field(default=None, eq=False, repr=False)
    boxes: np.ndarray = attrs.field(factory=lambda: np.zeros((0, 4), np.int32), eq=False,
                                    repr=False)  # per tile x0, y0, w, h (derived from geo)
    rules: GameRules = attrs.field(factory=GameRules)
    ended: bool = False
    grown: tuple[int, ...] = ()  # revisions of the grow events that added tiles
    values: CellStore = attrs.field(factory=partial(CellStore.new, 0, np.int8, -1))
    source: CellStore = attrs.field(factory=partial(CellStore.new, 0, np.int8, UNKNOWN))
    owner: CellStore = attrs.field(factory=partial(CellStore.new, 0, np.int32, -1))
    status: CellStore = attrs.field(factory=partial(CellStore.new, 0, np.int8, HIDDEN))
    revealer: CellStore = attrs.field(factory=partial(CellStore.new, 0, np.int32, -1))
    solver: CellStore = attrs.field(factory=partial(CellStore.new, 0, np.int32, -1))
    agents: tuple[AgentInfo, ...] = ()
    ids: Mapping[str, int] = attrs.field(factory=dict, eq=False, repr=False)  # id -> index
    stats: tuple[AgentStats, ...] = ()
    groups: Groups = Groups()
    totals: Totals = Totals()
    batch_hist: tuple[int, ...] = _EMPTY_HIST
    gap_hist: tuple[int, ...] = _EMPTY_HIST
    dirty: frozenset[int] = frozenset()

    def agent_index(self, agent: str) -> int | None:
        """The index of agent id `agent` (in join order), or None."""
        return self.ids.get(agent)

    def next_agent(self) -> str:
        """The id the next join gets: a1, a2, ... (the implicit a0 takes no number)."""
        return f"a{len(self.agents) + 1 - (IMPLICIT_AGENT in self.ids)}"

    def group_of(self, i: int) -> tuple[int, ...]:
        """Agent indices in i's group, ascending."""
        root = self.groups.find(i)
        return tuple(j for j in range(len(self.agents)) if self.groups.find(j) == root)

    @property
    def map_cols(self) -> int:
        """Map tiles per row of the canvas."""
        return -(-self.manifest.G // MAP_TILE) if self.manifest else 0


def new_state() -> State:
    """The state before any event (revision 0, no field)."""
    return State()


def apply_event(prev: State, ev: Event) -> State:
    """The state after `ev`; `prev` is left exactly as it was.

    Raises FoldError when `ev` cannot follow `prev` (its rev is not prev.revision + 1,
    it names an unknown agent, or it precedes the manifest).
    """
    if ev.rev != prev.revision + 1:
        raise FoldError(f"event rev {ev.rev} cannot follow revision {prev.revision}")
    if isinstance(ev, ManifestEvent):
        return _manifest(prev, ev)
    if prev.geo is None:
        raise FoldError(f"a {type(ev).__name__} before the manifest")
    if isinstance(ev, JoinEvent):
        return _join(prev, ev)
    if isinstance(ev, GrowEvent):
        return _grow(prev, ev)
    i = prev.agent_index(ev.agent)
    if i is None:
        raise FoldError(f"unknown agent {ev.agent!r}")
    if isinstance(ev, RevealEvent):
        return _reveal(prev, ev, i)
    if isinstance(ev, CommitEvent):
        return _commit(prev, ev, i)
    return _retract(prev, ev, i)


def replay(events: list[Event], start: State | None = None) -> State:
    """Fold `events` in order from `start` (default: the empty state)."""
    s = start if start is not None else new_state()
    for ev in events:
        s = apply_event(s, ev)
    return s


# ---------------------------------------------------------------- per kind


def _manifest(prev: State, ev: ManifestEvent) -> State:
    if prev.manifest is not None:
        raise FoldError("the field already has a manifest")
    geo = Geometry(ev.manifest)
    n_cells, n_tiles = geo.G * geo.G, len(geo.tiles)
    s = State(
        revision=ev.rev, manifest=ev.manifest, geo=geo, boxes=boxes_of(geo), rules=ev.rules,
        values=CellStore.new(n_cells, np.int8, -1),
        source=CellStore.new(n_cells, np.int8, UNKNOWN),
        owner=CellStore.new(n_cells, np.int32, -1),
        status=CellStore.new(n_tiles, np.int8, HIDDEN),
        revealer=CellStore.new(n_tiles, np.int32, -1),
        solver=CellStore.new(n_tiles, np.int32, -1),
    )
    return attrs.evolve(s, dirty=frozenset(range(s.map_cols * s.map_cols)))


def _join(prev: State, ev: JoinEvent) -> State:
    implicit = ev.agent == IMPLICIT_AGENT and IMPLICIT_AGENT not in prev.ids
    if not implicit and ev.agent != prev.next_agent():
        raise FoldError(f"agent ids run a1, a2, ... (and a0 once); expected {prev.next_agent()}")
    info = AgentInfo(ev.agent, ev.name, ev.model, ev.user, ev.harness, ev.rev, ev.seed_tile,
                     ev.machine)
    return attrs.evolve(
        prev, revision=ev.rev, agents=prev.agents + (info,),
        ids={**prev.ids, ev.agent: len(prev.agents)}, stats=prev.stats + (AgentStats(),),
        groups=prev.groups.add(), dirty=_tile_boxes(prev, [ev.seed_tile]))


def _reveal(prev: State, ev: RevealEvent, i: int) -> State:
    ids = [c for c, _ in ev.givens]
    st = prev.stats[i]
    steps = st.steps
    if ev.step:  # an informative reveal: count the criteria it met
        flags = [name in ev.step for name in ("bfs", "dfs", "greedy")]
        steps = (steps[0] + flags[0], steps[1] + flags[1], steps[2] + flags[2], steps[3] + 1)
    s = attrs.evolve(
        prev, revision=ev.rev,
        values=prev.values.set(ids, [v for _, v in ev.givens]),
        source=prev.source.set(ids, GIVEN),
        status=prev.status.set([ev.tile], REVEALED),
        revealer=prev.revealer.set([ev.tile], i),
        stats=_put(prev.stats, i, attrs.evolve(
            st, reveals=st.reveals + 1, revealed_tiles=st.revealed_tiles + (ev.tile,),
            steps=steps)),
        totals=attrs.evolve(prev.totals, revealed=prev.totals.revealed + 1,
                            known=prev.totals.known + len(ids)),
    )
    return _settle(s, ev.solved, ev.meets, _cells_dirty(s, ids) | _tile_boxes(s, [ev.tile]))


def _commit(prev: State, ev: CommitEvent, i: int) -> State:
    ids = [a.id for a in ev.accepted]
    forced = sum(a.cls == "forced" for a in ev.accepted)
    guess = len(ev.accepted) - forced
    wrong = sum(r.reason == "wrong" for r in ev.rejected)
    st = prev.stats[i]
    health = record(st.health, len(ev.accepted), wrong, ev.rev)
    t = prev.totals
    s = attrs.evolve(
        prev, revision=ev.rev,
        values=prev.values.set(ids, [a.v for a in ev.accepted]),
        source=prev.source.set(ids, [FORCED if a.cls == "forced" else GUESS for a in ev.accepted]),
        owner=prev.owner.set(ids, i),
        stats=_put(prev.stats, i, attrs.evolve(
            st, forced=st.forced + forced, guess=st.guess + guess, wrong=st.wrong + wrong,
            health=health, last_commit_t=ev.t)),
        totals=attrs.evolve(t, forced=t.forced + forced, guess=t.guess + guess,
                            wrong=t.wrong + wrong, known=t.known + len(ids),
                            commits=t.commits + 1),
        batch_hist=_hist_add(prev.batch_hist, len(ev.accepted)),
        gap_hist=prev.gap_hist if ev.dt_ms is None else _hist_add(prev.gap_hist, ev.dt_ms),
    )
    return _settle(s, ev.solved, ev.meets, _cells_dirty(s, ids))


def _retract(prev: State, ev: RetractEvent, i: int) -> State:
    ids = list(ev.retracted)
    st = prev.stats[i]
    return attrs.evolve(
        prev, revision=ev.rev,
        values=prev.values.set(ids, -1), source=prev.source.set(ids, UNKNOWN),
        owner=prev.owner.set(ids, -1),
        stats=_put(prev.stats, i, attrs.evolve(st, retracted=st.retracted + len(ids))),
        totals=attrs.evolve(prev.totals, known=prev.totals.known - len(ids),
                            retracted=prev.totals.retracted + len(ids)),
        dirty=_cells_dirty(prev, ids),
    )


def _grow(prev: State, ev: GrowEvent) -> State:
    if not ev.tiles:
        return attrs.evolve(prev, revision=ev.rev, ended=True, dirty=frozenset())
    m = prev.manifest
    manifest = attrs.evolve(m, tiles=m.tiles + ev.tiles, seed_rings=m.seed_rings + (ev.seed_ring,))
    geo = prev.geo.extend(manifest)
    n = len(geo.tiles)
    s = attrs.evolve(prev, revision=ev.rev, manifest=manifest, geo=geo, boxes=boxes_of(geo),
                     status=prev.status.extend(n), revealer=prev.revealer.extend(n),
                     solver=prev.solver.extend(n), grown=prev.grown + (ev.rev,))
    return attrs.evolve(s, dirty=_tile_boxes(s, [t.id for t in ev.tiles]))


def _settle(s: State, solved: tuple[Solved, ...], meets: tuple[Meet, ...],
            dirty: frozenset[int]) -> State:
    """Record the tiles an event solved and the meets it caused."""
    if not solved and not meets:
        return attrs.evolve(s, dirty=dirty)
    stats = list(s.stats)
    tiles = [x.tile for x in solved]
    solvers = []
    for x in solved:
        j = s.agent_index(x.agent)
        if j is None:
            raise FoldError(f"unknown agent {x.agent!r}")
        solvers.append(j)
        st = stats[j]
        stats[j] = attrs.evolve(st, solved=st.solved + 1, reward=st.reward + x.reward,
                                last_solved=x.tile, solved_tiles=st.solved_tiles + (x.tile,))
    groups = s.groups
    for mt in meets:
        a, b = s.agent_index(mt.agent), s.agent_index(mt.other)
        if a is None or b is None:
            raise FoldError(f"a meet of unknown agents {mt.agent!r}, {mt.other!r}")
        groups = groups.union(a, b)
        for j in (a, b):
            stats[j] = attrs.evolve(stats[j], meets=stats[j].meets + 1)
    t = s.totals
    return attrs.evolve(
        s, status=s.status.set(tiles, SOLVED), solver=s.solver.set(tiles, solvers),
        stats=tuple(stats), groups=groups,
        totals=attrs.evolve(t, solved=t.solved + len(solved), meets=t.meets + len(meets),
                            reward=t.reward + sum(x.reward for x in solved)),
        dirty=dirty | _tile_boxes(s, tiles))


# ---------------------------------------------------------------- helpers


def boxes_of(geo: Geometry) -> np.ndarray:
    """Per tile x0, y0, w, h (read-only): `State.boxes` of a field of geometry `geo`."""
    boxes = np.array([(t.shape.x0, t.shape.y0, t.shape.w, t.shape.h) for t in geo.tiles],
                     dtype=np.int32).reshape(-1, 4)
    boxes.flags.writeable = False
    return boxes


def _put(items: tuple, i: int, value: object) -> tuple:
    return items[:i] + (value,) + items[i + 1:]


def _cells_dirty(s: State, ids: list[int]) -> frozenset[int]:
    if not ids:
        return frozenset()
    y, x = np.divmod(np.asarray(ids, dtype=np.int64), s.manifest.G)
    return frozenset((np.unique((y // MAP_TILE) * s.map_cols + x // MAP_TILE)).tolist())


def _tile_boxes(s: State, tiles: list[int]) -> frozenset[int]:
    out: set[int] = set()
    cols = s.map_cols
    for t in tiles:
        sh = s.geo.tiles[t].shape
        for my in range(sh.y0 // MAP_TILE, (sh.y0 + sh.h - 1) // MAP_TILE + 1):
            out.update(my * cols + mx
                       for mx in range(sh.x0 // MAP_TILE, (sh.x0 + sh.w - 1) // MAP_TILE + 1))
    return frozenset(out)
