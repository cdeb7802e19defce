"""Guards for two defects of Hypercorn (0.18, trio worker) around closing connections.

1. A close that can take the whole server down.

`TCPServer._close` calls `send_eof()` on the connection's socket stream without taking the
connection's `send_lock`, which every other send holds. When a connection ends while
another of its tasks sends (the websocket ping task's first ping after a short connection,
or the reader answering a Close frame that crossed ours), trio raises BusyResourceError in
that task; nothing in Hypercorn catches it, so it ends the listener's nursery and every
connection with it. `install()` makes `_close` take the lock, or, when a send holds it (it
may wait on a peer that does not read), skip the EOF and close the stream at once, which
that send then sees as the closed connection it already handles.

2. A client frame that breaks the websocket protocol (invalid UTF-8 in a text frame, a
reserved bit, an unmasked frame, ...) makes wsproto yield a CloseConnection event with
the right RFC 6455 code (1007, 1002) as if the peer had closed; Hypercorn answers a
close only when the peer really sent one, so the client saw a bare TCP close. `install()`
marks such a locally made close as the peer's, so Hypercorn answers it with its code.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hypercorn.trio.tcp_server import TCPServer
from wsproto.connection import Connection, ConnectionState
from wsproto.events import CloseConnection, Event


def install() -> None:
    """Apply both guards (idempotent)."""
    _answer_protocol_errors()
    original = TCPServer._close
    if getattr(original, "guarded", False):
        return

    async def close_under_lock(self: Any) -> None:
        """`TCPServer._close`, serialized with the connection's other sends."""
        if self.send_lock.locked():
            await self.stream.aclose()
            return
        async with self.send_lock:
            await original(self)

    close_under_lock.guarded = True  # type: ignore[attr-defined]
    TCPServer._close = close_under_lock  # type: ignore[method-assign]


def _answer_protocol_errors() -> None:
    original = Connection.events
    if getattr(original, "guarded", False):
        return

    def events(self: Connection) -> Iterator[Event]:
        """wsproto's events; a close it made itself for a bad frame counts as the peer's."""
        for event in original(self):
            if isinstance(event, CloseConnection) and self.state is ConnectionState.OPEN:
                self._state = ConnectionState.REMOTE_CLOSING
            yield event

    events.guarded = True  # type: ignore[attr-defined]
    Connection.events = events  # type: ignore[method-assign]
