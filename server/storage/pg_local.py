"""A private PostgreSQL cluster in a directory: for the tests, `python -m bench store` and
trying several server processes on one machine. Not for production.

Debian's `postgresql` package provides initdb and pg_ctl under
/usr/lib/postgresql/<version>/bin. The cluster listens on a free port of 127.0.0.1 (its
socket file stays in the directory), trusts local connections, and keeps fsync and
synchronous_commit on: the point of the store is durability. initdb refuses to run as
root, so as root it runs as the `postgres` user, which then owns the directory.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import attrs

SETTINGS = {"fsync": "on", "synchronous_commit": "on", "max_connections": "200"}
START_ATTEMPTS = 3  # a free port can be taken between choosing it and the server binding it


@attrs.frozen
class LocalPostgres:
    """A running private cluster: where it listens and where its files are."""

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
    return max(found, key=lambda d: int(d.parent.name)) if found else None


def unavailable() -> str | None:
    """Why a private cluster cannot be started here, or None when it can."""
    if postgres_bin() is None:
        return ("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/pg_ctl; "
                "`make test` installs Debian's postgresql when run as root)")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no `postgres` user to run initdb as"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_owner(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def start(directory: Path | None = None, settings: dict[str, str] | None = None
          ) -> LocalPostgres:
    """initdb a cluster in a new temporary directory (or `directory`, empty) and start it,
    with SETTINGS updated by `settings` (the tests' way to run one without fsync)."""
    bindir = postgres_bin()
    if bindir is None:
        raise RuntimeError(unavailable())
    if directory is None:
        # mkdtemp, not a test runner's temporary base: as root that is mode 0700 and
        # `postgres` could not enter it.
        directory = Path(tempfile.mkdtemp(prefix="petridish-pg-"))
    directory.chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres", "postgres")
    data = directory / "data"
    subprocess.run(_as_owner([str(bindir / "initdb"), "-D", str(data), "-A", "trust",
                              "-U", "postgres", "--no-locale", "-E", "UTF8"]),
                   check=True, capture_output=True)
    failure = ""
    for _ in range(START_ATTEMPTS):
        port = _free_port()
        options = " ".join([f"-p {port} -k {directory} -c listen_addresses=127.0.0.1",
                            *(f"-c {k}={v}" for k, v in {**SETTINGS, **(settings or {})}
                              .items())])
        started = subprocess.run(
            _as_owner([str(bindir / "pg_ctl"), "-w", "-t", "30", "-D", str(data),
                       "-l", str(directory / "server.log"), "-o", options, "start"]),
            check=False, capture_output=True, text=True)
        if started.returncode == 0:
            return LocalPostgres("127.0.0.1", port, directory)
        failure = started.stderr
    log = (directory / "server.log").read_text(errors="replace")[-2000:]
    raise RuntimeError(f"pg_ctl start failed: {failure}\n{log}")


def stop(server: LocalPostgres) -> None:
    """Stop the cluster and remove its directory (an immediate stop: no shutdown
    checkpoint to write, since the files are deleted next)."""
    bindir = postgres_bin()
    if bindir is not None:
        subprocess.run(_as_owner([str(bindir / "pg_ctl"), "-D", str(server.directory / "data"),
                                  "-m", "immediate", "-w", "stop"]),
                       capture_output=True, check=False)
    shutil.rmtree(server.directory, ignore_errors=True)
