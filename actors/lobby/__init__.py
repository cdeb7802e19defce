"""The lobby world (`lobby:main`): the list of worlds, and the door to create new ones.

It lists every world it created and every live world (kind, id, revision, subscribers,
live), creates worlds by kind (with the kind's own create op, when the caller's role
allows it), and publishes changes: a `world_created` event for each creation, and a
fresh `snapshot` push whenever the live figures changed since the last tick.

- `events.py`: `WorldCreated` and its stored JSON.
- `rules.py`: the pure part: the catalog, `decide_create`, `evolve`, `listing`, `WORLD`.
- `actor.py`: `LobbyActor`, the effects: creating through the directory, the tick.

`server/` may import `WORLD` from here.
"""

from actors.exports import lazy_exports

__all__ = ["WORLD"]
__getattr__, __dir__ = lazy_exports(__name__, {"WORLD": "actor"})
