"""The solver: breadth-first (shortest) and best-first search over exact `bytes` state keys.

A search runs over a *model*, a transition system on keys:

* `FastModel` (the `keke` profile without mechanics): `fast.FastLevel`, which re-states the
  Keke simulator on flat lists and packs its whole state into the key;
* `EngineModel` (everything else): the public transition function (`turn.advance`, which
  `game.step` runs) with the state codec of `codec.py` as the key, mechanic state included.

Both keys are exact (no hashing), so two states share a key only when every future turn is
the same. Caps on expanded nodes, time and (estimated) memory end a search with
`complexity_blocked`; `unsolvable` is only said when the reachable space was exhausted.
Every solution is replayed through the public engine before it is returned.

Time is a parameter: the caller passes a monotonic `clock` function.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Container
from typing import TYPE_CHECKING, Protocol

import attrs

from .level import Level

if TYPE_CHECKING:
    from .board import Board

MOVE_LETTERS = "udlrs"
SOLVED, BLOCKED, UNSOLVABLE = "solved", "complexity_blocked", "unsolvable"
STRATEGIES = ("best", "bfs")
# Rough bytes held per seen state besides its key: the parents slot and tuple, the bytes
# header, the done-set slot and one entry in each of up to six queues.
_ENTRY_OVERHEAD = 700
_CLOCK_EVERY = 64  # expansions between clock reads
_WEIGHT, _GREEDY = 3, 10  # estimate weights of the weighted-A* and the greedy queues
_NOVEL_SHARE = 4  # turns of the novel (width-based) queue per round over all queues
_PARTIAL = "ran dry without covering what the engine reaches"  # see `search`


@attrs.frozen
class Caps:
    """Limits of one search; reaching any of them gives `complexity_blocked`."""

    max_expanded: int = 5_000_000
    max_seconds: float = 10.0
    max_bytes: int = 768 * 2**20


@attrs.frozen
class SolveResult:
    """What a search found. `moves` is empty unless solved; `reason` says why it stopped."""

    status: str
    moves: str
    expanded: int
    seconds: float
    reason: str = ""
    model: str = ""

    def to_json(self) -> dict:
        """The CLI's JSON shape (plus `reason` and `model` for humans)."""
        return {"status": self.status, "moves": self.moves, "expanded": self.expanded,
                "seconds": round(self.seconds, 3), "reason": self.reason, "model": self.model}


class Model(Protocol):
    """A transition system over exact state keys. `lossy` says whether the last `expand`
    skipped successors (folded walks that drop some arrivals)."""

    name: str
    lossy: bool

    def initial(self) -> bytes:
        """The key of the settled initial state."""

    def expand(self, key: bytes, seen: Container[bytes], walks: bool = False,
               timed: bool = True) -> list[tuple[str, bytes, bool, bool, bool, tuple[int, ...]]]:
        """(moves, next key, won, lost, novel, distance estimates) for each move taken that
        leads out of `seen`; `novel` marks a state worth a place in the width-based queue.
        With `walks` a model may fold side-effect-free walking into one multi-letter entry,
        and with `timed` too also walking while MOVE objects move (which may skip states)."""


class FastModel:
    """The `keke` fast path (see `fast.py`)."""

    name = "fast"

    def __init__(self, level: Level) -> None:
        from .fast import FastLevel

        self._fast = FastLevel(level)
        self.initial = self._fast.initial
        self.expand = self._fast.expand

    @property
    def lossy(self) -> bool:
        """Whether the last expansion's timed walk (`walks.timed_exits`) skipped states."""
        return self._fast.lossy


