"""A server in a thread of the test process (its own trio loop), for browser tests that
need runtime settings the command line does not take (a short idle timeout)."""

from __future__ import annotations

import threading
from functools import partial
from pathlib import Path
from typing import Any, Self

import trio

from server.app import Running, serve
from server.config import ServerConfig


class ThreadServer:
    """`serve(ServerConfig(port=0, data_dir=..., **settings))` in a thread; a context manager."""

    def __init__(self, data_dir: Path, **settings: Any) -> None:
        self.config = ServerConfig(port=0, data_dir=data_dir, **settings)
        self.running: Running | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._up = threading.Event()
        self._thread = threading.Thread(target=lambda: trio.run(self._main), daemon=True)

    async def _main(self) -> None:
        async with trio.open_nursery() as nursery:
            self.running = await nursery.start(partial(serve, self.config))
            self._token = trio.lowlevel.current_trio_token()
            self._up.set()

    @property
    def http_url(self) -> str:
        """http://127.0.0.1:PORT"""
        assert self.running is not None
        return self.running.url

    @property
    def ws_url(self) -> str:
        """ws://127.0.0.1:PORT/ws"""
        assert self.running is not None
        return self.running.ws_url

    def run(self, fn: Any) -> Any:
        """Run the sync `fn(running)` on the server's loop (to read its state) and return it."""
        assert self._token is not None and self.running is not None
        return trio.from_thread.run_sync(fn, self.running, trio_token=self._token)

    def __enter__(self) -> Self:
        self._thread.start()
        if not self._up.wait(60):
            raise RuntimeError("the server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._token is not None and self.running is not None:
            self._token.run_sync_soon(self.running.stop)
        self._thread.join(30)
