"""The lobby world (`lobby:main`): the list of worlds, and the door to create new ones.

It lists every world it created and every live world (kind, id, revision, subscribers,
live), creates worlds by kind when the caller's role allows it, and publishes changes:
a `world_created` event for each creation, and a fresh `snapshot` push whenever the
live figures (revisions, subscribers) changed since the last tick.

- `catalog.py`: the pure part: the catalog state, `decide_create`, `apply`, `listing`.
- `actor.py`: `LobbyActor`, which asks the directory to create worlds and ticks.

`server/` may import `KIND` and `LobbyActor` from here.
"""

from actors.lobby.actor import KIND, LobbyActor

__all__ = ["KIND", "LobbyActor"]
