"""TCP connections before a byte is read: capped in total and per client address.

The front door (server/front.py) asks `admit` for every accepted socket: it is served
only while fewer than `connections_per_address` are open from its address (trusted
proxies are not held to it: their clients are counted per forwarded address once they
speak) and fewer than `max_connections` in all. At `max_connections` the oldest
connection of the address holding the most (trusted proxies aside) is cut for it, when
that address holds more than the newcomer's would with it (else it is refused): a few
addresses cannot keep everyone out. The cut is a `shutdown` of its socket: whoever serves
it reads the end of its stream and ends it as any other (its descriptor is closed by its
own task, so the number is not reused under a reader). A refused one is answered `503`
with a plain sentence and closed. A connection that has not sent its request head within
`handshake_timeout` is closed by the front door; one idle between HTTP requests, by
Hypercorn's keep-alive timeout (the same number); one its client closed, at once.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import trio

from server.budgets import Budgets, address_key
from server.headers import EVERY_RESPONSE, NOT_A_PAGE, csp_text
from server.peers import Proxies
from server.shedding import Holders

# (with the headers server/headers.py gives every response that is not a page)
_SECURITY = {**EVERY_RESPONSE, "content-security-policy": csp_text(NOT_A_PAGE)}
REFUSAL = ("HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
           + "".join(f"{k}: {v}\r\n" for k, v in _SECURITY.items())
           + "content-length: {length}\r\nconnection: close\r\n\r\n{body}")
REFUSAL_LINGER = 1.0  # seconds a refused connection is read and dropped before closing
# Refused connections lingering at once (each holds a descriptor); past it, one is closed
# as soon as its answer is written (within REFUSAL_SEND), so a flood of connections past
# the budgets cannot hold the descriptors kept aside (server/descriptors.py).
MAX_LINGERING = 64
REFUSAL_SEND = 0.05  # seconds
_lingering = 0  # refused connections lingering now (one process, one trio thread)


class TcpGuard:
    """Counts the open TCP connections of one server (see the module doc)."""

    def __init__(self, budgets: Budgets, proxies: Proxies,
                 refused: Callable[[str, str], None]) -> None:
        self.budgets = budgets
        self.proxies = proxies
        self.refused = refused  # told (budget, address) of each connection refused
        self.open = 0
        self.per_address: dict[str, int] = {}
        self.streams: dict[Any, str] = {}  # the connections admitted with their stream
        self.holders = Holders()  # ... those that may be cut (not a trusted proxy's)

    def admit(self, host: str, stream: Any = None) -> str | None:
        """Count a new connection from `host` (on `stream`, which may be cut to make room
        for another), or the sentence refusing it."""
        b = self.budgets
        key = address_key(host)
        proxy = self.proxies.trusts(host)
        held = self.per_address.get(key, 0)
        if held >= b.connections_per_address and not proxy:
            self.refused("connections_per_address", key)
            return f"more than {b.connections_per_address} connections from one address"
        if self.open >= b.max_connections and not self._cut(held + 1):
            self.refused("max_connections", key)
            return f"the server holds {b.max_connections} connections; retry in a moment"
        self.open += 1
        self.per_address[key] = held + 1
        if stream is not None:
            self.streams[stream] = key
            if not proxy:
                self.holders.add(key, stream)
        return None

    def _cut(self, above: int) -> bool:
        """Cut the oldest connection of the address holding the most, if it holds more than
        `above`; True if one was (its place is free now)."""
        victim = self.holders.heaviest(above)
        if victim is None:
            return False
        key, stream = victim
        self.refused("max_connections", key)
        self.release(key, stream)
        try:
            stream.socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # gone already: its task ends on its own
        return True

    def release(self, host: str, stream: Any = None) -> None:
        """A connection counted by `admit` ended (or was cut: counted once)."""
        if stream is not None:
            key = self.streams.pop(stream, None)
            if key is None:
                return  # cut: given back already
            self.holders.remove(key, stream)
        else:
            key = address_key(host)
        self.open -= 1
        left = self.per_address.pop(key) - 1
        if left:
            self.per_address[key] = left


async def refuse(stream: Any, refusal: str) -> None:
    """Answer 503 with `refusal`, then close. The request is read and dropped for a moment
    first: closing over unread bytes would reset the connection before the answer is read
    (unless MAX_LINGERING others linger already)."""
    global _lingering
    body = refusal.encode()
    _lingering += 1
    try:
        with trio.move_on_after(REFUSAL_LINGER if _lingering <= MAX_LINGERING
                                else REFUSAL_SEND):
            try:
                await stream.send_all(REFUSAL.format(length=len(body), body=refusal).encode())
                await stream.send_eof()
                while await stream.receive_some(65536):
                    pass
            except (trio.BrokenResourceError, trio.ClosedResourceError, AttributeError):
                pass  # gone already (or a TLS stream, which has no half-close)
    finally:
        _lingering -= 1
    await trio.aclose_forcefully(stream)
