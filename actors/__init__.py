"""Actors: the runtime every world runs on, the shape of a world, and one package per kind.

- `world.py`: `World`, the shape of every world as a value (pure): initial state,
  `evolve`, the codec of its stored events, a table of moves and reads, `Refusal`.
- `runtime/`: trio, no server code: `WorldActor` (the generic host of a `World`), the
  low-level `Actor`, the mailbox, topics and subscriber queues, the `Directory` that
  activates worlds on demand and the `ActorRef` adapters hold (see runtime/__init__.py).
- `store.py`: the `EventStore` interface (and an in-memory one); SQLite and PostgreSQL
  live in `server/storage/`.
- `exports.py`: the lazy hubs of world packages.
- `chat_completions.py`: edge I/O, the one HTTP exchange with a model endpoint (the run's
  setup and the lab's breeder), held to a deadline and a size.

World packages, each `__init__.py` exporting `WORLD` (listed in `server/worlds.py`):
`lobby/` (the list of worlds), `counter/` (the smallest world, the template), `field/`
(mosaic); engines not live yet: `puzzle/`, `ecosystem/` (LifePot), `lab/` (Petri Dish).
"""
