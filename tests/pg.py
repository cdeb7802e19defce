"""PostgreSQL for the tests: one private cluster per session (server/storage/pg_local.py),
a schema of its own per test.

Use it from a test package's conftest.py:

    from tests.pg import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

and mark the tests `postgres`. Where PostgreSQL is absent they are skipped, with the
reason; `make test` installs Debian's postgresql when run as root, so CI runs them.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest

from server.storage import pg_local
from server.storage.pg_local import LocalPostgres


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[LocalPostgres]:
    """One private cluster for the whole session (fsync on), stopped at its end."""
    reason = pg_local.unavailable()
    if reason is not None:
        pytest.skip(reason)
    server = pg_local.start()
    try:
        yield server
    finally:
        pg_local.stop(server)


_schemas = itertools.count(1)


@pytest.fixture
def postgres_dsn(postgres_server: LocalPostgres) -> Iterator[str]:
    """A DSN whose search_path is a fresh schema (dropped after the test), so tests never
    see each other's tables."""
    import psycopg

    schema = f"test_{os.getpid()}_{next(_schemas)}"
    with psycopg.connect(postgres_server.dsn(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield postgres_server.dsn(options=f"-c search_path={schema}")
    finally:
        with psycopg.connect(postgres_server.dsn(), autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
