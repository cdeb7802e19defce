"""psycopg 3's AsyncConnection driven by trio (SCALEOUT.md, appendix A).

psycopg's async API is written for asyncio, but its protocol code is generators that
yield "wait until the socket is readable / writable" and take back what became ready;
only the waiting is asyncio's. `TrioConnection` replaces exactly that (the `wait`
method and the connection's lock) with trio's `wait_readable`/`wait_writable`, and
connects by running psycopg's connection generator the same way.

It leans on two private names of psycopg (`_connect_gen`, `errors._WaitTimeout`), so
pyproject pins psycopg 3.3.* and tests/storage/test_pg_trio.py checks this module on
every upgrade. Host names are resolved in a worker thread (psycopg would block the
loop); `connect_timeout` from the connection string (or PGCONNECT_TIMEOUT) bounds the
connect, else CONNECT_TIMEOUT does (psycopg's own default is 130 s: a database behind a
partition would hold every caller that long); TCP keepalives are on (KEEPALIVES) unless
the connection string sets them.

Cancellation: psycopg only knows asyncio's; a query cut off by a trio cancel leaves the
connection mid-protocol, so `wait` closes it (the caller's pool must drop it).
Not used and not exercised under trio: COPY (it spawns asyncio tasks), pipelines and
`cancel_safe`.
"""

from __future__ import annotations

import os
import select
from collections.abc import Generator
from typing import Any, Self, TypeVar

import psycopg
import trio
from psycopg import errors
from psycopg.conninfo import (
    conninfo_attempts,
    conninfo_to_dict,
    make_conninfo,
    timeout_from_conninfo,
)
from psycopg.pq import TransactionStatus
from psycopg.waiting import READY_R, READY_W, WAIT_R, WAIT_RW, WAIT_W

T = TypeVar("T")
CONNECT_TIMEOUT = 5  # seconds, when the connection string names none
# TCP keepalives, unless the connection string sets them: an idle connection to a
# database behind a partition is found dead within about 25 s (a listener would otherwise
# wait, unaware, until TCP gives up: many minutes).
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5,
              "keepalives_count": 3}
_POLL_MASK = {WAIT_R: select.POLLIN, WAIT_W: select.POLLOUT,
              WAIT_RW: select.POLLIN | select.POLLOUT}


def _ready_now(fd: int, wait: int) -> int:
    """What `fd` is ready for at once (poll, not select: a server's fds pass 1024)."""
    poller = select.poll()
    poller.register(fd, _POLL_MASK[wait])
    ready = 0
    for _, ev in poller.poll(0):
        if ev & (select.POLLIN | select.POLLHUP | select.POLLERR):
            ready |= READY_R
        if ev & select.POLLOUT:
            ready |= READY_W
    return ready


async def _block(fd: int, wait: int) -> int:
    """Park until `fd` is ready for `wait`; what it became ready for."""
    if wait == WAIT_R:
        await trio.lowlevel.wait_readable(fd)
        return READY_R
    if wait == WAIT_W:
        await trio.lowlevel.wait_writable(fd)
        return READY_W
    fired = 0
    async with trio.open_nursery() as nursery:  # either: the first one cancels the other
        async def one(waiter: Any, flag: int) -> None:
            nonlocal fired
            await waiter(fd)
            fired |= flag
            nursery.cancel_scope.cancel()

        nursery.start_soon(one, trio.lowlevel.wait_readable, READY_R)
        nursery.start_soon(one, trio.lowlevel.wait_writable, READY_W)
    return _ready_now(fd, wait) or fired


async def run_generator(gen: Generator[Any, Any, T], fd: int | None = None,
                        timeout: float | None = None) -> T:
    """Run a psycopg protocol generator to its end under trio.

    With `fd`, the generator yields wait states for that socket (a query); without, it
    yields `(fd, state)` pairs (a connect, whose socket may change). Raises psycopg's
    `_WaitTimeout` after `timeout` seconds, OperationalError when the socket is gone.
    """
    waited = False
    try:
        with trio.move_on_after(float("inf") if timeout is None else timeout):
            step = next(gen)
            while True:
                sock, wait = (step if fd is None else (fd, step))
                # A socket asked for writing is nearly always writable at once.
                ready = _ready_now(sock, wait) if wait & WAIT_W else 0
                if not ready:
                    ready = await _block(sock, wait)
                    waited = True
                step = gen.send(ready)
        raise errors._WaitTimeout("wait timeout expired")
    except StopIteration as done:
        if not waited:
            await trio.lowlevel.checkpoint()
        return done.value
    except OSError as exc:
        raise psycopg.OperationalError("connection socket closed") from exc


class TrioConnection(psycopg.AsyncConnection[Any]):
    """A psycopg AsyncConnection usable from trio tasks (see the module docstring)."""

    @classmethod
    async def connect(cls, conninfo: str = "", *, autocommit: bool = False,  # type: ignore[override]
                      **kwargs: Any) -> Self:
        """Connect (trying each host of `conninfo` in turn); autocommit as asked."""
        params = conninfo_to_dict(conninfo, **kwargs)
        if params.get("connect_timeout") is None and "PGCONNECT_TIMEOUT" not in os.environ:
            params["connect_timeout"] = CONNECT_TIMEOUT
        for key, value in KEEPALIVES.items():
            params.setdefault(key, value)
        timeout = timeout_from_conninfo(params) or None
        attempts = await trio.to_thread.run_sync(conninfo_attempts, params)
        last: Exception | None = None
        for attempt in attempts:
            try:
                gen = cls._connect_gen(make_conninfo("", **attempt))
                conn = await run_generator(gen, timeout=timeout)
                break
            except errors._WaitTimeout:
                last = psycopg.errors.ConnectionTimeout("connection timeout expired")
            except psycopg.Error as exc:
                last = exc
        else:
            assert last is not None
            raise last
        conn.lock = trio.Lock()  # type: ignore[assignment]  # asyncio's fails when contended
        if autocommit:
            await conn.set_autocommit(True)
        return conn

    def reusable(self) -> bool:
        """True when this idle autocommit connection may take a statement: open, outside
        any transaction, and nothing waiting to be read on its socket. An idle connection
        has nothing to read unless the server said something unasked: that is, nearly
        always, that it is closing the connection (a restart's AdminShutdown, a
        terminated backend) or closed it; a statement sent there would be lost."""
        if self.closed or self.pgconn.transaction_status != TransactionStatus.IDLE:
            return False
        return not _ready_now(self.pgconn.socket, WAIT_R)

    async def wait(self, gen: Any, interval: float = 0.0, timeout: float | None = None) -> Any:
        """Run a query's generator on this connection's socket (psycopg calls this)."""
        try:
            return await run_generator(gen, self.pgconn.socket, timeout)
        except trio.Cancelled:
            if self.pgconn.transaction_status == TransactionStatus.ACTIVE:
                self.pgconn.finish()  # mid-protocol: unusable; closed so no one reuses it
            raise
