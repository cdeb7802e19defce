"""The worlds the owner stopped, held on every process of a cluster.

`admin.stop` holds a world in the directory of the process that answered; the console's
stream (`admin:main`) records it (`world_stopped`, `world_released`). Each process reads
that stream as it joins, before it serves, and again whenever the store notifies that
the stream moved (`Mirrors.follow`), and holds or releases the worlds in its own
directory: a held world hosted here stops, and no process loads it until it is released.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from protocol.ops.admin import ADMIN_ID
from server import admin
from server.storage.postgres import PostgresEventStore

if TYPE_CHECKING:
    from actors.runtime import Directory


class Holds:
    """Follows the console's stream into this process's directory."""

    def __init__(self, store: PostgresEventStore) -> None:
        self.store = store
        self.directory: Directory | None = None
        self.rev: int | None = None  # the console's last revision read; None: none yet
        self._lock = trio.Lock()

    async def catch_up(self) -> None:
        """Hold and release as the console's stream says, from where it was read last."""
        assert self.directory is not None
        async with self._lock:
            if self.rev is None:
                snap = await self.store.load_snapshot(ADMIN_ID)
                self.rev = 0 if snap is None else snap.rev
                state = admin.Audit() if snap is None else admin.from_snapshot(snap.data)
                for world in state.held:
                    self.directory.hold(world)
            for event in await self.store.read(ADMIN_ID, after=self.rev):
                self._apply(event.data)
                self.rev = event.rev

    def _apply(self, event: dict[str, Any]) -> None:
        assert self.directory is not None
        if event["type"] == "world_stopped":
            self.directory.hold(event["id"])
        elif event["type"] == "world_released":
            self.directory.release(event["id"])
