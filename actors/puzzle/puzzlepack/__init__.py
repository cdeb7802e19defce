"""Packs of one's own and installed packs, `puzzlepack:<pack id>`: each a created world.

`puzzlepack.create` makes an empty pack (the level editor saves levels into it) or installs
the pack of a data-only share link (validated like any pack: nothing of it runs). The caller
who created it owns it: only the owner saves, removes and solves; anyone reads it, and a room
plays it (`puzzle.create {installed}`). Every saved level is validated by the engine and fits
a room; the pack is shared as a `pd1.` link.

* `rules.py`: the pack's state, events, moves and reads, and `WORLD` (pure).
* `solving.py`: the editor's solver run (`puzzlepack.solve`) as plain data, and its progress.
* `actor.py`: `PackActor`, which runs `puzzlepack.solve` off the task and pushes its
  progress to the pack's subscribers; `WORLD` with it.
"""

from actors.exports import lazy_exports

__all__ = ["WORLD"]
__getattr__, __dir__ = lazy_exports(__name__, {"WORLD": "actor"})
