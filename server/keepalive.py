"""The keepalive: one `Pinger` task for every websocket of the server (server/transport.py),
not a ping task per connection."""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from server.transport import WebSocket

log = logging.getLogger("petridish.keepalive")
# Ping intervals a frame or fragmented message may take to arrive whole (120 s at the
# default 20: a 64 KiB request over a link of 550 bytes a second).
MESSAGE_INTERVALS = 6


class Pinger:
    """One task pinging every websocket quiet for `interval` seconds, and dropping those
    quiet for an interval since a ping (a peer that is gone, or never reads) or that have
    not finished a frame or message begun MESSAGE_INTERVALS ago; each drop is told to
    `dropped(peer, seconds, what)`."""

    def __init__(self, interval: float | None,
                 dropped: Callable[[str, float, str], None] | None = None) -> None:
        self.interval = interval
        self.sockets: set[WebSocket] = set()
        self.dropped = dropped

    async def run(self, nursery: trio.Nursery) -> None:
        """Ping until cancelled (returns at once when pings are off)."""
        if self.interval is None:
            return
        while True:
            await trio.sleep(self.interval / 2)
            now = trio.current_time()
            for ws in list(self.sockets):
                began = ws.message_began
                if began is not None and now - began > MESSAGE_INTERVALS * self.interval:
                    self._drop(ws, now - began, "finished no message it began", nursery)
                elif ws.ping_sent is not None and now - ws.ping_sent > self.interval:
                    self._drop(ws, now - ws.ping_sent, "answered no ping", nursery)
                elif ws.ping_sent is None and now - ws.last_received >= self.interval:
                    nursery.start_soon(ws.ping, now)

    def _drop(self, ws: WebSocket, seconds: float, what: str, nursery: trio.Nursery) -> None:
        if self.dropped is not None:
            self.dropped(ws.peer, seconds, what)
        else:
            log.warning("websocket %s %s for %g s; dropped", ws.peer, what, seconds)
        ws.ping_sent = ws.message_began = None
        nursery.start_soon(ws.abort)
