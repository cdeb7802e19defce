"""Actors: the runtime every world runs on, and one package per world kind.

The runtime (trio, no server code):

- `runtime.py`: `Actor`, the base of every world: one task, one message at a time, batches
  made durable by one append, timers, the supervisor that restarts a crashed actor.
- `mailbox.py`: the bounded mailbox and what travels through it (`Call`, asks, tells, `Timer`).
- `topic.py`: an actor's subscribers and its bounded history of events for resume.
- `subscriber.py`: `SubscriberQueue`, the bounded queue of frames between actors and a connection.
- `waiter.py`: `Waiter`, where the one reader of a mailbox or outbox parks.
- `directory.py`: `Directory`, actor ids (`kind:name`) to live actors, started on demand per kind.
- `context.py`: what an actor gets from its host (`RuntimeConfig`, observer) and `ActorStatistics`.
- `store.py`: the `EventStore` interface (and an in-memory one); SQLite lives in `server/storage/`.

World kinds, each a package of pure domain modules, plus `actor.py` once it is served live:
`lobby/` (the list of worlds), `scratch/` (a durable counter that exercises the server),
`field/` (mosaic), `ecosystem/` (LifePot), `lab/` (Petri Dish), `puzzle/` (the rule puzzle).
"""
