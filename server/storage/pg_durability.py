"""What the PostgreSQL store asks of the server so that a commit it acknowledges is durable:
`synchronous_commit = on` set by every connection's startup options (`durable_dsn`), and
what it refuses at open (`not_durable`: a server without fsync, or connections on which
that option did not hold)."""

from __future__ import annotations

import os

from psycopg.conninfo import conninfo_to_dict, make_conninfo


class NotDurable(RuntimeError):
    """The store's connections cannot make a commit durable (`not_durable` says why)."""


def durable_dsn(dsn: str) -> str:
    """`dsn` with `-c synchronous_commit=on` added to its startup options (after its own,
    or PGOPTIONS when it has none): a server, database or role set to `off` would otherwise
    acknowledge commits that a crash of PostgreSQL loses."""
    params = conninfo_to_dict(dsn)
    options = params.get("options", os.environ.get("PGOPTIONS", ""))
    params["options"] = f"{options} -c synchronous_commit=on".strip()
    return make_conninfo("", **params)


def not_durable(fsync: str, synchronous_commit: str) -> str | None:
    """Why a connection with these settings (as read on it) could acknowledge a commit that
    a crash loses, or None. `synchronous_commit` is off only where something between us
    and the server dropped the startup options (a pooler such as PgBouncer does)."""
    if fsync != "on":
        return ("the PostgreSQL server runs with fsync = off: a crash of it or of its "
                "machine may lose or corrupt committed writes; set fsync = on in its "
                "configuration (postgresql.conf or ALTER SYSTEM) and reload it")
    if synchronous_commit == "off":
        return ("the PostgreSQL connections run with synchronous_commit = off though the "
                "store sets it on in their startup options (a connection pooler that drops "
                "them, such as PgBouncer, sits between): a crash of PostgreSQL may lose "
                "acknowledged writes; connect to the server directly, or set "
                "synchronous_commit = on for its server, database or role")
    return None
