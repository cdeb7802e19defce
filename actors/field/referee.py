"""The referee's decisions: pure functions of (state, command) -> event or Refusal.

Nothing here changes state: the actor appends the returned event to the store and
folds it (`fold.apply_event`). The true solution and the givens (the generator's
`Field`) are the referee's secret; they never enter the state or the events beyond what an event
reveals (givens on reveal, the value of a wrong cell the agent sent).

Refusal codes (`actors.world.Refusal`; a refused command changes nothing; the codes are
the protocol's and the field's own, `protocol.ops.field.FieldCode`):

| code | when |
| --- | --- |
| `stale_revision` | `expected_revision` is not the state's revision |
| `agent` | the agent id has not joined this field (the seed's code) |
| `dead` | the agent died of its wrong-rate (see health.py); reveal, commit, retract refused |
| `ended` | the field ended (a growth found no room) |
| `bad_tile` | the tile id is not a tile of the field |
| `not_hidden` | reveal of a tile already revealed or solved |
| `not_on_frontier` | reveal outside the group's frontier (see territory.py) |
| `bad_cell` | a cell entry is not [id, v] with id in 0..G*G-1 and v 0 or 1 (retract: not an id) |
| `too_large` | more than MAX_BATCH cells in one commit or retract |
| `bad_request` | an intent over MAX_INTENT characters, or a join name that is empty or too long |
| `no_room` | join finds no hidden tile to seat the agent on |
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actors.field.analysis import classify_reveal
from actors.field.events import (
    Accepted,
    CommitEvent,
    Ignored,
    JoinEvent,
    Meet,
    Rejected,
    RetractEvent,
    RevealEvent,
    Solved,
    event_to_json,
)
from actors.field.fold import (
    FORCED,
    GIVEN,
    GUESS,
    HIDDEN,
    IMPLICIT_AGENT,
    REVEALED,
    SOLVED,
    State,
)
from actors.field.generate import Field
from actors.field.health import dead_message, health_note, health_of
from actors.field.propagate import propagate
from actors.field.territory import frontier, on_frontier
from actors.world import Refusal
from protocol.ops.field import MAX_BATCH, MAX_INTENT, MAX_NAME
from protocol.text import utf16_len

SEAT_SPREAD = 0.5  # join picks among candidates at least this share of the best distance away


_ENDED = "the field has ended: a growth found no room"


def stale(s: State, expected: int) -> Refusal:
    """The refusal of a write made at another revision than the field's."""
    return Refusal("stale_revision", f"expected revision {expected}, the field is at "
                   f"{s.revision}; observe again and retry", {"revision": s.revision})


def not_joined(agent: str) -> Refusal:
    """The refusal of an agent id nobody joined as (the seed's code and sentence)."""
    return Refusal("agent", f"Agent {agent} has not joined this game; call join first.",
                   {"path": "args.agent"})


def _check_writer(s: State, agent: str, expected: int | None) -> int | Refusal:
    """The agent's index, or why it may not write now."""
    if expected is not None and expected != s.revision:
        return stale(s, expected)
    if s.ended:
        return Refusal("ended", _ENDED)
    i = s.agent_index(agent)
    if i is None:
        return not_joined(agent)
    died_at = s.stats[i].health.died_at
    if died_at is not None:
        return Refusal("dead", dead_message(agent, died_at), {"died_at": died_at})
    return i


# ---------------------------------------------------------------- join


