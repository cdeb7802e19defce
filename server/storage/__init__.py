"""Event store backends (the interface is `actors.store.EventStore`).

`sqlite.py`: the embedded default, one SQLite file in the data directory, written with
group commit by one writer process (`sqlite_writer.py`).
"""

from server.storage.sqlite import SqliteEventStore

__all__ = ["SqliteEventStore"]
