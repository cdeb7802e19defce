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

Parity with the public engine is checked by `tests/puzzle/test_solve.py`. Levels that
use anything else (another profile, mechanics, AND/NOT/TEXT, non-Keke properties) are
not handled here: `unsupported()` says why and the solver falls back to the public engine.
"""

from __future__ import annotations

from array import array
from collections.abc import Container
from itertools import compress
from typing import TYPE_CHECKING

from .guide import Guide
from .words import NOUNS, TEXT_BASE, WORD_CODE, WORDS

if TYPE_CHECKING:
    from .level import Level

# Facings of this module (0 is never stored; Keke's "no facing yet" behaves as right).
UP, DOWN, LEFT, RIGHT = 1, 2, 3, 4
MOVES = {"u": UP, "d": DOWN, "l": LEFT, "r": RIGHT, "s": 0}
_OPPOSITE = (0, DOWN, UP, RIGHT, LEFT)
_FROM_FACING = (RIGHT, UP, LEFT, DOWN)  # words.DIRECTIONS order: right, up, left, down

# The words the Keke simulator knows (its KILL is our DEFEAT); anything else is refused.
KEKE_PROPERTIES = frozenset({"you", "win", "defeat", "push", "stop", "move", "hot", "melt",
                             "sink"})
_SUPPORTED_WORDS = frozenset(NOUNS) | KEKE_PROPERTIES | {"is"}
_IS = WORD_CODE["is"]
(_YOU, _WIN, _KILL, _PUSH, _STOP, _MOVE, _HOT, _MELT, _SINK) = (
    WORD_CODE[p] for p in ("you", "win", "defeat", "push", "stop", "move", "hot", "melt", "sink"))
_FEATURES = frozenset({_HOT, _MELT, _MOVE})  # Keke's feature list (OPEN/SHUT have no words)
_N_NOUNS = len(NOUNS)  # word codes below this are nouns, equal to their object kind codes
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


def _splice(seq: list[int], item: int) -> None:
    """Remove `item` like JS `seq.splice(seq.indexOf(item), 1)`: a miss removes the last."""
    if not seq:
        return
    try:
        del seq[seq.index(item)]
    except ValueError:
        del seq[-1]


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
        self.guide = Guide(self)  # estimates and novelty memory for a search over this level
        self._initial_words = words
        self._initial_phys = phys

    def xy(self, cell: int) -> tuple[int, int]:
        """The (x, y) of a flat cell index, in level coordinates."""
        return cell % self.stride - 1, cell // self.stride - 1

    def initial(self) -> bytes:
        """The key of the settled initial state (rules read, transforms applied)."""
        t = _Turn(self)
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
            t.dr[o] = facing
            t.phys.append(o)
            t.om[cell] = o + 1
        t.interpret_rules()
        t.renumber = True
        return t.encode()

    def step(self, key: bytes, move: str) -> tuple[bytes, bool, bool]:
        """Apply one move (`u d l r s`) to a settled state: (next key, won, lost)."""
        t = _Turn(self)
        t.decode(key)
        won = t.turn(MOVES[move])
        lost = not t.players
        return t.encode(), won, lost

    def expand(self, key: bytes, seen: Container[bytes] = ()
               ) -> list[tuple[str, bytes, bool, bool, bool, tuple[int, ...]]]:
        """Every move that leads to a state not in `seen`: (move, next key, won, lost, novel,
        estimates); the estimates are `direct`, `rules` (see `guide.Guide.estimates`) and
        `rules` plus a penalty when the state is not novel."""
        base = _Turn(self)
        base.decode(key)
        out = []
        for move, d in MOVES.items():
            t = base.copy()
            won = t.turn(d)
            if not t.changed:
                continue
            renumbered = t.renumber
            child = t.encode()
            if child in seen:
                continue
            if renumbered:
                t._derive()  # the property lists still hold the ids from before encode
            lost, novel = not t.players, self.guide.novel(t)
            direct, rules = self.guide.estimates(t)
            penalized = rules + (0 if novel else NOVELTY_PENALTY)
            out.append((move, child, won, lost, novel, (direct, rules, penalized)))
        return out


class _Turn:
    """The mutable working copy of one state while a turn runs (see the module doc)."""

    def __init__(self, level: FastLevel) -> None:
        self.lv = level
        self.nm: list[int] = []
        self.pos: list[int] = []
        self.dr: list[int] = []
        self.mv: list[bool] = []
        self.st: list[bool] = []
        self.phys: list[int] = []
        self.sp: dict[int, list[int]] = {}
        self.om: list[int] = []  # object layer: object id + 1 per cell, 0 when empty
        self.rules: list[tuple[int, int]] = []
        self.moved: set[int] = set()
        self.words_moved = 0
        self.renumber = False  # set when objects are created or removed during the turn
        self.changed = False  # set by any move, removal or turn-around (else the key is equal)

    def copy(self) -> _Turn:
        """A working copy that shares nothing mutable with this one."""
        t = _Turn.__new__(_Turn)
        t.__dict__.update(self.__dict__)
        t.nm, t.pos, t.dr, t.mv, t.st = self.nm[:], self.pos[:], self.dr[:], self.mv[:], self.st[:]
        t.phys, t.om = self.phys[:], self.om[:]
        t.sp = {n: objs[:] for n, objs in self.sp.items()}
        t.moved = set()
        return t

    def new_object(self, kind: int, cell: int) -> int:
        """Append a phys object with default flags and facing; registers it by noun."""
        self.nm.append(kind)
        self.pos.append(cell)
        self.dr.append(RIGHT)
        self.mv.append(False)
        self.st.append(False)
        o = len(self.nm) - 1
        self.sp.setdefault(kind, []).append(o)
        return o

    # ------------------------------------------------------------------ rules
    def interpret_rules(self) -> None:
        """Read WORD IS WORD triples from the object layer, transform, reset properties."""
        om, pos, n_words, d = self.om, self.pos, self.lv.n_words, self.lv.stride
        rules: list[tuple[int, int]] = []
        for c in self.lv.connectors:
            for step in (1, d):
                a, b = om[pos[c] - step], om[pos[c] + step]
                if 0 < a <= n_words and 0 < b <= n_words:
                    rule = (self.lv.word_kinds[a - 1], self.lv.word_kinds[b - 1])
                    if rule not in rules:
                        rules.append(rule)
        self.rules = rules
        self._transform()
        self.reset_all()

    def _transform(self) -> None:
        sp = self.sp
        frozen = {a for a, b in self.rules if a == b and a in sp}
        for a, b in self.rules:
            if a in frozen or a >= _N_NOUNS or b >= _N_NOUNS:
                continue
            for o in list(sp.get(a, ())):
                cell = self.pos[o]
                o2 = self.new_object(b, cell)
                self.phys.append(o2)
                self.renumber = True
                if self.om[cell] == o + 1:
                    self.om[cell] = o2 + 1
                _splice(self.phys, o)
                _splice(sp[a], o)

    def _with(self, prop: int, also: int = -1) -> list[int]:
        out: list[int] = []
        for a, b in self.rules:
            if (b == prop or b == also) and a in self.sp:
                out.extend(self.sp[a])
        return out

    def _derive(self) -> None:
        """Property lists, a function of the rules and the per-noun lists."""
        self.players = self._with(_YOU)
        self.automovers = self._with(_MOVE)
        self.winnables = self._with(_WIN)
        self.pushables = self._with(_PUSH)
        self.stoppables = self._with(_STOP)
        self.killers = self._with(_KILL, _SINK)
        self.sinkers = self._with(_SINK)
        self.featured: dict[int, list[int]] = {}
        for a, b in self.rules:
            if b in _FEATURES and a not in _FEATURES and a in self.sp:
                self.featured.setdefault(b, []).append(a)

    def reset_all(self) -> None:
        """Recompute property lists and flags from the rules; re-place the object layer."""
        mv, st, om, pos = self.mv, self.st, self.om, self.pos
        for o in self.phys:
            mv[o] = st[o] = False
        self._derive()
        for group in (self.players, self.automovers, self.pushables):
            for o in group:
                mv[o] = True
        for o in self.stoppables:
            st[o] = True
        for o in self.phys:
            if mv[o] or st[o]:
                om[pos[o]] = o + 1
            else:
                om[pos[o]] = 0  # the background layer is not modelled: only borders block
        for w in range(self.lv.n_words):
            om[pos[w]] = w + 1

    # --------------------------------------------------------------- movement
    def try_move(self, e: int, d: int, players: set[int], pushables: set[int]) -> bool:
        """Keke's canMove + moveObj: push chains, YOU-overlap, the object layer."""
        if e in self.moved or not self.mv[e]:
            return False
        target = self.pos[e] + self.lv.delta[d]
        if self.lv.border[target]:
            return False
        o = self.om[target] - 1
        if o >= 0:
            if self.st[o]:
                return False
            if self.mv[o]:
                if o in pushables:
                    if not self.try_move(o, d, players, pushables):
                        return False
                elif o in players and e not in players:
                    pass  # a non-YOU thing may walk onto a YOU object (and hide it)
                elif o >= self.lv.n_words or not self.try_move(o, d, players, pushables):
                    return False  # a movable non-pushable object blocks; a word is pushed
        self.om[self.pos[e]] = 0
        self.pos[e] = target
        self.om[target] = e + 1
        self.moved.add(e)
        self.changed = True
        if e < self.lv.n_words:
            self.words_moved += 1
        else:
            self.dr[e] = d  # a word's facing never matters, so it stays out of the key
        return True

    def _destroy(self, dead: list[tuple[int, int]]) -> None:
        if not dead:
            return
        self.renumber = self.changed = True
        for p, o in dead:
            _splice(self.phys, p)
            _splice(self.phys, o)
            _splice(self.sp[self.nm[p]], p)
            _splice(self.sp[self.nm[o]], o)
            self.om[self.pos[p]] = 0
        self.reset_all()

    def _contacts(self, players: list[int], killers: list[int], sinkers: list[int],
                  featured: dict[int, list[int]]) -> None:
        pos = self.pos
        self._destroy([(p, k) for p in players for k in killers
                       if p == k or pos[p] == pos[k]])
        if sinkers:
            wet = {pos[s] for s in sinkers}
            # The phys objects on sinker cells, in phys order, filtered at C speed.
            on_wet = compress(self.phys, map(wet.__contains__, map(pos.__getitem__, self.phys)))
            self._destroy([(p, s) for p in on_wet for s in sinkers
                           if p != s and pos[p] == pos[s]])
        if _HOT in featured and _MELT in featured:
            hot = [o for n in featured[_HOT] for o in self.sp[n]]
            melt = [o for n in featured[_MELT] for o in self.sp[n]]
            self._destroy([(a, b) for a in hot for b in melt if a == b or pos[a] == pos[b]])

    def turn(self, d: int) -> bool:
        """One Keke turn: YOU moves, contacts, MOVE steps, contacts, reparse, win check."""
        if d:
            players, killers, sinkers, featured = (self.players, self.killers, self.sinkers,
                                                   self.featured)
            pset, uset = set(players), set(self.pushables)
            for p in players:
                self.try_move(p, d, pset, uset)
            self._contacts(players, killers, sinkers, featured)
        movers, killers, sinkers, featured = (self.automovers, self.killers, self.sinkers,
                                              self.featured)
        pset, uset = set(self.players), set(self.pushables)
        for a in movers:
            if not self.try_move(a, self.dr[a], pset, uset):
                self.dr[a] = _OPPOSITE[self.dr[a]]
                self.changed = True
        self._contacts(self.players, killers, sinkers, featured)
        for _ in range(self.words_moved):
            self.interpret_rules()
        pos = self.pos
        wins = {pos[w] for w in self.winnables}
        return any(pos[p] in wins for p in self.players)

    # ------------------------------------------------------------------ codec
    # Layout: header (5 x uint32: objects, phys, nouns, rules, noun-section length), then
    # per object pos (uint16), facing, YOU/MOVE/PUSH-movable flag, STOP flag, kind (bytes),
    # the per-noun lists (uint16), the rules (uint16), the object layer (one byte per cell,
    # or uint16 when there are 255 objects or more) and a final width byte.
    def _canonical_order(self) -> list[int]:
        n_words = self.lv.n_words
        order: dict[int, None] = dict.fromkeys(range(n_words))
        order.update(dict.fromkeys(self.phys))
        for n in sorted(self.sp):
            order.update(dict.fromkeys(self.sp[n]))
        order.update(dict.fromkeys(o - 1 for o in self.om if o))
        return list(order)

    def encode(self) -> bytes:
        """Pack the state exactly; after a creation or removal objects are renumbered in
        order of first reference (words, phys, noun lists, object layer)."""
        if self.renumber:
            old = self._canonical_order()
            new = {o: i for i, o in enumerate(old)}
            new[-1] = -1
            self.phys = [new[o] for o in self.phys]
            self.sp = {n: [new[o] for o in objs] for n, objs in self.sp.items()}
            self.om = [new[o - 1] + 1 for o in self.om]
            self.pos, self.dr, self.mv, self.st, self.nm = (
                [seq[o] for o in old] for seq in (self.pos, self.dr, self.mv, self.st, self.nm))
            self.renumber = False
        n = len(self.pos)
        names = sorted(self.sp)
        lists = array("H")
        for name in names:
            lists.append(name)
            lists.append(len(self.sp[name]))
            lists.extend(self.sp[name])
        rules = array("H", (a << 8 | b for a, b in self.rules))
        wide = n >= 255
        head = array("I", (n, len(self.phys), len(names), len(self.rules), len(lists)))
        return b"".join((head.tobytes(), array("H", self.pos).tobytes(), bytes(self.dr),
                         bytes(self.mv), bytes(self.st), bytes(self.nm), lists.tobytes(),
                         rules.tobytes(),
                         array("H", self.om).tobytes() if wide else bytes(self.om),
                         b"\x01" if wide else b"\x00"))

    def decode(self, key: bytes) -> None:
        """Unpack `encode`'s bytes into working lists and recompute the property lists."""
        head = array("I")
        head.frombytes(key[:20])
        n, n_phys, n_names, n_rules, n_lists = head
        pos = array("H")
        i = 20 + 2 * n
        pos.frombytes(key[20:i])
        self.pos = pos.tolist()
        self.dr = list(key[i: i + n])
        self.mv = list(key[i + n: i + 2 * n])
        self.st = list(key[i + 2 * n: i + 3 * n])
        self.nm = list(key[i + 3 * n: i + 4 * n])
        i += 4 * n
        ints = array("H")
        ints.frombytes(key[i: i + 2 * (n_lists + n_rules)])
        i += 2 * (n_lists + n_rules)
        self.phys = list(range(self.lv.n_words, self.lv.n_words + n_phys))
        self.sp = {}
        j = 0
        for _ in range(n_names):
            self.sp[ints[j]] = ints[j + 2: j + 2 + ints[j + 1]].tolist()
            j += 2 + ints[j + 1]
        self.rules = [(v >> 8, v & 0xFF) for v in ints[j: j + n_rules]]
        if key[-1]:
            om = array("H")
            om.frombytes(key[i:-1])
            self.om = om.tolist()
        else:
            self.om = list(key[i:-1])
        self._derive()  # flags and the object layer were stored; only the lists are derived
