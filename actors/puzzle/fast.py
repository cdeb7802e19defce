"""A fast, exact transition function for the `keke` profile, used by the solver.

The public engine (`game.py`) is built for clarity and carries events, history and
mechanics; the solver needs millions of transitions, so this module re-states the
`keke` profile on flat integer lists and packs every settled state into one exact
`bytes` key (no hashing, no merging of distinct states).

The semantics follow the Keke competition simulator as documented in
`shared/baba-corpus/README.md`, including the parts of it that are quirks, because
the key must capture everything that changes a future turn:

* two layers: an *object layer* grid (`om`) that holds at most one thing per cell and
  can go stale (an object walked over is hidden until the next full reset), and the
  background, of which only the border matters here;
* the phys list and the per-noun lists are separate sequences that can diverge when a
  destroyed pair is removed twice (the simulator then removes the last element);
* contact checks in a phase use the lists captured when the phase began;
* rules are re-read (and transforms applied) once per word that moved.

The working state of a turn and the key codec are in `fast_turn.py`.
Parity with the public engine is checked by `tests/puzzle/test_solve.py`. Levels that
use anything else (another profile, mechanics, AND/NOT/TEXT, non-Keke properties) are
not handled here: `unsupported()` says why and the solver falls back to the public engine.
"""

from __future__ import annotations

from collections.abc import Container
from typing import TYPE_CHECKING

from .fast_turn import DOWN, LEFT, MOVES, RIGHT, UP, FastTurn
from .guide import Guide
from .walks import exits, free_region, timed_exits
from .words import NOUNS, TEXT_BASE, WORD_CODE, WORDS

if TYPE_CHECKING:
    from .level import Level

_FROM_FACING = (RIGHT, UP, LEFT, DOWN)  # words.DIRECTIONS order: right, up, left, down

# The words the Keke simulator knows (its KILL is our DEFEAT); anything else is refused.
KEKE_PROPERTIES = frozenset({"you", "win", "defeat", "push", "stop", "move", "hot", "melt",
                             "sink"})
_SUPPORTED_WORDS = frozenset(NOUNS) | KEKE_PROPERTIES | {"is"}
_IS = WORD_CODE["is"]
NOVELTY_PENALTY = 40  # added to the `rules` estimate of a state that shows nothing new


def unsupported(level: Level) -> str | None:
    """Why the fast path cannot play `level`, or None when it can."""
    if level.profile != "keke":
        return f"profile {level.profile!r} (the fast path implements keke only)"
    if level.mechanics:
        return "mechanics (the fast path has no mechanic lifecycle)"
    for _, kind, _, _, _ in level.objects:
        if kind >= TEXT_BASE and WORDS[kind - TEXT_BASE] not in _SUPPORTED_WORDS:
            return f"the word {WORDS[kind - TEXT_BASE]!r} (unknown to the Keke simulator)"
    return None



