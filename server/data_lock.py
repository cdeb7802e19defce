"""One server per data directory: with SQLite, the store and the token file are the
directory's, so a second server on it would fight the first for every stream.
`held(data_dir)` keeps an exclusive lock on `<data_dir>/server.lock` for as long as the
server runs; the kernel lets it go when the process ends, however it ends."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_NAME = "server.lock"


class DataDirInUse(RuntimeError):
    """Another process holds the data directory's lock."""


@contextmanager
def held(data_dir: str | os.PathLike[str]) -> Iterator[None]:
    """Hold `data_dir`'s lock (creating the directory, private, if missing); raises
    DataDirInUse, naming the holder's pid, when another process has it."""
    Path(data_dir).mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(Path(data_dir) / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise DataDirInUse(f"the data directory {data_dir} is in use by another server "
                               f"(pid {holder}); stop it first, or give this one its own "
                               "--data") from None
        os.fchmod(fd, 0o600)  # a widened mode is repaired, as the token files' are
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)
