"""Clusters for the tests: server nodes sharing one private PostgreSQL (tests/pg.py).

`nodes` (in this process: fast, inspectable, crashable by cancelling one) serves most
tests; tests/cluster/processes.py starts real `petridish serve` processes for the ones
that kill or pause a process.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.runtime import ActorKind
from protocol.registry import Registry
from server.app import Running, serve
from server.config import ServerConfig
from tests.pg import postgres_dsn, postgres_server  # noqa: F401  (fixtures)


class Node:
    """One in-process server node; `crash()` ends it without any goodbye (no leave, the
    leases stay until they lapse), as a killed process would."""

    def __init__(self, running: Running, scope: trio.CancelScope, ended: trio.Event) -> None:
        self.running = running
        self.scope = scope
        self.ended = ended  # set once its `serve` returned

    @property
    def ws_url(self) -> str:
        """Its websocket endpoint."""
        return self.running.ws_url

    @property
    def directory(self) -> Any:
        """Its directory."""
        return self.running.state.directory

    @property
    def cluster(self) -> Any:
        """Its cluster node (server/cluster/)."""
        return self.running.state.cluster

    def crash(self) -> None:
        """Cancel the server: its tasks end, its sockets close, nothing is released."""
        self.scope.cancel()

    def stop(self) -> None:
        """The graceful shutdown (the node leaves: its worlds are released)."""
        self.running.stop()


class Nodes:
    """Starts nodes on one database, each in the test's nursery."""

    def __init__(self, nursery: trio.Nursery, dsn: str, data_dir: Path) -> None:
        self._nursery, self.dsn, self.data_dir = nursery, dsn, data_dir
        self.started: list[Node] = []

    async def start(self, name: str, *, dsn: str | None = None,
                    kinds: list[ActorKind] | None = None, registry: Registry | None = None,
                    **settings: Any) -> Node:
        """A node called `name` (anonymous connections are agents), on the database `dsn`
        (default: the one every node shares; a proxy's, to break its link alone), hosting
        `kinds` with `registry` (default: every world's)."""
        config = ServerConfig(port=0, data_dir=self.data_dir, open_mode=True,
                              store=dsn or self.dsn, node=name, **settings)
        scope, ended = trio.CancelScope(), trio.Event()

        async def run(task_status: trio.TaskStatus[Running]) -> None:
            try:
                with scope:
                    await serve(config, kinds=kinds, registry=registry,
                                task_status=task_status)
            finally:
                ended.set()

        running = await self._nursery.start(run)
        node = Node(running, scope, ended)
        self.started.append(node)
        return node


@pytest.fixture
async def nodes(postgres_dsn: str, tmp_path: Path,  # noqa: F811 - fixtures
                nursery: trio.Nursery) -> AsyncIterator[Nodes]:
    """Start nodes with `await nodes.start("a")`; every one is stopped at the end."""
    made = Nodes(nursery, postgres_dsn, tmp_path)
    yield made
    for node in made.started:
        node.stop()
    with trio.move_on_after(15):
        for node in made.started:
            await node.ended.wait()


def counter_add(amount: int = 1, note: str = "") -> dict[str, Any]:
    """The args of a counter.add."""
    return {"amount": amount, "note": note}


async def wait_for(condition: Any, timeout: float = 10.0) -> None:
    """Poll `condition()` until it is true (fails the test after `timeout` seconds)."""
    with trio.fail_after(timeout):
        while not condition():
            await trio.sleep(0.02)

