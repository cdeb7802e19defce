"""Event store backends (the interface is `actors.store.EventStore`).

`sqlite.py`: the embedded default, one SQLite file in the data directory, written with
group commit by one writer process (`sqlite_writer.py`).
`postgres.py`: the shared store for several server processes (psycopg under trio,
`pg_trio.py`; notifications, `pg_listen.py`); `cluster.py`: leases and the node registry
beside it. Imported where used, not here: a SQLite server does not load psycopg.
"""

from server.storage.sqlite import SqliteEventStore

__all__ = ["SqliteEventStore"]
