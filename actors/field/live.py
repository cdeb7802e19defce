"""The pure side of a live field: game ids, daily names, start settings, growth triggers,
publish spacing, history checkpoints, the spectator view and the all-time board.

Nothing here reads a clock: times (trio seconds, dates) arrive as arguments.
"""

from __future__ import annotations

import bisect
import re
from datetime import date, timedelta
from typing import Any

import attrs
import numpy as np

from actors.field.events import (
    CommitEvent,
    Event,
    GameRules,
    GrowEvent,
    ManifestEvent,
    RetractEvent,
    RevealEvent,
)
from actors.field.fold import HIDDEN, MAP_TILE, SOLVED, State, new_state, replay
from actors.field.health import health_of
from actors.field.leaderboard import Boards, Ordered, merge_boards
from protocol.ops.field import (
    MAX_CANVAS,
    MAX_CHUNK,
    MAX_DEPTH,
    MAX_GROW_S,
    MAX_SEED,
    MAX_SIZE,
    MIN_CHUNK,
    MIN_GROW_S,
    MIN_SIZE,
)

GAME_ID_RE = re.compile(r"^[a-zA-Z0-9_-]{1,80}$")
DAILY_PREFIX = "day-"
PUSH_INTERVAL = 0.05  # seconds between a field's pushes: at most 20 a second per topic
FANOUT_RATE = 8000.0  # push frames a second to all of a field's spectators together (each
# a non-blocking write of a frame made once: ~20 us, docs/performance.md)
GROW_SHARE = 0.75  # revealed or solved share of the tiles that triggers a growth
CHECKPOINT_EVERY = 16  # revisions between the states kept for history at first (a replay
# of 15 events is ~2 ms); the spacing doubles each time MAX_CHECKPOINTS is passed
MAX_CHECKPOINTS = 128
MAX_HELD_EVENTS = 4096  # the latest events a field holds for history (~1 KB each): what
# spectators scrub and replay near live (the page's Replay is 120 steps, a resume 200)
# folds from memory; an older revision reads at most one checkpoint spacing from the store
MAX_HELD_CELLS = 65536  # cells in the events held: 16 commits of MAX_BATCH (~0.45 MB each)

# The daily field: a growing field on the full canvas, fog on.
DAILY_CANVAS, DAILY_CHUNKS, DAILY_CHUNK, DAILY_GROW_S = 1000, 3, 40, 1800.0


