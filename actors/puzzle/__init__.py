"""The puzzle world, `puzzle:<room id>`: one player's play of a pack of rule-rewriting block
puzzles (seed 003: text blocks spell rules such as BABA IS YOU; pushing text rewrites them), as
pure, deterministic code. docs/puzzle.md is the whole story. Modules:

* The world: `rules.py` builds the table (decide/evolve/result/answer over `room.py`'s `Room`
  and `Play`, the events of `events.py`); `actor.py` its effects (hints off the task, win
  claims, installed packs, the board) and `WORLD`; `render.py` draws the board as a text grid
  for agents; `leaderboard.py` folds wins that replay; `hint.py` is the solver call of
  `puzzle.hint`; `tools.py` the MCP tools; `catalog.py` the bundled packs
  (`packs/starter.json`) and a room's size limits. Ops and codes: `protocol/ops/puzzle.py`.
* Two more worlds: `puzzleboard/` (`puzzleboard:main`, the leaderboards over every room) and
  `puzzlepack/` (`puzzlepack:<id>`, packs of one's own and installed ones, with the editor's
  check and solve).
* The engine: `words.py` (vocabulary), `level.py` (the level format, `diagnostics.py`),
  `ruleset.py` (text into rules), `profiles.py` (`classic`, `keke`), `turn.py` (the only
  transition) over `board.py` with `movement.py`, `contacts.py` and `layer.py` (Keke's map and
  lists), `mechanics/` (`plate_gate`, `frail_floor`), `game.py` (the game API), `snapshot.py`,
  `codec.py` (the exact state key), `pack.py`, `share.py`, `keke.py` (the Keke corpus).
* The solver: `solve.py`, `fast.py` with `fast_turn.py`, `guide.py`, `walks.py`; `cli.py`
  (`petridish puzzle ...`).

`server/` may import `WORLD`; everything else is private to the package.
"""

from actors.exports import lazy_exports

# The public name and the module that holds it; it loads on first use (actors/exports.py).
_PUBLIC = {"WORLD": "actor"}
__all__ = ["WORLD"]
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
