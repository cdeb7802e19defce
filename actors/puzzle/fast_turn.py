"""The working state of one keke fast-path turn, and its exact `bytes` key codec.

`FastTurn` holds one state as flat integer lists while `fast.FastLevel` plays a turn on it (the
module doc of `fast.py` lists the Keke semantics re-stated here); `encode`/`decode` pack a
settled state into the solver's key and back. Guidance reads a finished turn (`guide.py`).
"""

from __future__ import annotations

from array import array
from itertools import compress
from typing import TYPE_CHECKING

from .words import NOUNS, WORD_CODE

if TYPE_CHECKING:
    from .fast import FastLevel

# Facings of the fast path (0 is never stored; Keke's "no facing yet" behaves as right).
UP, DOWN, LEFT, RIGHT = 1, 2, 3, 4
MOVES = {"u": UP, "d": DOWN, "l": LEFT, "r": RIGHT, "s": 0}
_OPPOSITE = (0, DOWN, UP, RIGHT, LEFT)
(_YOU, _WIN, _KILL, _PUSH, _STOP, _MOVE, _HOT, _MELT, _SINK) = (
    WORD_CODE[p] for p in ("you", "win", "defeat", "push", "stop", "move", "hot", "melt", "sink"))
_FEATURES = frozenset({_HOT, _MELT, _MOVE})  # Keke's feature list (OPEN/SHUT have no words)
_N_NOUNS = len(NOUNS)  # word codes below this are nouns, equal to their object kind codes


def _splice(seq: list[int], item: int) -> None:
    """Remove `item` like JS `seq.splice(seq.indexOf(item), 1)`: a miss removes the last."""
    try:
        del seq[seq.index(item)]
    except ValueError:
        if seq:
            del seq[-1]



