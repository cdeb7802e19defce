"""The scratch world: a durable counter with notes, the simplest world that uses every layer.

It exists to exercise the server end to end (tests, benchmarks, the lobby page): each
`scratch.add` is one validated, durable, published event.

- `fold.py`: the pure rules: `setup`, `decide_add`, `apply`.
- `actor.py`: `ScratchActor`, which dispatches, persists and publishes.

`server/` may import `KIND` from here.
"""

from actors.scratch.actor import KIND, ScratchActor

__all__ = ["KIND", "ScratchActor"]
