"""TCP connections before Hypercorn reads a byte: capped in total and per address, and
found again by their peer so a connection can be cut.

Hypercorn (0.18) has no connection limit and serves each accepted socket in a
`TCPServer`. `install()` wraps `TCPServer.run`: a server whose Hypercorn config carries a
`TcpGuard` (as `petridish_guard`) admits a connection only while fewer than
`max_connections` are open and fewer than `connections_per_address` from its address
(trusted proxies are not held to the latter: their clients are counted per forwarded
address once they speak); a refused one is answered `503` with a plain sentence and
closed. A connection that does not finish its request within `handshake_timeout` is closed
by Hypercorn's idle timeout (its `keep_alive_timeout`, which the app sets to it).

`cut(peer)` closes the socket of a live connection at once, even while a send to it is
blocked (a client that stopped reading: trio wakes the blocked send with an error).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import trio
from hypercorn.trio.tcp_server import TCPServer

from server.budgets import Budgets, address_key
from server.peers import Proxies

log = logging.getLogger("petridish.tcp")
REFUSAL_LINGER = 1.0  # seconds a refused connection is read and dropped before closing
REFUSAL = ("HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
           "content-length: {length}\r\nconnection: close\r\n\r\n{body}")


class TcpGuard:
    """Counts the open TCP connections of one server (see the module doc)."""

    def __init__(self, budgets: Budgets, proxies: Proxies,
                 refused: Callable[[str, str], None]) -> None:
        self.budgets = budgets
        self.proxies = proxies
        self.refused = refused  # (budget, address) of each connection refused
        self.open = 0
        self.per_address: dict[str, int] = {}
        self._servers: dict[tuple[str, int], Any] = {}  # peer -> its TCPServer

    def admit(self, peer: tuple[str, int]) -> str | None:
        """Count a new connection from `peer`, or the sentence refusing it."""
        b = self.budgets
        key = address_key(peer[0])
        if self.open >= b.max_connections:
            self.refused("max_connections", key)
            return f"the server holds {b.max_connections} connections; retry in a moment"
        held = self.per_address.get(key, 0)
        if held >= b.connections_per_address and not self.proxies.trusts(peer[0]):
            self.refused("connections_per_address", key)
            return f"more than {b.connections_per_address} connections from one address"
        self.open += 1
        self.per_address[key] = held + 1
        return None

    def release(self, peer: tuple[str, int]) -> None:
        """A connection counted by `admit` ended."""
        key = address_key(peer[0])
        self.open -= 1
        left = self.per_address.pop(key) - 1
        if left:
            self.per_address[key] = left

    async def cut(self, peer: tuple[str, int] | None) -> bool:
        """Close the socket of the connection from `peer` now; False if none is open."""
        server = self._servers.get(peer) if peer is not None else None
        if server is None:
            return False
        await server.stream.aclose()
        return True


def _peer(server: Any) -> tuple[str, int] | None:
    stream = getattr(server.stream, "transport_stream", server.stream)  # TLS or not
    try:
        host, port, *_ = stream.socket.getpeername()
    except (OSError, ValueError, AttributeError):
        return None
    return str(host), int(port)


async def _refuse(stream: Any, refusal: str) -> None:
    """Answer 503 with `refusal`, then close. The request is read and dropped for a moment
    first: closing over unread bytes would reset the connection before the answer is read."""
    body = refusal.encode()
    with trio.move_on_after(REFUSAL_LINGER):
        try:
            await stream.send_all(REFUSAL.format(length=len(body), body=refusal).encode())
            await stream.send_eof()
            while await stream.receive_some(65536):
                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError, AttributeError):
            pass  # gone already (or a TLS stream, which has no half-close)
    await stream.aclose()


def install() -> None:
    """Wrap `TCPServer.run` (idempotent); servers without a guard are left as they are."""
    original = TCPServer.run
    if getattr(original, "guarded", False):
        return

    async def run(self: Any) -> None:
        guard: TcpGuard | None = getattr(self.config, "petridish_guard", None)
        if guard is None:
            await original(self)
            return
        peer = _peer(self)
        try:
            refusal = guard.admit(peer) if peer is not None else "no peer address"
        except Exception:  # a bug here must not end the listener (and every connection)
            log.exception("the TCP guard failed on a connection from %r", peer)
            refusal = "the server failed to admit this connection"
        if refusal is not None:
            await _refuse(self.stream, refusal)
            return
        assert peer is not None
        guard._servers[peer] = self
        try:
            await original(self)
        finally:
            guard._servers.pop(peer, None)
            guard.release(peer)

    run.guarded = True  # type: ignore[attr-defined]
    TCPServer.run = run  # type: ignore[method-assign]
