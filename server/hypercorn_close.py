"""A guard for one Hypercorn (0.18, trio worker) defect that can take the whole server down.

`TCPServer._close` calls `send_eof()` on the connection's socket stream without taking the
connection's `send_lock`, which every other send holds. When a connection ends while
another of its tasks sends (the websocket ping task's first ping after a short connection,
or the reader answering a Close frame that crossed ours), trio raises BusyResourceError in
that task; nothing in Hypercorn catches it, so it ends the listener's nursery and every
connection with it. `install()` makes `_close` take the lock, or, when a send holds it (it
may wait on a peer that does not read), skip the EOF and close the stream at once, which
that send then sees as the closed connection it already handles.
"""

from __future__ import annotations

from typing import Any

from hypercorn.trio.tcp_server import TCPServer


def install() -> None:
    """Apply the guard to `TCPServer` (idempotent)."""
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
