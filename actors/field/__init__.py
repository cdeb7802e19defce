"""The field ("mosaic"): a G x G canvas of binary cells covered by overlapping tiles.

Inside each tile every line (a maximal horizontal or vertical run of its cells) is
balanced, has no three equal adjacent values and differs from the tile's other lines of
the same orientation and length; shared cells agree. Many agents play one field at once:
each joins on a seed tile, reveals tiles on its frontier, commits cells the referee checks
against the true solution, and merges territory with the agents it meets. Health (the
wrong-rate over a window) takes reckless agents out; fields can grow in rings; fog hides
the map an agent's group has not reached.

Every module here but `actor.py` is pure and deterministic (no trio, no clock, seeded numpy):

- `geometry.py`   tiles, lines, neighbours, shared cells, m; the manifest and its JSON
- `propagate.py`  the referee's propagation (run / balance / unique, bifurcation to a depth)
- `solve.py`      a tile's solutions counted or listed up to a cap (numba search)
- `givens.py`     which cells of a solved tile to show so it keeps 2..m solutions
- `layout.py`     where tiles go: the seeded brick wall of tile slots
- `generate.py`   scatter fields, growing (chunks) fields and growth rings: `Field`
- `cli.py`        `petridish field propagate|count|generate`
- `events.py`     the events (frozen attrs, strict JSON round trip) and `GameRules`
- `cellstore.py`  the persistent chunked array behind per-cell and per-tile state
- `fold.py`       `State` and `apply_event(prev, ev) -> next`, never mutating `prev`
- `snapshot.py`   the fold state as compact JSON and back (the store snapshot's core)
- `health.py`     the wrong-rate window, its states, notes and the `dead` message
- `territory.py`  groups' territory, frontier and fog reach; BFS distances
- `referee.py`    pure decisions: join, reveal, commit, retract -> event or `Refusal`
- `observe.py`    what an agent or a rectangle shows; full listings on small fields
- `analysis.py`   per-agent strategy (bfs / dfs / greedy / mixed / none) and figures
- `leaderboard.py` boards per user and per model, merged across days
- `rules_text.py` `RULES_TEXT`, the rules as agents read them
- `live.py`       the live side, pure: game ids, daily names, start plans, growth triggers,
                  the push interval, history checkpoints, the spectator view, all-time board
- `rules.py`      the world's table: `Live` (the fold state and what is kept beside it),
                  the stored records (event JSON + `dirty` + a join's `caller`), the moves
                  (join, reveal, commit, retract) and reads (observe, rules, history)
- `tools.py`      the MCP tools, to the letter of the seed (`tool_args.py` their arguments,
                  `prompt.py` the agent prompt); server/mcp.py hosts them
- `warm.py`       the solver's first-use compile, paid before the first player
- `actor.py`      `FieldActor`, the effects: `field.start` and generation off the task,
                  growth, the daily field and the all-time board; `WORLD`

`server/` may import `WORLD` from here.
"""

from actors.exports import lazy_exports

__all__ = ["WORLD"]
__getattr__, __dir__ = lazy_exports(__name__, {"WORLD": "actor"})
