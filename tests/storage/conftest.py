"""The store backends under test: memory, SQLite and PostgreSQL (skipped where absent)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from pathlib import Path

import attrs
import pytest

from actors.store import EventStore, MemoryEventStore
from server.storage import SqliteEventStore
from tests.pg import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

BACKENDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@attrs.define
class Backend:
    """One backend's data and its clients; `client()` opens another (as another process
    would), closed at the end of the test."""

    name: str
    _open: Callable[[], EventStore]
    _stack: AsyncExitStack
    store: EventStore = attrs.field(init=False)  # the first client

    async def client(self) -> EventStore:
        """Another client of the same streams, with claims of its own."""
        store = self._open()
        if isinstance(store, MemoryEventStore):
            return store
        return await self._stack.enter_async_context(store)  # type: ignore[arg-type]


def _memory() -> Callable[[], EventStore]:
    first = MemoryEventStore()
    clients = iter([first])
    return lambda: next(clients, None) or MemoryEventStore(sharing=first)


@pytest.fixture(params=BACKENDS)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    """Every backend in turn (`indirect` parametrization narrows the list)."""
    async with AsyncExitStack() as stack:
        if request.param == "memory":
            open_client = _memory()
        elif request.param == "sqlite":
            path = tmp_path / "events.sqlite3"

            def open_client() -> EventStore:
                return SqliteEventStore(path)
        else:
            from server.storage.postgres import PostgresEventStore

            dsn = request.getfixturevalue("postgres_dsn")

            def open_client() -> EventStore:
                return PostgresEventStore(dsn)
        backend = Backend(request.param, open_client, stack)
        backend.store = await backend.client()
        yield backend


@pytest.fixture
def store(backend: Backend) -> EventStore:
    """The first client of the backend."""
    return backend.store
