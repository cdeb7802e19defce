"""The solver: breadth-first (shortest) and best-first search over exact `bytes` state keys.

A search runs over a *model*, a transition system on keys:

* `FastModel` (the `keke` profile without mechanics): `fast.FastLevel`, which re-states the
  Keke simulator on flat lists and packs its whole state, quirks included, into the key;
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
from collections import deque
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
    """A transition system over exact state keys."""

    name: str

    def initial(self) -> bytes:
        """The key of the settled initial state."""

    def expand(self, key: bytes, seen: Container[bytes], walks: bool = False
               ) -> list[tuple[str, bytes, bool, bool, bool, tuple[int, ...]]]:
        """(moves, next key, won, lost, novel, distance estimates) for each move taken that
        leads out of `seen`; `novel` marks a state worth a place in the width-based queue.
        With `walks` a model may fold side-effect-free walking into one multi-letter entry."""


class FastModel:
    """The `keke` fast path (see `fast.py`)."""

    name = "fast"

    def __init__(self, level: Level) -> None:
        from .fast import FastLevel

        self._fast = FastLevel(level)
        self.initial = self._fast.initial
        self.expand = self._fast.expand


class EngineModel:
    """The public transition path (`turn.advance`, which `game.step` runs) keyed by the
    level's state codec, mechanic state included. Rejected turns (no change, nothing can
    move, complexity cap) have no successor."""

    name = "engine"

    def __init__(self, level: Level) -> None:
        from .board import Context
        from .codec import create_codec
        from .turn import settle_initial

        self._ctx = Context(level)
        self._codec = create_codec(self._ctx)
        self._start = settle_initial(self._ctx, level.objects)

    def initial(self) -> bytes:
        """The key of the settled initial board."""
        return self._codec.encode(self._start)

    def expand(self, key: bytes, seen: Container[bytes], walks: bool = False
               ) -> list[tuple[str, bytes, bool, bool, bool, tuple[int, ...]]]:
        """(move, next key, won, lost, novel, estimates) for every accepted move that leads
        out of `seen`; every state counts as novel here (no novelty features on this path),
        and walks are never folded."""
        from .turn import advance
        from .words import MOVE_LETTERS as ACTIONS

        board = self._codec.decode(key)
        out = []
        for letter in MOVE_LETTERS:
            step = advance(self._ctx, board, ACTIONS[letter], record=False)
            if step.accepted:
                child = self._codec.encode(step.board)
                if child not in seen:
                    out.append((letter, child, step.won, step.lost, True,
                                (self._estimate(step.board),)))
        return out

    def _estimate(self, board: Board) -> int:
        """Manhattan distance from a YOU object to a WIN object (16 without WIN, 64 without
        YOU); the fast path has the finer, rule-forming estimate."""
        from .rules import WIN, YOU

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
           spent: int = 0) -> tuple[str, str, int, str]:
    """Run one search; returns (status, moves, expanded, reason).

    `bfs` expands in order of depth and tests the goal when a state is generated, so its
    first solution is a shortest one. `best` takes turns between queues that share one seen
    set: a depth-ordered queue of *novel* states (width-based search; `_NOVEL_SHARE` turns
    per round), one queue per model estimate ordered by depth + 3 x estimate (weighted A*),
    and a greedy one (depth + 10 x the last estimate), one turn each. A state taken from a
    best-first queue is expanded with `walks` (free walking folded into multi-letter moves,
    see `walks.py`); the novel queue plays single moves. Depth counts letters, walks included.
    It usually needs far fewer nodes than `bfs`; its answers are not always shortest. The
    caps count from the clock reading `started` and from `spent` earlier expansions (a search
    that continues another one's budget).
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r} (one of {', '.join(STRATEGIES)})")
    start = clock() if started is None else started
    root = model.initial()
    parents: dict[bytes, tuple[bytes, str] | None] = {root: None}
    held = len(root) + _ENTRY_OVERHEAD
    fifo: deque[tuple[bytes, int]] = deque([(root, 0)])
    heaps: list[list[tuple[int, int, int, bytes]]] = []
    weights: list[int] = []
    done: set[bytes] = set()
    pushed, expanded, turn = 0, spent, 0
    while fifo or any(heaps):
        if expanded >= caps.max_expanded:
            return BLOCKED, "", expanded - spent, f"node cap {caps.max_expanded} reached"
        if held >= caps.max_bytes:
            return BLOCKED, "", expanded - spent, f"memory cap {caps.max_bytes} bytes reached"
        if expanded % _CLOCK_EVERY == 0 and clock() - start >= caps.max_seconds:
            return BLOCKED, "", expanded - spent, f"time cap {caps.max_seconds:g} s reached"
        turn += 1
        queue = turn % (len(heaps) + _NOVEL_SHARE) - _NOVEL_SHARE + 1
        if queue <= 0 or not heaps[queue - 1]:
            if not fifo:
                continue
            key, depth = fifo.popleft()
            walks = False  # the novel queue (and bfs) plays one move at a time
        else:
            _, _, depth, key = heapq.heappop(heaps[queue - 1])
            walks = True  # best-first queues fold free walking (see `walks.py`)
        if key in done:
            continue
        done.add(key)
        expanded += 1
        for move, child, won, _lost, novel, estimates in model.expand(key, parents, walks):
            if child in parents:
                continue
            parents[child] = (key, move)
            held += len(child) + _ENTRY_OVERHEAD
            if won:
                moves = _path(parents, child)
                if trace:
                    trace(f"goal after {expanded - spent} expansions: {moves}")
                return SOLVED, moves, expanded - spent, ""
            if strategy == "bfs" or novel:
                fifo.append((child, depth + len(move)))
            if strategy == "best":
                if not heaps:
                    weights = [_WEIGHT] * len(estimates) + [_GREEDY]
                    heaps = [[] for _ in weights]
                pushed += 1
                for heap, weight, estimate in zip(heaps, weights, (*estimates, estimates[-1]),
                                                  strict=True):
                    heapq.heappush(heap, (depth + len(move) + weight * estimate, pushed,
                                          depth + len(move), child))
        if trace and expanded % 10_000 == 0:
            trace(f"expanded {expanded - spent}, seen {len(parents)}, depth {depth}")
    return UNSOLVABLE, "", expanded - spent, f"all {len(parents)} reachable states explored"