def join(s: State, rng: np.random.Generator, *, name: str, model: str, user: str,
         harness: str, t: int, machine: str = "") -> JoinEvent | Refusal:
    """Seat a new agent on a hidden tile at a random spot away from everyone.

    Candidates are the manifest's seed tiles of the newest growth ring that are hidden and
    nobody's seed, then older rings, then any hidden tile. Among them the agent lands on a
    random one whose distance (between bounding-box centres) to the nearest occupied tile
    (a seed tile or a revealed or solved tile) is at least SEAT_SPREAD of the largest.
    """
    if s.ended:
        return Refusal("ended", _ENDED)
    if not name or utf16_len(name) > MAX_NAME:
        return Refusal("bad_request", f"args.name: a name has 1..{MAX_NAME} characters",
                       {"path": "args.name"})
    status = s.status.to_array()
    taken = {a.seed_tile for a in s.agents}
    candidates: list[int] = []
    for ring in reversed(s.manifest.seed_rings):
        candidates = [t for t in ring if status[t] == HIDDEN and t not in taken]
        if candidates:
            break
    if not candidates:
        candidates = [t for t in np.flatnonzero(status == HIDDEN).tolist() if t not in taken]
    if not candidates:
        return Refusal("no_room", "no hidden tile is left to seat a new agent on")
    occupied = sorted(taken | set(np.flatnonzero(status != HIDDEN).tolist()))
    pick = candidates
    if occupied:
        cand_xy, occ_xy = _centres(s, candidates), _centres(s, occupied)
        # in blocks, so a big field's candidates x occupied matrix never exists at once
        d = np.concatenate([
            np.hypot(*(block[:, None, :] - occ_xy[None, :, :]).transpose(2, 0, 1)).min(1)
            for block in np.array_split(cand_xy, -(-len(cand_xy) // 256))])
        pick = [c for c, dc in zip(candidates, d.tolist(), strict=True)
                if dc >= SEAT_SPREAD * d.max()]
    seat = pick[int(rng.integers(len(pick)))]
    return JoinEvent(rev=s.revision + 1, t=t, agent=s.next_agent(), name=name, model=model,
                     user=user, harness=harness, seed_tile=seat, machine=machine)


def dead_agent(s: State, user: str, machine: str) -> str | None:
    """The id of an agent of `user` (or of `machine`, a digest) that died on this field,
    or None: death is for the day, so such a caller rejoins as its dead agent."""
    for a, st in zip(s.agents, s.stats, strict=True):
        if st.health.died_at is not None and (
                (user and a.user == user) or (machine and a.machine == machine)):
            return a.id
    return None


def implicit_join(s: State, t: int) -> JoinEvent | Refusal:
    """The seed's implicit agent `a0`, joined on its first write on the manifest's seed
    tile: the first seed tile (ring by ring) that is hidden and nobody's seat, else the
    first such tile of the field."""
    if s.ended:
        return Refusal("ended", _ENDED)
    status = s.status.to_array()
    taken = {a.seed_tile for a in s.agents}
    free = [x for x in (*s.manifest.seed_tiles, *range(len(status)))
            if status[x] == HIDDEN and x not in taken]
    if not free:
        return Refusal("no_room", "no hidden tile is left to seat the implicit agent a0 on")
    return JoinEvent(rev=s.revision + 1, t=t, agent=IMPLICIT_AGENT, name="implicit", model="",
                     user="", harness="", seed_tile=free[0])


def _centres(s: State, tiles: list[int]) -> np.ndarray:
    b = s.boxes[tiles].astype(float)
    return b[:, :2] + b[:, 2:] / 2


# ---------------------------------------------------------------- reveal


def reveal(s: State, truth: Field, *, agent: str, tile: int, t: int,
           expected_revision: int | None = None, intent: str = "") -> RevealEvent | Refusal:
    """Reveal `tile` (its givens become known) if it is hidden and on the caller's frontier."""
    i = _check_writer(s, agent, expected_revision)
    if isinstance(i, Refusal):
        return i
    if utf16_len(intent) > MAX_INTENT:
        return Refusal("bad_request", f"an intent has at most {MAX_INTENT} characters")
    if not isinstance(tile, int) or isinstance(tile, bool) or not 0 <= tile < len(s.geo.tiles):
        return Refusal("bad_tile", f"tile {tile!r} is not a tile of this field")
    if s.status[tile] != HIDDEN:
        return Refusal("not_hidden", f"tile {tile} is already {('revealed', 'solved')[s.status[tile] - 1]}")
    if not on_frontier(s, i, tile):
        return Refusal("not_on_frontier", f"tile {tile} is not on your frontier: your seed tile "
                       "while unsolved, or an unsolved tile touching a tile your group solved")
    cells = truth.givens[tile]
    fresh = cells[s.values.take(cells) < 0]
    givens = tuple(zip(fresh.tolist(), truth.solution[fresh].tolist(), strict=True))
    solved, meets = settle(s, i, fresh, revealing=tile)
    return RevealEvent(rev=s.revision + 1, t=t, agent=agent, tile=tile, givens=givens,
                       step=classify_reveal(s, i, tile), solved=solved, meets=meets,
                       intent=intent)


# ---------------------------------------------------------------- commit


def commit(s: State, truth: Field, *, agent: str, cells: list, intent: str, t: int,
           expected_revision: int | None = None) -> CommitEvent | Refusal:
    """Judge a batch of [cell id, value] pairs against the true solution.

    In batch order: repeats, holes, known cells and cells outside the group's territory
    (revealed tiles it revealed, and its seed tiles) are ignored; a wrong value is rejected with it; a correct value is accepted
    `forced` when the referee's propagation reaches it from the cells known so far
    (including this batch's earlier cells), else `guess` (policy accept) or rejected
    with reason `guess` (policy reject: correct but unforced, not counted wrong).

    The propagation runs on the revealed tiles the batch's cells lie in and every revealed
    tile linked to them through shared cells of revealed tiles: propagation moves between
    tiles only through shared cells, so this is exactly what a closure of every revealed
    tile reaches for these cells (a revealed neighbour the batch does not touch may well
    hold the deduction that forces one), and its cost follows those tiles, not the field.
    """
    i = _check_writer(s, agent, expected_revision)
    if isinstance(i, Refusal):
        return i
    if utf16_len(intent) > MAX_INTENT:
        return Refusal("bad_request", f"an intent has at most {MAX_INTENT} characters")
    pairs = _cell_pairs(s, cells)
    if isinstance(pairs, Refusal):
        return pairs
    ignored, rejected, correct = _screen(s, truth, i, pairs)
    accepted, refused = _classify(s, correct)
    rejected += refused
    ids = np.array([a.id for a in accepted], dtype=np.int64)
    solved, meets = settle(s, i, ids)
    last = s.stats[i].last_commit_t
    order = {c: k for k, (c, _) in enumerate(pairs)}
    return CommitEvent(
        rev=s.revision + 1, t=t, agent=agent, intent=intent, accepted=tuple(accepted),
        rejected=tuple(sorted(rejected, key=lambda r: order[r.id])), ignored=tuple(ignored),
        solved=solved, meets=meets, dt_ms=None if last is None else max(t - last, 0))


def _cell_pairs(s: State, cells: list) -> list[tuple[int, int]] | Refusal:
    if not isinstance(cells, list | tuple):
        return Refusal("bad_cell", "cells is a list of [cell id, value] pairs")
    if len(cells) > MAX_BATCH:
        return Refusal("too_large", f"at most {MAX_BATCH} cells per batch, got {len(cells)}")
    n = s.manifest.G ** 2
    out = []
    for k, pair in enumerate(cells):
        ok = isinstance(pair, list | tuple) and len(pair) == 2 and all(
            isinstance(x, int) and not isinstance(x, bool) for x in pair)
        if not ok or not 0 <= pair[0] < n or pair[1] not in (0, 1):
            return Refusal("bad_cell", f"cells[{k}] is not [cell id in 0..{n - 1}, 0 or 1]",
                           {"index": k})
        out.append((pair[0], pair[1]))
    return out


def _screen(s: State, truth: Field, i: int, pairs: list[tuple[int, int]]
            ) -> tuple[list[Ignored], list[Rejected], list[tuple[int, int]]]:
    """Split a batch into ignored cells, wrong cells and correct candidates."""
    geo, groups = s.geo, s.groups
    root = groups.find(i)
    # territory: tiles the group revealed, and its seed tiles even when another group
    # revealed them first (or the seated agent could never play its seed)
    seeds = {s.agents[j].seed_tile for j in s.group_of(i)}
    ignored: list[Ignored] = []
    rejected: list[Rejected] = []
    correct: list[tuple[int, int]] = []
    seen: set[int] = set()
    for c, v in pairs:
        tiles = geo.tiles_of(c).tolist()
        open_tiles = [x for x in tiles if s.status[x] == REVEALED]
        reason = None
        if c in seen:
            reason = "duplicate"
        elif not tiles:
            reason = "hole"
        elif s.values[c] >= 0:
            reason = "given" if s.source[c] == GIVEN else "known"
        elif not open_tiles:
            reason = "not_revealed"
        elif not any(groups.find(s.revealer[x]) == root or x in seeds for x in open_tiles):
            reason = "not_territory"
        seen.add(c)
        if reason is not None:
            ignored.append(Ignored(c, reason))
        elif truth.solution[c] != v:
            rejected.append(Rejected(c, "wrong", v))
        else:
            correct.append((c, v))
    return ignored, rejected, correct


def _classify(s: State, correct: list[tuple[int, int]]) -> tuple[list[Accepted], list[Rejected]]:
    """Accept correct cells as forced or guess (or refuse them as not_forced), in order."""
    if not correct:
        return [], []
    geo, depth = s.geo, s.rules.depth

    def revealed(t: int) -> bool:
        return s.status[t] == REVEALED

    known = s.values
    fixed: dict = {}

    def spread(start: list[int]) -> None:
        nonlocal known
        closure = propagate(geo, known.take, revealed, start, depth)
        fresh = [d for c, d in closure.fixed.items() if c not in fixed]
        fixed.update(closure.fixed)
        known = known.set([d.cell for d in fresh], [d.value for d in fresh])

    reach = revealed_reach(s, {x for c, _ in correct for x in geo.tiles_of(c).tolist()})
    spread(reach)
    accepted: list[Accepted] = []
    refused: list[Rejected] = []
    for k, (c, v) in enumerate(correct):
        d = fixed.get(c)
        if d is not None:
            accepted.append(Accepted(c, v, "forced", d.rules))
        elif s.rules.guess == "reject":
            refused.append(Rejected(c, "guess", v))
        else:
            accepted.append(Accepted(c, v, "guess"))
            known = known.set([c], [v])
            if any(c2 not in fixed for c2, _ in correct[k + 1:]):
                # depth 0: the reach is closed, so what the guess changes spreads from its
                # own tiles; bifurcation may start anywhere in the reach
                spread(geo.tiles_of(c).tolist() if depth == 0 else reach)
    return accepted, refused


def revealed_reach(s: State, tiles: set[int]) -> list[int]:
    """The revealed tiles among `tiles` and every revealed tile linked to them through
    neighbours that are revealed too (ascending): all the referee's propagation can use."""
    status, neighbours = s.status, s.geo.neighbours
    stack = [t for t in tiles if status[t] == REVEALED]
    seen = set(stack)
    while stack:
        for n in neighbours[stack.pop()]:
            if n not in seen and status[n] == REVEALED:
                seen.add(n)
                stack.append(n)
    return sorted(seen)


# ---------------------------------------------------------------- settle


def settle(s: State, i: int, new_ids: np.ndarray, revealing: int | None = None
           ) -> tuple[tuple[Solved, ...], tuple[Meet, ...]]:
    """Tiles that become solved when `new_ids` become known (by agent index i), and meets.

    A revealed tile (or the tile being revealed) is solved once all its cells are known;
    it is attributed to i and earns its cell count. A solved tile touching a tile solved
    by another group is a meet; groups merge as meets are found, so each pair meets once.
    """
    geo = s.geo
    cand = {x for c in np.asarray(new_ids).tolist() for x in geo.tiles_of(c).tolist()
            if s.status[x] == REVEALED}
    if revealing is not None:
        cand.add(revealing)
    new_set = np.asarray(new_ids, dtype=np.int64)
    newly: list[int] = []
    for tile in sorted(cand):
        cells = geo.tiles[tile].cells
        unknown = cells[s.values.take(cells) < 0]
        if not len(unknown) or np.isin(unknown, new_set).all():
            newly.append(tile)
    agent = s.agents[i].id
    solved = tuple(Solved(x, agent, geo.tiles[x].n) for x in newly)
    meets: list[Meet] = []
    groups = s.groups
    fresh = set(newly)
    for tile in newly:
        for n in geo.neighbours[tile]:
            if n in fresh or s.status[n] != SOLVED:
                continue
            j = s.solver[n]
            if groups.find(j) != groups.find(i):
                meets.append(Meet(agent, s.agents[j].id, tile, n))
                groups = groups.union(i, j)
    return solved, tuple(meets)


# ---------------------------------------------------------------- retract


def retract(s: State, *, agent: str, cells: list, t: int,
            expected_revision: int | None = None, intent: str = "") -> RetractEvent | Refusal:
    """Take back the caller's own accepted cells on unsolved tiles; others are ignored."""
    i = _check_writer(s, agent, expected_revision)
    if isinstance(i, Refusal):
        return i
    if utf16_len(intent) > MAX_INTENT:
        return Refusal("bad_request", f"an intent has at most {MAX_INTENT} characters")
    if not isinstance(cells, list | tuple):
        return Refusal("bad_cell", "cells is a list of cell ids")
    if len(cells) > MAX_BATCH:
        return Refusal("too_large", f"at most {MAX_BATCH} cells per batch, got {len(cells)}")
    n = s.manifest.G ** 2
    for k, c in enumerate(cells):
        if not isinstance(c, int) or isinstance(c, bool) or not 0 <= c < n:
            return Refusal("bad_cell", f"cells[{k}] is not a cell id in 0..{n - 1}", {"index": k})
    retracted: list[int] = []
    ignored: list[Ignored] = []
    seen: set[int] = set()
    for c in cells:
        if c in seen:
            ignored.append(Ignored(c, "duplicate"))
        elif s.owner[c] != i or s.source[c] not in (FORCED, GUESS):
            ignored.append(Ignored(c, "not_yours"))
        elif any(s.status[x] == SOLVED for x in s.geo.tiles_of(c).tolist()):
            ignored.append(Ignored(c, "solved"))
        else:
            retracted.append(c)
        seen.add(c)
    return RetractEvent(rev=s.revision + 1, t=t, agent=agent, retracted=tuple(retracted),
                        ignored=tuple(ignored), intent=intent)


# ---------------------------------------------------------------- results


def commit_result(after: State, ev: CommitEvent) -> dict[str, Any]:
    """The reply to a commit, read off the state after its event (or unchanged, for a no-op):
    the verdicts, solved tiles, meets, reward, the new frontier, health and a note at warning."""
    i = after.agent_index(ev.agent)
    h = health_of(after.stats[i].health)
    out: dict[str, Any] = {
        "revision": after.revision, "agent": ev.agent, "health": h.to_json(),
        **{k: v for k, v in event_to_json(ev).items()
           if k in ("accepted", "rejected", "ignored", "solved", "meets")},
        "reward": sum(x.reward for x in ev.solved), "frontier": frontier(after, i),
    }
    note = health_note(h)
    if note is not None:
        out["note"] = note
    return out
