"""Notifications of appended streams, from PostgreSQL's LISTEN/NOTIFY, as trio batches.

The store's append statement NOTIFYs once per commit (more only past 7,000 bytes of
payload): each line of the payload is `stream:rev`, a stream that moved in that commit
and its new revision. PostgreSQL delivers notifications at commit, in commit order, to
every connection that LISTENs on the channel; one connection per process suffices.

A reader task drains the connection into one dict (stream -> highest revision seen), and
the consumer takes the whole dict at once: whatever arrived while it was busy (reading
events, pushing them) comes as one batch, so a process does one read per stream per
batch, however many commits and spectators there were.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Container
from contextlib import aclosing, asynccontextmanager

import attrs
import trio
from psycopg import sql

from server.storage.pg_trio import TrioConnection


@attrs.frozen
class ListenStatistics:
    """Notifications received, of them from other processes, and batches handed out."""

    received: int
    foreign: int
    batches: int


class Notifications:
    """`async for moved in notes:` each `moved` maps streams to their latest revision."""

    def __init__(self) -> None:
        self._pending: dict[str, int] = {}
        self._arrived = trio.lowlevel.ParkingLot()
        self._error: BaseException | None = None
        self._received = self._foreign = self._batches = 0

    def __aiter__(self) -> Notifications:
        return self

    async def __anext__(self) -> dict[str, int]:
        """The streams that moved since the last batch; raises once the listener failed."""
        while not self._pending:
            if self._error is not None:
                raise self._error
            await self._arrived.park()
        batch, self._pending = self._pending, {}
        self._batches += 1
        return batch

    def statistics(self) -> ListenStatistics:
        """Counters for metrics."""
        return ListenStatistics(self._received, self._foreign, self._batches)

    async def _receive(self, conn: TrioConnection, own_pids: Container[int],
                       deliver_own: bool) -> None:
        """Fold every notification into the pending batch; keep an error for the consumer."""
        try:
            async with aclosing(conn.notifies()) as notes:
                async for note in notes:
                    self._received += 1
                    if note.pid not in own_pids:
                        self._foreign += 1
                    elif not deliver_own:
                        continue
                    for line in note.payload.split("\n"):
                        stream, _, rev = line.rpartition(":")
                        self._pending[stream] = max(int(rev), self._pending.get(stream, 0))
                    self._arrived.unpark_all()
        except Exception as exc:  # noqa: BLE001 - handed to the consumer, which raises it
            self._error = exc
        else:
            self._error = RuntimeError("the notification stream ended")
        self._arrived.unpark_all()


@asynccontextmanager
async def listen(dsn: str, channel: str, own_pids: Container[int] = (), *,
                 deliver_own: bool = False) -> AsyncIterator[Notifications]:
    """LISTEN on `channel` over a connection of its own; yield the Notifications.

    Notifications sent by the backends in `own_pids` (a live container: the store's
    writer connections) are counted as not foreign, and dropped unless `deliver_own`.
    """
    conn = await TrioConnection.connect(dsn, autocommit=True)
    try:
        await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
        notes = Notifications()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(notes._receive, conn, own_pids, deliver_own)
            try:
                yield notes
            finally:
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await conn.close()