def _path(parents: dict[bytes, tuple[bytes, str] | None], key: bytes) -> str:
    moves: list[str] = []
    step = parents[key]
    while step is not None:
        key, move = step
        moves.append(move)
        step = parents[key]
    return "".join(reversed(moves))


def solve(level: Level, *, clock: Callable[[], float], strategy: str = "best",
          caps: Caps = Caps(), trace: Callable[[str], None] | None = None) -> SolveResult:
    """Search `level` for a winning move list; the answer is checked in the public engine.

    The fast path is used when it supports the level; if its solution ever failed to replay
    (a parity bug), the search is repeated on the public engine in the time that is left.
    """
    from . import fast
    from .game import replay

    start = clock()
    models: list[Callable[[], Model]] = []
    if fast.unsupported(level) is None:
        models.append(lambda: FastModel(level))
    models.append(lambda: EngineModel(level))
    reason = ""
    expanded = 0
    for make in models:
        model = make()
        status, moves, n, why = search(model, strategy=strategy, clock=clock, trace=trace,
                                       caps=caps, started=start, spent=expanded)
        expanded += n
        if status == SOLVED:
            check = replay(level, moves)
            if check["won"] and check["won_at"] == len(moves):
                return SolveResult(SOLVED, moves, expanded, clock() - start,
                                   reason.rstrip("; "), model.name)
            reason = f"{model.name} path {moves!r} did not replay in the engine ({check}); "
            continue
        return SolveResult(status, "", expanded, clock() - start, reason + why, model.name)
    return SolveResult(BLOCKED, "", expanded, clock() - start, reason.rstrip("; "), "")
