"""TCP connections before a byte is read: capped in total and per client address.

The front door (server/front.py) asks `admit` for every accepted socket: it is served
only while fewer than `max_connections` are open and fewer than `connections_per_address`
from its address (trusted proxies are not held to the latter: their clients are counted
per forwarded address once they speak); a refused one is answered `503` with a plain
sentence and closed. A connection that has not sent its request head within
`handshake_timeout` is closed by the front door; one idle between HTTP requests, by
Hypercorn's keep-alive timeout (the same number).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from server.budgets import Budgets, address_key
from server.headers import EVERY_RESPONSE, NOT_A_PAGE, csp_text
from server.peers import Proxies

# (with the headers server/headers.py gives every response that is not a page)
_SECURITY = {**EVERY_RESPONSE, "content-security-policy": csp_text(NOT_A_PAGE)}
REFUSAL = ("HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
           + "".join(f"{k}: {v}\r\n" for k, v in _SECURITY.items())
           + "content-length: {length}\r\nconnection: close\r\n\r\n{body}")
REFUSAL_LINGER = 1.0  # seconds a refused connection is read and dropped before closing


class TcpGuard:
    """Counts the open TCP connections of one server (see the module doc)."""

    def __init__(self, budgets: Budgets, proxies: Proxies,
                 refused: Callable[[str, str], None]) -> None:
        self.budgets = budgets
        self.proxies = proxies
        self.refused = refused  # told (budget, address) of each connection refused
        self.open = 0
        self.per_address: dict[str, int] = {}

    def admit(self, host: str) -> str | None:
        """Count a new connection from `host`, or the sentence refusing it."""
        b = self.budgets
        key = address_key(host)
        if self.open >= b.max_connections:
            self.refused("max_connections", key)
            return f"the server holds {b.max_connections} connections; retry in a moment"
        held = self.per_address.get(key, 0)
        if held >= b.connections_per_address and not self.proxies.trusts(host):
            self.refused("connections_per_address", key)
            return f"more than {b.connections_per_address} connections from one address"
        self.open += 1
        self.per_address[key] = held + 1
        return None

    def release(self, host: str) -> None:
        """A connection counted by `admit` ended."""
        key = address_key(host)
        self.open -= 1
        left = self.per_address.pop(key) - 1
        if left:
            self.per_address[key] = left


async def refuse(stream: Any, refusal: str) -> None:
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
    await trio.aclose_forcefully(stream)