class EngineModel:
    """The public transition path (`turn.advance`, which `game.step` runs) keyed by the
    level's state codec, mechanic state included, from the level's start or a given settled
    board. Rejected turns (no change, nothing can move, complexity cap) have no successor."""

    name = "engine"
    lossy = False  # it never folds walks, so it never skips a successor

    def __init__(self, level: Level, start: Board | None = None) -> None:
        from .board import Context
        from .codec import create_codec
        from .turn import settle_initial

        self._ctx = Context(level)
        self._codec = create_codec(self._ctx)
        self._start = settle_initial(self._ctx, level.objects) if start is None else start
        self._seen: set[object] = set()  # novelty features of the states generated so far

    def initial(self) -> bytes:
        """The key of the settled initial board."""
        return self._codec.encode(self._start)

    def expand(self, key: bytes, seen: Container[bytes], walks: bool = False,
               timed: bool = True) -> list[tuple[str, bytes, bool, bool, bool, tuple[int, ...]]]:
        """(move, next key, won, lost, novel, estimates) for every accepted move that leads
        out of `seen`; walks are never folded. A state is novel when it shows a feature no
        earlier generated state showed (`_novel`)."""
        from .turn import advance
        from .words import MOVE_LETTERS as ACTIONS

        board = self._codec.decode(key)
        out = []
        for letter in MOVE_LETTERS:
            step = advance(self._ctx, board, ACTIONS[letter], record=False)
            if step.accepted:
                child = self._codec.encode(step.board)
                if child not in seen:
                    out.append((letter, child, step.won, step.lost, self._novel(step.board),
                                (self._estimate(step.board),)))
        return out

    def _novel(self, board: Board) -> bool:
        """Width-based novelty, as the fast path's (`guide.Guide.novel`): pairs of a word or a
        PUSH object on a cell with a YOU object on a cell, the rules in force and the mechanic
        values (each with the YOU's cell: a gate's state matters where the YOU stands)."""
        from .ruleset import PUSH, YOU
        from .words import TEXT_BASE

        rules = self._ctx.rules(board.objects)
        masks = rules.masks
        you = [(o[2], o[3]) for o in board.objects if masks[o[1]] & YOU]
        things = [(o[1], o[2], o[3]) for o in board.objects
                  if o[1] >= TEXT_BASE or masks[o[1]] & PUSH]
        before = len(self._seen)
        self._seen.update((thing, cell) for thing in things for cell in you)
        self._seen.update(rules.sentences)
        self._seen.update((i, value, cell) for i, value in enumerate(board.mechanics)
                          for cell in you)
        return len(self._seen) > before

    def _estimate(self, board: Board) -> int:
        """Manhattan distance from a YOU object to a WIN object (16 without WIN, 64 without
        YOU); the fast path has the finer, rule-forming estimate."""
        from .ruleset import WIN, YOU

        masks = self._ctx.rules(board.objects).masks
        you = [(o[2], o[3]) for o in board.objects if masks[o[1]] & YOU]
        win = [(o[2], o[3]) for o in board.objects if masks[o[1]] & WIN]
        if not you:
            return 64
        if not win:
            return 16
        return min(abs(a - c) + abs(b - d) for a, b in you for c, d in win)


