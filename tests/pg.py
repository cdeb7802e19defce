"""A private PostgreSQL cluster for the tests: started once per session, stopped at the end.

Debian's `postgresql` package (installed by `make system-deps` when root) provides
initdb and pg_ctl under /usr/lib/postgresql/<version>/bin; the cluster lives in a fresh
temporary directory, listens on a free port of 127.0.0.1 (its socket file stays in that
directory), and keeps fsync and synchronous_commit on: the store's tests are about
durability. initdb refuses to run as root, so as root it runs as the `postgres` user.

Use it from a test package's conftest.py:

    from tests.pg import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

`postgres_dsn` is a connection string to a schema of its own per test (search_path),
so tests never see each other's tables; tests using it are skipped, with the reason,
where PostgreSQL is not installed.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

START_ATTEMPTS = 3  # a free port can be taken between choosing it and the server binding it


@attrs.frozen
class PostgresServer:
    """A running private cluster: where it listens and how to reach it."""

    host: str
    port: int
    directory: Path

    def dsn(self, **params: str) -> str:
        """A libpq connection string to database `postgres` as user `postgres`."""
        parts = {"host": self.host, "port": str(self.port), "user": "postgres",
                 "dbname": "postgres", **params}
        return " ".join(f"{k}={_quote(v)}" for k, v in parts.items())


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL's bin directory (with initdb and pg_ctl), or None."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/pg_ctl")]
    found = [d for d in found if (d / "initdb").exists()]
    return max(found, key=lambda d: int(d.parent.name), default=None) if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_owner(argv: list[str]) -> list[str]:
    """The command run as the cluster's owner: `postgres` when we are root."""
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def start_server(directory: Path) -> PostgresServer:
    """initdb a cluster in `directory` (which must be empty and writable) and start it."""
    bindir = postgres_bin()
    assert bindir is not None
    data = directory / "data"
    subprocess.run(_as_owner([str(bindir / "initdb"), "-D", str(data), "-A", "trust",
                              "-U", "postgres", "--no-locale", "-E", "UTF8"]),
                   check=True, capture_output=True)
    for attempt in itertools.count(1):
        port = _free_port()
        options = (f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 "
                   "-c fsync=on -c synchronous_commit=on -c max_connections=200")
        started = subprocess.run(
            _as_owner([str(bindir / "pg_ctl"), "-w", "-t", "30", "-D", str(data),
                       "-l", str(directory / "server.log"), "-o", options, "start"]),
            check=False, capture_output=True, text=True)
        if started.returncode == 0:
            return PostgresServer("127.0.0.1", port, directory)
        if attempt == START_ATTEMPTS:
            log = (directory / "server.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"pg_ctl start failed: {started.stderr}\n{log}")


def stop_server(server: PostgresServer) -> None:
    """Stop the cluster and remove its directory (an immediate stop: no shutdown
    checkpoint to write, since the files are deleted next)."""
    bindir = postgres_bin()
    assert bindir is not None
    subprocess.run(_as_owner([str(bindir / "pg_ctl"), "-D", str(server.directory / "data"),
                              "-m", "immediate", "-w", "stop"]), capture_output=True, check=False)
    shutil.rmtree(server.directory, ignore_errors=True)


def _skip_reason() -> str | None:
    if postgres_bin() is None:
        return ("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/pg_ctl; "
                "`make test` installs Debian's postgresql when run as root)")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no `postgres` user to run initdb as"
    return None


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One private cluster for the whole session (skips where PostgreSQL is absent)."""
    reason = _skip_reason()
    if reason is not None:
        pytest.skip(reason)
    # mkdtemp, not pytest's tmp_path: as root that base is mode 0700 and `postgres`
    # could not enter it.
    directory = Path(tempfile.mkdtemp(prefix="petridish-pg-"))
    directory.chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres", "postgres")
    server = start_server(directory)
    try:
        yield server
    finally:
        stop_server(server)


_schemas = itertools.count(1)


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> Iterator[str]:
    """A DSN whose search_path is a fresh schema (dropped after the test)."""
    import psycopg

    schema = f"test_{os.getpid()}_{next(_schemas)}"
    with psycopg.connect(postgres_server.dsn(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield postgres_server.dsn(options=f"-c search_path={schema}")
    finally:
        with psycopg.connect(postgres_server.dsn(), autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
