"""Territory, frontier and reach: what a group of agents holds, read off a fold state.

A group (agents merged by meets) holds its territory: the tiles its members revealed
or solved and its members' seed tiles. Its frontier is every member's seed tile while
unsolved plus every unsolved tile sharing a cell with a tile the group solved; reveal
is accepted only there. Under fog a hidden tile is listed once the group reaches it:
a tile the group revealed or solved overlaps it, or it is a member's seed tile.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from actors.field.fold import HIDDEN, SOLVED, State


def frontier(s: State, i: int) -> list[int]:
    """The frontier of agent index i's group, ascending tile ids."""
    geo, status = s.geo, s.status
    out: set[int] = set()
    for j in s.group_of(i):
        seed = s.agents[j].seed_tile
        if status[seed] != SOLVED:
            out.add(seed)
        for t in s.stats[j].solved_tiles:
            out.update(n for n in geo.neighbours[t] if status[n] != SOLVED)
    return sorted(out)


def on_frontier(s: State, i: int, tile: int) -> bool:
    """Whether `tile` is on agent index i's group frontier (cost: the tile's neighbours)."""
    if s.status[tile] == SOLVED:
        return False
    groups = s.groups
    root = groups.find(i)
    if any(a.seed_tile == tile and groups.find(j) == root for j, a in enumerate(s.agents)):
        return True
    return any(s.status[n] == SOLVED and groups.find(s.solver[n]) == root
               for n in s.geo.neighbours[tile])


def territory(s: State, i: int) -> list[int]:
    """Tiles agent index i's group revealed or solved, plus its members' seed tiles."""
    out: set[int] = set()
    for j in s.group_of(i):
        st = s.stats[j]
        out.add(s.agents[j].seed_tile)
        out.update(st.revealed_tiles)
        out.update(st.solved_tiles)
    return sorted(out)


def reached(s: State, i: int) -> set[int]:
    """Tiles the group of agent index i has reached (listed under fog even when hidden)."""
    terr = territory(s, i)
    out = set(terr)
    for t in terr:
        if s.status[t] != HIDDEN:
            out.update(s.geo.neighbours[t])
    return out


def distances(s: State, source: int, targets: Iterable[int]) -> dict[int, int]:
    """BFS distances (in tile-neighbour steps) from `source` to each reachable target.

    The search stops once every target is found, so its cost follows the distance
    to the farthest target, not the field.
    """
    want = set(targets)
    dist = {source: 0}
    found = {source: 0} if source in want else {}
    queue = deque([source])
    nbrs = s.geo.neighbours
    while queue and len(found) < len(want):
        t = queue.popleft()
        for n in nbrs[t]:
            if n not in dist:
                dist[n] = dist[t] + 1
                if n in want:
                    found[n] = dist[n]
                queue.append(n)
    return found