def search(model: Model, *, strategy: str, caps: Caps, clock: Callable[[], float],
           trace: Callable[[str], None] | None = None, started: float | None = None,
           spent: int = 0, verify: Callable[[str], bool] = lambda moves: True,
           progress: Callable[[int, float], None] | None = None
           ) -> tuple[str, str, int, str]:
    """Run one search; returns (status, moves, expanded, reason).

    `bfs` expands in order of depth and tests the goal when a state is generated, so its
    first solution is a shortest one. `best` takes turns between queues that share one seen
    set: a depth-ordered queue of *novel* states (width-based search; `_NOVEL_SHARE` turns
    per round), one queue per model estimate ordered by depth + 3 x estimate (weighted A*),
    and a greedy one (depth + 10 x the last estimate), one turn each; their ties go to the
    state pushed last. A state taken from a best-first queue is expanded with `walks` (walking
    folded into multi-letter moves, see `walks.py`); under `best` the novel queue asks for
    free walks only (`timed` False: never lossy), and under `bfs` it plays single moves.
    Depth counts letters, walks included; the novel queue is ordered by depth, so under `bfs`
    it is a plain breadth-first queue.
    It usually needs far fewer nodes than `bfs`; its answers are not always shortest. The
    caps count from the clock reading `started` and from `spent` earlier expansions (a search
    that continues another one's budget). A goal counts only when `verify` accepts its moves
    (the caller replays them in the public engine); a refuted goal (a model that disagrees
    with the engine: a bug) is a dead end. A state whose expansion skipped successors
    (`Model.lossy`) is expanded again one move at a time once every queue is empty. An
    exhausted search that met a refutation proves nothing: it says `complexity_blocked`, with
    a reason starting `_PARTIAL`. `progress(expanded, seconds)` hears how far it got at every
    clock reading (expansions counted with `spent`).
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r} (one of {', '.join(STRATEGIES)})")
    start = clock() if started is None else started
    root = model.initial()
    parents: dict[bytes, tuple[bytes, str] | None] = {root: None}
    held = len(root) + _ENTRY_OVERHEAD
    # The novel queue, ordered by depth (letters) and then by arrival, so that under `bfs`
    # (single moves only) it pops exactly in breadth-first order.
    novel_queue: list[tuple[int, int, bytes]] = [(0, 0, root)]
    heaps: list[list[tuple[int, int, int, bytes]]] = []
    weights: list[int] = []
    done: set[bytes] = set()
    pushed, expanded, turn, refuted = 0, spent, 0, 0
    popped_by: dict[bytes, int] = {}  # with `trace`: the queue that expanded each state
    # States whose expansion skipped some successors (`Model.lossy`): once every queue is empty
    # they are expanded again one move at a time, so that running dry still proves something.
    redo: list[tuple[int, bytes]] = []
    while novel_queue or any(heaps) or redo:
        if expanded >= caps.max_expanded:
            return BLOCKED, "", expanded - spent, f"node cap {caps.max_expanded} reached"
        if held >= caps.max_bytes:
            return BLOCKED, "", expanded - spent, f"memory cap {caps.max_bytes} bytes reached"
        if expanded % _CLOCK_EVERY == 0:
            elapsed = clock() - start
            if progress is not None:
                progress(expanded, elapsed)
            if elapsed >= caps.max_seconds:
                return BLOCKED, "", expanded - spent, f"time cap {caps.max_seconds:g} s reached"
        turn += 1
        queue = turn % (len(heaps) + _NOVEL_SHARE) - _NOVEL_SHARE + 1
        if not novel_queue and not any(heaps):
            depth, key = redo.pop()
            walks = timed = False
        else:
            if queue <= 0 or not heaps[queue - 1]:
                if not novel_queue:
                    continue
                depth, _, key = heapq.heappop(novel_queue)
                # Under `best` it folds free walking too, but never timed walks (lossy).
                walks, timed = strategy == "best", False
            else:
                _, _, depth, key = heapq.heappop(heaps[queue - 1])
                walks = timed = True  # best-first queues fold walking (see `walks.py`)
            if key in done:
                continue
            done.add(key)
        if trace:
            popped_by[key] = max(queue, 0)
        expanded += 1
        children = model.expand(key, parents, walks, timed)
        if model.lossy:
            redo.append((depth, key))
        for move, child, won, _lost, novel, estimates in children:
            if child in parents:
                continue
            parents[child] = (key, move)
            held += len(child) + _ENTRY_OVERHEAD
            if won:
                moves = _path(parents, child)
                if verify(moves):
                    if trace:
                        trace(f"goal after {expanded - spent} expansions: {moves}")
                        trace("queues that expanded its path (0 novel, then the heaps): "
                              + _queues(parents, popped_by, key))
                    return SOLVED, moves, expanded - spent, ""
                refuted += 1  # a model/engine disagreement: search on past this state
                continue
            pushed += 1
            if strategy == "bfs" or novel:
                heapq.heappush(novel_queue, (depth + len(move), pushed, child))
            if strategy == "best":
                if not heaps:
                    weights = [_WEIGHT] * len(estimates) + [_GREEDY]
                    heaps = [[] for _ in weights]
                for heap, weight, estimate in zip(heaps, weights, (*estimates, estimates[-1]),
                                                  strict=True):
                    # Ties go to the newest state: depth-first along a plateau.
                    heapq.heappush(heap, (depth + len(move) + weight * estimate, -pushed,
                                          depth + len(move), child))
        if trace and expanded % 10_000 == 0:
            trace(f"expanded {expanded - spent}, seen {len(parents)}, depth {depth}")
    if refuted:
        why = f"{_PARTIAL} ({len(parents)} states, {refuted} goals refuted by replay)"
        return BLOCKED, "", expanded - spent, why
    return UNSOLVABLE, "", expanded - spent, f"all {len(parents)} reachable states explored"


def _queues(parents: dict[bytes, tuple[bytes, str] | None], popped_by: dict[bytes, int],
            key: bytes) -> str:
    chain: list[str] = []
    step: tuple[bytes, str] | None = (key, "")
    while step is not None:
        chain.append(str(popped_by.get(step[0], "?")))
        step = parents[step[0]]
    return "".join(reversed(chain))


def _path(parents: dict[bytes, tuple[bytes, str] | None], key: bytes) -> str:
    moves: list[str] = []
    step = parents[key]
    while step is not None:
        key, move = step
        moves.append(move)
        step = parents[key]
    return "".join(reversed(moves))


def solve(level: Level, *, clock: Callable[[], float], strategy: str = "best",
          caps: Caps = Caps(), trace: Callable[[str], None] | None = None,
          board: Board | None = None,
          progress: Callable[[int, float], None] | None = None) -> SolveResult:
    """Search `level` for a winning move list; the answer is checked in the public engine.

    Every goal a search reaches is replayed before it is accepted; a refuted one is passed over
    and the search goes on. The fast path is used when it supports the level; if it ran dry
    without proving anything (see `search`), the public engine searches in the time left.
    `board` (a settled board of the level, e.g. a game's current one) starts the search there
    instead of at the level's start, on the public engine only. `progress` is `search`'s.
    """
    from . import fast
    from .board import Context
    from .turn import advance, settle_initial
    from .words import MOVE_LETTERS as ACTIONS

    start = clock()
    ctx = Context(level)
    origin = settle_initial(ctx, level.objects) if board is None else board
    models: list[Callable[[], Model]] = []
    if board is None and fast.unsupported(level) is None:
        models.append(lambda: FastModel(level))
    models.append(lambda: EngineModel(level, origin))
    reason = ""
    expanded = 0
    rejected: list[str] = []

    def replays(moves: str) -> bool:
        at = origin
        for i, letter in enumerate(moves, 1):
            out = advance(ctx, at, ACTIONS[letter], record=False)
            at = out.board
            if out.won:
                if i == len(moves):
                    return True
                break
        rejected.append(moves)
        return False

    for make in models:
        model = make()
        status, moves, n, why = search(model, strategy=strategy, clock=clock, trace=trace,
                                       caps=caps, started=start, spent=expanded, verify=replays,
                                       progress=progress)
        expanded += n
        if rejected:
            reason += (f"{len(rejected)} {model.name} path(s) did not replay in the engine "
                       f"(first {rejected[0]!r}); ")
            rejected.clear()
        if status == SOLVED:
            return SolveResult(SOLVED, moves, expanded, clock() - start, reason.rstrip("; "),
                               model.name)
        if not why.startswith(_PARTIAL):
            return SolveResult(status, "", expanded, clock() - start, reason + why, model.name)
        reason += f"{why}; "  # the engine plays what the fast path could not settle
    return SolveResult(BLOCKED, "", expanded, clock() - start, reason.rstrip("; "), "")
