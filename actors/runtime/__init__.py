"""The actor runtime (trio, no server code): what every world runs on.

- `base.py`: `Actor`, the low-level base: one task, one message at a time, batches made
  durable by one append, timers, `offload`, deferred answers (`defer`).
- `lifecycle.py`: the rest of `Actor`'s life: (re)loading, the supervisor that restarts a
  crashed actor, unloading an idle one (or one the directory needs the room of), stopping.
- `load.py`: an actor's state from the store, its snapshot restored and the events after
  it folded a slice at a time (the other tasks run between slices).
- `offload.py`: the worker threads and processes behind `Actor.offload`.
- `host.py`: `WorldActor`, the generic host of a `World` value (actors/world.py).
- `directory.py`: `Directory` and `ActorKind`: ids (`kind:name`) to live actors,
  activated on demand; a world exists only once created or declared by its kind.
- `ref.py`: `ActorRef`, the reference by id that adapters hold.
- `placement.py`: `Placement`, where a cluster tells the directory which process hosts
  a world (server/cluster/ implements it), and `Rerouting`.
- `receipts.py`: `Receipts`, the recent writes' callers and request ids an actor answers
  retries from.
- `mailbox.py`: the bounded mailbox and what travels through it (`Call`, asks, tells).
- `topic.py`: an actor's subscribers and its bounded history of events for resume.
- `subscriber.py`: `SubscriberQueue`, the bounded queue of frames to one connection.
- `waiter.py`: `Waiter`, where the one reader of a mailbox or outbox parks.
- `context.py`: what an actor gets from its host (`RuntimeConfig`, clock, observer, the
  model endpoint) and
  `ActorStatistics`.

A world's `actor.py` imports what it needs from here.
"""

from actors.runtime.base import Actor
from actors.runtime.context import ActorContext, ActorStatistics, RuntimeConfig, RuntimeObserver
from actors.runtime.directory import ActorKind, Directory, any_name, open_directory
from actors.runtime.host import WorldActor, refused
from actors.runtime.mailbox import Call, Timer
from actors.runtime.ref import ActorRef

__all__ = ["Actor", "ActorContext", "ActorKind", "ActorRef", "ActorStatistics", "Call",
           "Directory", "RuntimeConfig", "RuntimeObserver", "Timer", "WorldActor", "any_name",
           "open_directory", "refused"]
