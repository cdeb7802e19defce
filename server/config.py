"""The server's settings: where it listens and stores, and every bound it enforces."""

from __future__ import annotations

from pathlib import Path

import attrs

from actors.ecosystem.endpoint import ModelEndpoint
from actors.runtime import RuntimeConfig
from server.budgets import Budgets

WEB_DIR = Path(__file__).resolve().parent.parent / "web"


@attrs.frozen
class ServerConfig:
    """Settings of one server process; the defaults are what `petridish serve` uses."""

    host: str = "127.0.0.1"
    port: int = 8000  # 0 picks a free port; `serve` reports the bound one
    data_dir: Path = attrs.field(default=Path("data"), converter=Path)
    open_mode: bool = False  # anonymous connections act as agents (local play)
    # Bytes of one message (a frame or a fragmented one): a longer one is not kept (its
    # bytes are skipped as they come) and gets `too_large`.
    max_frame: int = 65536
    # One longer than max_frame * hard_frame_factor closes the socket with 1009 as soon as
    # its size is known: a client that sends that much is not read on.
    hard_frame_factor: int = 16
    rate: float = 200.0  # frames per second per connection (token bucket refill)
    burst: int = 400  # frames a connection may send at once
    outbox_size: int = 256  # frames waiting for one connection's writer (replies + pushes)
    outbox_chars: int = 4 * 1024 * 1024  # ... and the characters they may hold together
    max_inflight: int = 32  # requests of one connection being handled at once
    ping_interval: float | None = 20.0  # websocket keepalive pings, seconds
    hello_timeout: float = 5.0  # a connection that says no hello is closed after this
    graceful_timeout: float = 5.0  # how long shutdown waits for in-flight handlers
    web_dir: Path = attrs.field(default=WEB_DIR, converter=Path)
    runtime: RuntimeConfig = attrs.field(factory=RuntimeConfig)
    budgets: Budgets = attrs.field(factory=Budgets)  # what one client may hold or compute
    # Origins besides the page's own whose browsers may use /ws and /mcp ("*": any).
    allowed_origins: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset)
    # Proxies (addresses or networks) whose X-Forwarded-For names the client's address.
    trusted_proxies: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    # The chat-completions endpoint worlds may use (ecosystem setups and reflections; the
    # lab's breeder can share it); None: no model, every world's deterministic path.
    model: ModelEndpoint | None = None
    # The event store: None is SQLite in data_dir (one process); a PostgreSQL URI
    # (postgresql://...) or libpq string makes this process one node of a cluster sharing
    # that database (docs/scale-out.md).
    store: str | None = None
    node: str | None = None  # this process's name in the cluster (default: host-pid)
    peer_host: str = "127.0.0.1"  # where the cluster's other processes connect to this one
    peer_port: int = 0  # 0 picks a free port
    peer_addr: str | None = None  # the address the others use, if not peer_host:port
    lease_ttl: float = 3.0  # seconds a world's lease lasts without a renewal
    peer_silence: float = 1.5  # seconds a peer may say nothing while requests wait

    @property
    def clustered(self) -> bool:
        """True when the store is PostgreSQL: this process is one node of a cluster."""
        return is_postgres(self.store)


def is_postgres(store: str | None) -> bool:
    """True for a PostgreSQL URI (postgresql:// or postgres://) or libpq key=value string."""
    if not store:
        return False
    return store.startswith(("postgresql://", "postgres://")) or "=" in store
