"""Event store backends (the interface is `actors.store.EventStore`).

`sqlite.py`: the embedded default, one SQLite file in the data directory, written by one
worker thread with group commit.
"""

from server.storage.sqlite import SqliteEventStore

__all__ = ["SqliteEventStore"]
