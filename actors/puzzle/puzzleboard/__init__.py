"""The puzzle's board over every room, `puzzleboard:main` (declared: it always exists).

Rooms tell it each win of their player (`rules.WinClaim`: the user, the level and the moves);
it counts a win only when the moves replay to a win in the engine (`leaderboard.verified`)
and beat the user's best, and stores it as a `won` event. Reads: a level's fewest moves by
user (`puzzleboard.level`) and levels solved per user (`puzzleboard.users`).

* `rules.py`: the board's state, its one event, the reads and `WORLD` (pure).
* `actor.py`: `BoardActor`, which takes the rooms' claims (tells, not ops: no client can
  send one); `WORLD` with it.
"""

from actors.exports import lazy_exports

__all__ = ["WORLD"]
__getattr__, __dir__ = lazy_exports(__name__, {"WORLD": "actor"})
