"""Test glue for live fields: start one and wait for it, read an actor's stored events."""

from __future__ import annotations

from typing import Any

import trio

from actors.field.events import event_from_json
from actors.field.fold import State, replay
from protocol.client import Client, RequestError


async def ready(client: Client, game: str, timeout: float = 60.0) -> dict[str, Any]:
    """Wait until `field:game` has its manifest; its rules."""
    with trio.fail_after(timeout):
        while True:
            try:
                return await client.request("field.rules", f"field:{game}")
            except RequestError as e:
                if e.code not in ("generating", "unknown_actor"):
                    raise
            await trio.sleep(0.1)


async def start(client: Client, game: str, **args: Any) -> dict[str, Any]:
    """Start `field:game` with `args` and wait until it is ready."""
    started = await client.request("field.start", f"field:{game}", args)
    assert started == {"game": game, "status": "generating", "revision": 0}
    return await ready(client, game)


async def stored_replay(directory: Any, actor_id: str) -> State:
    """The fold of the actor's events as read back from the store."""
    stored = await directory.store.read(actor_id)
    return replay([event_from_json({k: v for k, v in e.data.items()
                                    if k not in ("dirty", "caller")}) for e in stored])