class FastLevel:
    """The static part of a level: grid size and the words (which never change kind).

    Positions are flat cell indices of a grid padded by one blocked cell on each side,
    so a move never leaves the array.
    """

    def __init__(self, level: Level) -> None:
        """Compile a level that `unsupported` accepts; raises ValueError otherwise."""
        reason = unsupported(level)
        if reason is not None:
            raise ValueError(f"fast path: unsupported {reason}")
        width, height = level.width, level.height
        self.stride = width + 2
        self.cells = self.stride * (height + 2)
        border = bytearray(self.cells)
        for x in range(width + 2):
            border[x] = border[self.cells - 1 - x] = 1
        for y in range(height + 2):
            border[y * self.stride] = border[y * self.stride + width + 1] = 1
        self.border = bytes(border)
        self.delta = (0, -self.stride, self.stride, -1, 1)
        words: list[tuple[int, int]] = []
        phys: list[tuple[int, int, int]] = []
        for _, kind, x, y, facing in level.objects:
            cell = (y + 1) * self.stride + (x + 1)
            if kind >= TEXT_BASE:
                words.append((kind, cell))
            else:
                phys.append((kind, cell, _FROM_FACING[facing]))
        self.word_kinds = tuple(k - TEXT_BASE for k, _ in words)
        self.n_words = len(words)
        self.connectors = tuple(i for i, k in enumerate(self.word_kinds) if k == _IS)
        # Facing is read only when something is MOVE; without a MOVE word nothing ever is, so
        # every facing stays RIGHT and states that differ only in facing share one key.
        self.facing_matters = WORD_CODE["move"] in self.word_kinds
        self.guide = Guide(self)  # estimates and novelty memory for a search over this level
        # Whether the last `expand` skipped successors (timed walks, `walks.timed_exits`).
        self.lossy = False
        self._initial_words = words
        self._initial_phys = phys

    def xy(self, cell: int) -> tuple[int, int]:
        """The (x, y) of a flat cell index, in level coordinates."""
        return cell % self.stride - 1, cell // self.stride - 1

    def initial(self) -> bytes:
        """The key of the settled initial state (rules read, transforms applied)."""
        t = FastTurn(self)
        t.pos = [c for _, c in self._initial_words]
        t.nm = [k for k, _ in self._initial_words]
        t.dr = [RIGHT] * self.n_words
        t.mv = [True] * self.n_words
        t.st = [False] * self.n_words
        t.om = [0] * self.cells
        for i, cell in enumerate(t.pos):
            t.om[cell] = i + 1
        for kind, cell, facing in self._initial_phys:
            o = t.new_object(kind, cell)
            t.dr[o] = facing if self.facing_matters else RIGHT
            t.phys.append(o)
            t.om[cell] = o + 1
        t.reset_all()  # property lists for no rules, which the first reading starts from
        t.interpret_rules()
        t.renumber = True
        return t.encode()

    def step(self, key: bytes, move: str) -> tuple[bytes, bool, bool]:
        """Apply one move (`u d l r s`) to a settled state: (next key, won, lost)."""
        t = FastTurn(self)
        t.decode(key)
        won = t.turn(MOVES[move])
        lost = not t.players
        return t.encode(), won, lost

    def expand(self, key: bytes, seen: Container[bytes] = (), walks: bool = False,
               timed: bool = True) -> list[tuple[str, bytes, bool, bool, bool, tuple[int, ...]]]:
        """Every move that leads to a state not in `seen`: (moves, next key, won, lost, novel,
        estimates); the estimates are `direct`, `path`, `rules` (see `guide.Guide.estimates`)
        and `rules` plus a penalty when the state is not novel. With `walks`, free walking is
        folded into the next real move (`walks.py`), so `moves` may hold several letters;
        otherwise each entry is one move. The fold is exact without MOVE objects; with them
        (`walks.timed_exits`) it skips later arrivals and says so in `lossy`. `timed`
        False (the novel queue's expansions) folds only free walking, and only in a level
        without a MOVE word; its folded walks count as seen for novelty (`Guide.walked`)."""
        base = FastTurn(self)
        base.decode(key)
        # Without `timed` (the novel queue) walks are folded only where no MOVE rule can ever
        # form: an empirical choice, since with it full_biy 83 went from 2 s to unsolved in 10.
        walks = walks and (timed or not self.facing_matters)
        region = free_region(self, base) if walks else None
        played = timed_exits(self, base) if walks and timed and region is None else None
        self.lossy = False
        if played is not None:
            steps, self.lossy = played
        elif region is None:
            steps = []
            for move, d in MOVES.items():
                t = base.copy()
                won = t.turn(d)
                if t.changed:
                    steps.append((move, t, won))
        else:
            steps = exits(self, base, region)
            if not timed:
                self.guide.walked(base, region)
        out = []
        for moves, t, won in steps:
            renumbered = t.renumber
            child = t.encode()
            if child in seen:
                continue
            if renumbered:
                t._derive()  # the property lists still hold the ids from before encode
            if not (won or t.players or t.automovers):
                continue  # nothing is YOU or MOVE: nothing can ever move again, so no win
            lost, novel = not t.players, self.guide.novel(t)
            direct, path, rules = self.guide.estimates(t)
            penalized = rules + (0 if novel else NOVELTY_PENALTY)
            out.append((moves, child, won, lost, novel, (direct, path, rules, penalized)))
        return out
