"""Who is on the other end of a request: its address (through trusted proxies) and whether
its `Origin` may use the server.

Browsers send `Origin` on websocket handshakes and cross-site `fetch`es; agents and other
programs send none. A request with no `Origin` is allowed; so is one from the page's own
origin (the `Origin`'s host and port are the `Host` the request was sent to) when that
host is an IP address or `localhost`. Any other origin only when the server was started
with `--allow-origin ORIGIN` naming it exactly (`*` allows every origin, as an open
development server may want); a server reached by a DNS name (behind a proxy: the public
one) names its own origin so. So a page on another site cannot act with the credentials
or the `--open` agent role of a local browser, not even through DNS rebinding (a foreign
name made to resolve to this server is "same origin" to the browser, but not trusted).

Behind a reverse proxy every connection comes from the proxy: with `--trusted-proxy
ADDRESS` the client's address is read from `X-Forwarded-For` (the right-most entry that
is not a trusted proxy), so the per-address budgets count clients, not the proxy.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def header(scope: Mapping[str, Any], name: bytes) -> str | None:
    """An HTTP request header of an ASGI scope (`name` in lower case), or None."""
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


class Proxies:
    """The addresses (or networks) whose `X-Forwarded-For` is believed."""

    def __init__(self, trusted: Iterable[str] = ()) -> None:
        self.networks = [ipaddress.ip_network(t, strict=False) for t in trusted]

    def trusts(self, host: str) -> bool:
        """True when `host` is a trusted proxy."""
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(ip in net for net in self.networks)

    def client_host(self, peer: str, forwarded: str | None) -> str:
        """The client's address: the peer's, or through trusted proxies the right-most
        address of `forwarded` (X-Forwarded-For) that is not one of them."""
        host = peer
        if not self.networks or not self.trusts(host) or not forwarded:
            return host
        for hop in reversed([h.strip() for h in forwarded.split(",") if h.strip()]):
            host = hop
            if not self.trusts(hop):
                break
        return host

    def client_of_scope(self, scope: Mapping[str, Any]) -> str:
        """`client_host` of an ASGI request."""
        client = scope.get("client")
        return self.client_host(client[0] if client else "", header(scope, b"x-forwarded-for"))


def _host_port(netloc: str, scheme: str) -> tuple[str | None, int | None]:
    parts = urlsplit("//" + netloc)
    try:
        port = parts.port
    except ValueError:  # not a number
        return None, None
    return parts.hostname, port or DEFAULT_PORTS.get(scheme)


def origin_allowed(origin: str | None, host: str | None, allowed: frozenset[str]) -> bool:
    """True when a request with headers `Origin: origin` and `Host: host` may use the
    server (see the module doc)."""
    if origin is None or "*" in allowed or origin in allowed:
        return True
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.netloc or host is None:
        return False  # "null", a file page, or nothing to compare with
    name, port = _host_port(host, parts.scheme)
    return name is not None and _literal(name) and \
        _host_port(parts.netloc, parts.scheme) == (name, port)


def _literal(name: str) -> bool:
    """An IP address or `localhost`: a host no DNS answer can stand for."""
    if name == "localhost":
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
