"""A server in the test's nursery on 127.0.0.1:0, and a raw websocket client for it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import trio
from websockets.trio.client import ClientConnection, connect

from actors.runtime import ActorKind
from actors.runtime.context import wall_clock_ms
from protocol.registry import Registry
from server.app import Running, StoreOpener, serve
from server.config import ServerConfig

RECV_TIMEOUT = 10.0


@asynccontextmanager
async def running_server(data_dir: Path, *, kinds: Iterable[ActorKind] | None = None,
                         registry: Registry | None = None,
                         clock: Callable[[], int] = wall_clock_ms,
                         store_opener: StoreOpener | None = None, **settings: Any
                         ) -> AsyncIterator[Running]:
    """Start `serve` on a free port; stop it gracefully when the block ends."""
    config = ServerConfig(port=0, data_dir=data_dir, **settings)
    async with trio.open_nursery() as nursery:
        running = await nursery.start(partial(serve, config, kinds=kinds, registry=registry,
                                              clock=clock, store_opener=store_opener))
        try:
            yield running
        finally:
            running.stop()


class Raw:
    """A websocket speaking raw frames; `call` does one request and returns its reply."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.next_id = 1

    async def send(self, frame: Any) -> None:
        """Send a dict as JSON, or a str as is."""
        await self.ws.send(frame if isinstance(frame, str) else json.dumps(frame))

    async def recv(self, timeout: float = RECV_TIMEOUT) -> dict[str, Any]:
        """The next frame, decoded."""
        with trio.fail_after(timeout):
            return json.loads(await self.ws.recv())

    async def call(self, op: str, to: str | None = None, **args: Any) -> dict[str, Any]:
        """Send one request and return its reply (pushes that arrive first are skipped)."""
        rid, self.next_id = self.next_id, self.next_id + 1
        frame: dict[str, Any] = {"id": rid, "op": op, "args": args}
        if to is not None:
            frame["to"] = to
        await self.send(frame)
        while True:
            reply = await self.recv()
            if reply.get("id") == rid:
                return reply


@asynccontextmanager
async def raw_client(running: Running, token: str | None = None, *, hello: bool = True,
                     **connect_options: Any) -> AsyncIterator[Raw]:
    """A connected client, after a successful hello unless `hello=False`."""
    async with connect(running.ws_url, compression=None, max_size=None,
                       **connect_options) as ws:
        raw = Raw(ws)
        if hello:
            await raw.send({"op": "hello", "protocol": 1, "token": token, "client": "test/1"})
            reply = await raw.recv()
            assert reply["ok"], reply
        yield raw


def result(reply: dict[str, Any]) -> Any:
    """The result of an ok reply (fails the test with the error otherwise)."""
    assert reply["ok"], reply
    return reply["result"]


def error(reply: dict[str, Any]) -> dict[str, Any]:
    """The error of a refused reply."""
    assert not reply["ok"], reply
    return reply["error"]


def others_load(running: Running, account: str = "address:127.0.0.1") -> float:
    """Server time per second lately of every account but `account` (the ledger's view of
    whether the server is contended, `Budgets.cpu_contended`)."""
    ledger, now = running.state.ledger, trio.current_time()
    mine = ledger.accounts.get(account)
    return ledger.load.read(now) - (mine.recent.read(now) if mine else 0.0)


async def until_others_rest(running: Running, account: str = "address:127.0.0.1") -> None:
    """Wait until the others' load (the set-up's time) has decayed below contention."""
    with trio.fail_after(20):
        while others_load(running, account) >= running.state.config.budgets.cpu_contended:
            await trio.sleep(0.1)