class FastTurn:
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
        # The key's header and its noun-list and rule sections, while still valid: they change
        # only with a creation, a removal or a rules re-read (each clears it), not with a move.
        self.fixed: tuple[bytes, bytes] | None = None
        # Set while kinds, flags, the phys list and the noun lists are shared with a copy:
        # most turns change none of them, so they are copied only before a change (`_own`).
        self.shared = False

    def copy(self) -> FastTurn:
        """A working copy; what either side changes afterwards is not seen by the other."""
        t = FastTurn.__new__(FastTurn)
        t.__dict__.update(self.__dict__)
        t.pos, t.dr, t.om = self.pos[:], self.dr[:], self.om[:]
        t.moved = set()
        self.shared = t.shared = True
        return t

    def _own(self) -> None:
        """Take private copies of the lists `copy` shares, before changing one of them."""
        if self.shared:
            self.nm, self.mv, self.st, self.phys = self.nm[:], self.mv[:], self.st[:], self.phys[:]
            self.sp = {n: objs[:] for n, objs in self.sp.items()}
            self.shared = False

    def new_object(self, kind: int, cell: int) -> int:
        """Append a phys object with default flags and facing; registers it by noun."""
        self._own()
        self.fixed = None
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
        # Flags and property lists are a function of the rules and the noun lists (kept so
        # by every change), so when neither changes only the object layer needs re-placing.
        same, made = rules == self.rules, len(self.nm)
        self.rules = rules
        self._transform()
        if same and len(self.nm) == made:
            self._place()
            return
        self.fixed = None
        self.reset_all()

    def _transform(self) -> None:
        frozen = {a for a, b in self.rules if a == b and a in self.sp}
        for a, b in self.rules:
            if a in frozen or a >= _N_NOUNS or b >= _N_NOUNS or not self.sp.get(a):
                continue
            self._own()
            sp = self.sp
            for o in list(sp[a]):
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
        self._own()
        mv, st = self.mv, self.st
        for o in self.phys:
            mv[o] = st[o] = False
        self._derive()
        for group in (self.players, self.automovers, self.pushables):
            for o in group:
                mv[o] = True
        for o in self.stoppables:
            st[o] = True
        self._place()

    def _place(self) -> None:
        """Re-place the object layer: movable or STOP phys objects, then words on top."""
        mv, st, om, pos = self.mv, self.st, self.om, self.pos
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
        elif self.lv.facing_matters:  # a word's facing never matters, nor any without MOVE
            self.dr[e] = d
        return True

    def _destroy(self, dead: list[tuple[int, int]]) -> None:
        if not dead:
            return
        self._own()
        self.renumber = self.changed = True
        self.fixed = None
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
        # Pairs share a cell (p == k too), so a cell test at C speed skips the usual no-pair case.
        if killers and not set(map(pos.__getitem__, players)).isdisjoint(
                map(pos.__getitem__, killers)):
            self._destroy([(p, k) for p in players for k in killers
                           if p == k or pos[p] == pos[k]])
        if sinkers:
            wet = set(map(pos.__getitem__, sinkers))
            # The phys objects on sinker cells, in phys order, filtered at C speed.
            on_wet = list(compress(self.phys, map(wet.__contains__,
                                                  map(pos.__getitem__, self.phys))))
            # The usual case, each sinker alone on its own cell, has no pair: skip the pairing.
            if not (len(on_wet) == len(wet) == len(sinkers) and set(on_wet) == set(sinkers)):
                by_cell: dict[int, list[int]] = {}  # cell -> its sinkers, in sinker-list order
                for s in sinkers:
                    by_cell.setdefault(pos[s], []).append(s)
                self._destroy([(p, s) for p in on_wet for s in by_cell[pos[p]] if p != s])
        if _HOT in featured and _MELT in featured:
            hot = [o for n in featured[_HOT] for o in self.sp[n]]
            melt = [o for n in featured[_MELT] for o in self.sp[n]]
            if not set(map(pos.__getitem__, hot)).isdisjoint(map(pos.__getitem__, melt)):
                self._destroy([(a, b) for a in hot for b in melt
                               if a == b or pos[a] == pos[b]])

    def turn(self, d: int) -> bool:
        """One Keke turn: YOU moves, contacts, MOVE steps, contacts, reparse, win check."""
        # Most steps of phys objects enter a cell that is free on the object layer: those are
        # played inline (what `try_move` would do), the rest go through `try_move`.
        pos, om, mv, dr, moved = self.pos, self.om, self.mv, self.dr, self.moved
        border, delta = self.lv.border, self.lv.delta
        if d:
            players, killers, sinkers, featured = (self.players, self.killers, self.sinkers,
                                                   self.featured)
            pset, uset = set(players), set(self.pushables)
            step, keep_facing = delta[d], self.lv.facing_matters
            for p in players:
                target = pos[p] + step
                if om[target] or border[target] or p in moved or not mv[p]:
                    self.try_move(p, d, pset, uset)
                    continue
                om[pos[p]] = 0
                pos[p] = target
                om[target] = p + 1
                moved.add(p)
                self.changed = True
                if keep_facing:
                    dr[p] = d
            self._contacts(players, killers, sinkers, featured)
        movers, killers, sinkers, featured = (self.automovers, self.killers, self.sinkers,
                                              self.featured)
        pset, uset = set(self.players), set(self.pushables)
        for a in movers:
            facing = dr[a]
            target = pos[a] + delta[facing]
            if om[target] or border[target] or a in moved or not mv[a]:
                if not self.try_move(a, facing, pset, uset):
                    dr[a] = _OPPOSITE[facing]
                    self.changed = True
                continue
            om[pos[a]] = 0  # a MOVE object is a phys object, so its facing stays as it is
            pos[a] = target
            om[target] = a + 1
            moved.add(a)
            self.changed = True
        self._contacts(self.players, killers, sinkers, featured)
        for i in range(self.words_moved):
            before = self.rules, len(self.nm)
            self.interpret_rules()
            # A later re-read that reads the same rules and transforms nothing has re-placed
            # the object layer as the one before it did, so every further one is the same.
            # (The first is always played: it reads the layer as movement left it.)
            if i and self.rules == before[0] and len(self.nm) == before[1]:
                break
        pos = self.pos
        wins = {pos[w] for w in self.winnables}
        return any(pos[p] in wins for p in self.players)

    # ------------------------------------------------------------------ codec
    # Layout: header (5 x uint32: objects, phys, nouns, rules, noun-section length), then
    # per object pos (uint16) and facing (byte); then the *fixed* section: per object the
    # YOU/MOVE/PUSH-movable flag, the STOP flag and the kind (bytes), the per-noun lists and
    # the rules (uint16); then the object layer (one byte per cell, or uint16 when there are
    # 255 objects or more) and a final width byte. Header and fixed section change only with a
    # creation, a removal or a rules re-read (each clears `fixed`), so a move reuses them.
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
            self.fixed = None
        n = len(self.pos)
        if self.fixed is None:
            names = sorted(self.sp)
            lists = array("H")
            for name in names:
                lists.append(name)
                lists.append(len(self.sp[name]))
                lists.extend(self.sp[name])
            rules = array("H", (a << 8 | b for a, b in self.rules))
            head = array("I", (n, len(self.phys), len(names), len(self.rules), len(lists)))
            self.fixed = (head.tobytes(), b"".join((bytes(self.mv), bytes(self.st),
                                                    bytes(self.nm), lists.tobytes(),
                                                    rules.tobytes())))
        if n >= 255:
            return b"".join((self.fixed[0], array("H", self.pos).tobytes(), bytes(self.dr),
                             self.fixed[1], array("H", self.om).tobytes(), b"\x01"))
        return b"".join((self.fixed[0], array("H", self.pos).tobytes(), bytes(self.dr),
                         self.fixed[1], bytes(self.om), b"\x00"))

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
        i += n
        middle = key[i: i + 3 * n + 2 * (n_lists + n_rules)]
        self.fixed = (key[:20], middle)
        self.mv = list(middle[:n])
        self.st = list(middle[n: 2 * n])
        self.nm = list(middle[2 * n: 3 * n])
        ints = array("H")
        ints.frombytes(middle[3 * n:])
        i += len(middle)
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