class StartError(ValueError):
    """Start settings that cannot make a field; `path` names the bad argument."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


@attrs.frozen
class Progress:
    """How far a generation got: `stage` tiles (filling slots with solutions) then givens
    (choosing each tile's givens), `done` of `planned` in that stage."""

    stage: str
    done: int
    planned: int

    @property
    def share(self) -> float:
        """The whole generation's share done (each stage half of it)."""
        part = self.done / self.planned if self.planned else 1.0
        return min(1.0, (part + (self.stage == "givens")) / 2)

    def text(self) -> str:
        """E.g. "tiles 37 of 165"."""
        return f"{self.stage} {self.done} of {self.planned}"

    def to_json(self) -> dict[str, Any]:
        """Plain JSON value (share rounded to 3 places)."""
        return {"stage": self.stage, "done": self.done, "planned": self.planned,
                "share": round(self.share, 3)}


@attrs.frozen
class StartPlan:
    """What to generate and how to referee it, from validated start settings."""

    seed: int
    layout: str  # "scatter" or "chunks"
    size: int  # scatter side, or the canvas side G
    chunks: int
    chunk: int
    rules: GameRules
    grow_every: float | None  # seconds between timed growths; None: the field never grows


def game_of(actor_id: str) -> str:
    """The game id of actor `field:<game id>`."""
    return actor_id.partition(":")[2]


def daily_id(day: date) -> str:
    """The game id of the daily field of `day` (UTC)."""
    return f"{DAILY_PREFIX}{day.isoformat()}"


def daily_date(game: str) -> date | None:
    """The day a daily game id names, or None for any other game (only `day-YYYY-MM-DD`:
    other ISO spellings of a date would name a second daily field of the same day)."""
    if not game.startswith(DAILY_PREFIX):
        return None
    try:
        day = date.fromisoformat(game.removeprefix(DAILY_PREFIX))
    except ValueError:
        return None
    return day if daily_id(day) == game else None


def yesterday(day: date) -> date:
    """The day before `day`."""
    return day - timedelta(days=1)


_CHUNK_SIDE = f"a chunk side is {MIN_CHUNK}..{MAX_CHUNK} cells"


def plan_start(seed: int, size: int | None, canvas: int, chunks: int, chunk: int, guess: str,
               depth: int, grow_every: float | None, fog: bool | None,
               kind: str | None = None) -> StartPlan:
    """Validate start settings (StartError naming the argument) into a StartPlan.

    `kind` scatter is a size x size field; field is chunks x chunks chunks of `chunk`
    cells, growing on the canvas with `grow_every`, else a fixed field of just those
    chunks; None picks field when a growth is given and scatter otherwise.
    """
    if not 0 <= seed <= MAX_SEED:
        raise StartError("args.seed", "a seed is in 0..2^53-1")
    if not 0 <= depth <= MAX_DEPTH:
        raise StartError("args.depth", f"the bifurcation depth is 0..{MAX_DEPTH}")
    if grow_every is not None and not MIN_GROW_S <= grow_every <= MAX_GROW_S:
        raise StartError("args.grow.every_s",
                         f"growth runs every {MIN_GROW_S:g}..{MAX_GROW_S:g} seconds")
    growing = grow_every is not None
    rules = GameRules(guess=guess, depth=depth, fog=growing if fog is None else fog)
    if kind == "scatter" and growing:
        raise StartError("args.grow", "a scatter field never grows; start kind field to grow")
    if kind == "field" and not growing:
        if size is not None:
            raise StartError("args.size", "a field of chunks takes chunks/chunk, not size")
        if not MIN_CHUNK <= chunk <= MAX_CHUNK:
            raise StartError("args.chunk", _CHUNK_SIDE)
        if not 1 <= chunks <= MAX_CANVAS // chunk:
            raise StartError("args.chunks", f"1..{MAX_CANVAS // chunk} chunks of {chunk} fit "
                             "the largest canvas")
        return StartPlan(seed, "chunks", chunks * chunk, chunks, chunk, rules, None)
    if not growing:
        if size is None or not MIN_SIZE <= size <= MAX_SIZE:
            raise StartError("args.size", f"a field without growth needs a size in "
                             f"{MIN_SIZE}..{MAX_SIZE}")
        return StartPlan(seed, "scatter", size, 0, 0, rules, None)
    if size is not None:
        raise StartError("args.size", "a growing field takes canvas/chunks/chunk, not size")
    if not MIN_CHUNK <= chunk <= MAX_CHUNK:
        raise StartError("args.chunk", _CHUNK_SIDE)
    if not chunk <= canvas <= MAX_CANVAS:
        raise StartError("args.canvas", f"the canvas side is chunk..{MAX_CANVAS}")
    if not 1 <= chunks <= canvas // chunk:
        raise StartError("args.chunks", f"1..{canvas // chunk} chunks of {chunk} fit the canvas")
    return StartPlan(seed, "chunks", canvas, chunks, chunk, rules, grow_every)


def daily_plan(day: date) -> StartPlan:
    """The daily field's settings; its seed comes from its date."""
    return plan_start(day.toordinal(), None, DAILY_CANVAS, DAILY_CHUNKS, DAILY_CHUNK, "accept",
                      0, DAILY_GROW_S, True)


def growth_due(s: State) -> str | None:
    """Why the field should grow now ("all_solved", "most_revealed"), or None."""
    if s.geo is None or s.ended or not len(s.geo.tiles):
        return None
    status = s.status.to_array()
    if (status == SOLVED).all():
        return "all_solved"
    if (status != HIDDEN).mean() >= GROW_SHARE:
        return "most_revealed"
    return None


class History:
    """A field's recent events with a fold state kept every CHECKPOINT_EVERY revisions and
    after every event that lays out the canvas (the manifest, a growth: folding one builds
    the canvas's cell index again, 16 ms at 1,232 tiles), so the state at any revision is a
    short, cheap replay away. Past MAX_CHECKPOINTS states the spacing doubles and the
    periodic states off it are dropped, which bounds the memory they pin while no replay is
    longer than the spacing (under 2 x revisions / MAX_CHECKPOINTS); the layout ones stay (a
    field grows a bounded number of times: its canvas is at most MAX_CANVAS).

    Only the most recent events are held (MAX_HELD_EVENTS, of MAX_HELD_CELLS cells at
    most): a field played for long would otherwise hold every event it ever had (a seated
    agent looping commit / retract adds one an ask). `state_at` answers a revision whose
    replay from its checkpoint the held events cover (`held`); for an older one the caller
    folds the stored events after `base(revision)` from `checkpoints[base]`.

    A field loaded from a store snapshot starts its history at the snapshot's state
    (`first`): the revisions before it are the stored events it skipped, whose checkpoints
    `prepend` adds once they are folded again."""

    def __init__(self, start: State | None = None) -> None:
        start = new_state() if start is None else start
        self.first = start.revision  # the earliest revision answered
        self.revision = start.revision  # the latest
        self.events: list[Event] = []  # the held events: revisions held_from + 1 .. revision
        self.cells = 0  # held in them (`_cells`)
        self.checkpoints: dict[int, State] = {self.first: start}
        self.layouts: set[int] = set()  # revisions of the manifest and the growths
        self.every = CHECKPOINT_EVERY  # revisions between the periodic states

    @property
    def held_from(self) -> int:
        """The revision the held events start after."""
        return self.revision - len(self.events)

    def add(self, ev: Event, after: State) -> None:
        """Record `ev`, whose fold gave `after`."""
        self.events.append(ev)
        self.cells += _cells(ev)
        self.revision = after.revision
        self._trim()
        if isinstance(ev, ManifestEvent | GrowEvent):
            self.layouts.add(after.revision)
            self.checkpoints[after.revision] = after
        elif after.revision % self.every == 0:
            self.checkpoints[after.revision] = after
            self._thin()

    def prepend(self, earlier: History) -> None:
        """Take in the history of revisions 0..first (folded from the stored events): its
        checkpoints, and its held events while the bound leaves room for them."""
        if earlier.first != 0 or earlier.revision != self.first:
            raise ValueError(f"a history of revisions {earlier.first}..{earlier.revision} "
                             f"does not end at {self.first}")
        if self.held_from == self.first:  # nothing dropped yet: they continue the held ones
            self.events = earlier.events + self.events
            self.cells += earlier.cells
            self._trim()
        self.checkpoints = {**earlier.checkpoints, **self.checkpoints}
        self.layouts |= earlier.layouts
        self.every = max(self.every, earlier.every)
        self.first = 0
        self._thin()

    def base(self, revision: int) -> int:
        """The revision of the nearest state kept at or before `revision` (first..)."""
        if revision < self.first:
            raise ValueError(f"revision {revision} is before {self.first}, the first held")
        revs = sorted(self.checkpoints)
        return revs[bisect.bisect_right(revs, revision) - 1]

    def held(self, revision: int) -> bool:
        """Whether `state_at(revision)` can answer: the events after its checkpoint are held
        (`revision` in first..revision)."""
        return self._held(self.base(revision), revision)

    def _held(self, base: int, revision: int) -> bool:
        """The events from checkpoint `base` up to `revision` are held."""
        return base >= min(revision, self.held_from)

    def state_at(self, revision: int) -> State:
        """The state at `revision` (first..revision); LookupError when it is not `held`."""
        if not self.first <= revision <= self.revision:
            raise ValueError(f"revision {revision} is not in {self.first}..{self.revision}")
        base, start = self.base(revision), self.held_from
        if not self._held(base, revision):
            raise LookupError(f"the events after revision {base} are not held; fold the "
                              "stored ones")
        return replay(self.events[base - start:revision - start], self.checkpoints[base])

    def _trim(self) -> None:
        """Drop the oldest events past MAX_HELD_EVENTS or MAX_HELD_CELLS."""
        n = 0
        while n < len(self.events) and (len(self.events) - n > MAX_HELD_EVENTS
                                        or self.cells > MAX_HELD_CELLS):
            self.cells -= _cells(self.events[n])
            n += 1
        del self.events[:n]

    def _thin(self) -> None:
        while len(self.checkpoints) - len(self.layouts) > MAX_CHECKPOINTS:
            self.every *= 2
            self.checkpoints = {r: s for r, s in self.checkpoints.items()
                                if r in self.layouts or r == self.first or r % self.every == 0}


def _cells(ev: Event) -> int:
    """What an event holds in memory, in cells (at least 1): a commit of MAX_BATCH accepted
    cells is ~0.45 MB, a small event ~1 KB."""
    if isinstance(ev, CommitEvent):
        return 1 + len(ev.accepted) + len(ev.rejected)
    if isinstance(ev, RetractEvent):
        return 1 + len(ev.retracted)
    if isinstance(ev, RevealEvent):
        return 1 + len(ev.givens)
    return 1


def view_of(s: State, game: str, status: str) -> dict[str, Any]:
    """The spectator view: manifest, per-tile status and owners, known cells, agents.

    `cells` covers the bounding box of the tiles: one character per cell, row by row:
    '.' unknown or hole, '0'/'1' a given, '2'/'3' a committed 0/1. `grown` lists the
    revisions of the growths (the page's slider marks them).
    """
    out: dict[str, Any] = {"game": game, "status": status, "revision": s.revision,
                           "map_tile": MAP_TILE}
    if s.geo is None:
        return out
    G = s.manifest.G
    boxes = s.boxes
    if len(boxes):
        x0, y0 = int(boxes[:, 0].min()), int(boxes[:, 1].min())
        x1, y1 = int((boxes[:, 0] + boxes[:, 2]).max()), int((boxes[:, 1] + boxes[:, 3]).max())
    else:
        x0 = y0 = x1 = y1 = 0
    grid = np.arange(y0, y1)[:, None] * G + np.arange(x0, x1)[None, :]
    vals = s.values.take(grid.ravel())
    src = s.source.take(grid.ravel())
    code = np.where(vals < 0, ord("."), np.where(src == 1, ord("0"), ord("2")) + vals)
    rows = code.astype(np.uint8).reshape(y1 - y0, x1 - x0)
    out.update(
        G=G, ended=s.ended, grown=list(s.grown), rules=attrs.asdict(s.rules),
        manifest=s.manifest.to_dict(),
        tile_status="".join("hrs"[v] for v in s.status.to_array().tolist()),
        solver=s.solver.to_array().tolist(), revealer=s.revealer.to_array().tolist(),
        cells={"x": x0, "y": y0, "w": x1 - x0, "h": y1 - y0,
               "rows": [r.tobytes().decode() for r in rows]},
        agents=[{"id": a.id, "name": a.name, "model": a.model, "user": a.user,
                 "group": s.agents[s.groups.find(j)].id, "seed_tile": a.seed_tile,
                 "reward": st.reward, "solved": st.solved,
                 "health": health_of(st.health).to_json()}
                for j, (a, st) in enumerate(zip(s.agents, s.stats, strict=True))],
        totals=attrs.asdict(s.totals))
    return out


@attrs.frozen
class AllTime:
    """The all-time board and the days merged into it (each day once)."""

    boards: Boards = attrs.field(factory=Boards)
    days: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Plain JSON value."""
        return {"boards": self.boards.to_json(), "days": list(self.days)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AllTime:
        """Inverse of `to_json`."""
        return cls(Boards.from_json(data["boards"]), tuple(data["days"]))


def merge_day(alltime: AllTime, day: str, board: Boards) -> AllTime:
    """`alltime` with one day's board merged in; a day already merged changes nothing."""
    if day in alltime.days:
        return alltime
    return AllTime(merge_boards([alltime.boards, board]), alltime.days + (day,))


class AllTimeRows:
    """The all-time board as read from the store, indexed to answer pages of it."""

    def __init__(self, alltime: AllTime) -> None:
        self.days = alltime.days
        self.users = Ordered(alltime.boards.users)
        self.models = Ordered(alltime.boards.models)

    def with_today(self, day: str | None, board: Boards, offset: int,
                   limit: int) -> tuple[Boards, tuple[int, int], list[str]]:
        """Rows `offset` .. `offset + limit - 1` of the all-time board plus a board not
        merged yet (today's, or a started field's), per user and per model; the merged
        board's row counts; and the days it covers."""
        adds = day is None or day not in self.days
        rows = [part.page(extra if adds else (), offset, offset + limit)
                for part, extra in ((self.users, board.users), (self.models, board.models))]
        days = list(self.days) + ([day] if adds and day else [])
        return Boards(rows[0][0], rows[1][0]), (rows[0][1], rows[1][1]), days
