"""A connection's outbox: its replies and pushes, in one bounded queue, written to a free
socket at once by whoever queues them; its session's `writer` task sends what waits."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import trio

from actors.runtime.subscriber import SubscriberQueue
from protocol.jsontext import escape_lone_surrogates

if TYPE_CHECKING:
    from server.session import Session

REST = ""  # queued for the writer: the rest of a frame the socket took a part of
WRITER_TASK = "server.outbox.writer"  # every writer task's name (one string)


class Outbox(SubscriberQueue):
    """The connection's outbox; what its subscriptions cost is charged to its client.

    While it is empty and the socket is free, a frame is written at once by whoever
    queues it (a world's reply or push, the reader's refusal): a non-blocking write, no
    wait, and no turn of the writer task. Only what the socket does not take at once
    waits for the writer (the frame, or REST when the socket took a part of it).

    It holds its session weakly: the session holds it, and the two in a cycle left every
    closed connection (its socket, tasks, protocol: ~40 objects) to the cyclic garbage
    collector, held until a pass of the generation it had aged into (for a connection
    that lived long, a full pass, which the server keeps rare: server/commands.py
    `tune_gc`), and costing that pass ~40 us each. Now a connection is freed when its
    last task ends (tests/server/test_cyclic_garbage.py).
    """

    def __init__(self, session: Session, capacity: int, max_chars: int) -> None:
        super().__init__(capacity, max_chars)
        self._session = weakref.ref(session)

    def _at_once(self, frame: str) -> str | None:
        session = self._session()
        if session is None or not session.writing or frame is REST:
            return frame
        try:
            if not session.ws.send_at_once(frame):
                return frame
        except UnicodeEncodeError:
            return frame  # the writer sends it escaped
        session.server.metrics.frames_out.inc()
        return REST if session.ws.owes else None

    @property
    def footprint(self) -> int | None:  # type: ignore[override]
        """How firmly its subscriptions hold their worlds live: its client's
        `Account.footprint` (None for a token holder, the owner, or before the hello)."""
        session = self._session()
        account = None if session is None else session.account
        return None if account is None else account.footprint

    def charge(self, seconds: float) -> None:
        """A subscription's first push cost `seconds` of the world's time."""
        if (session := self._session()) is not None:
            session.charge(seconds)

    def get_nowait(self) -> str | None:
        """As the queue's; room made here lets a paused reader read again."""
        frame = super().get_nowait()
        if (session := self._session()) is not None and session.paused:
            session.resume_reading()
        return frame


async def writer(session: Session) -> None:
    """The session's writer task: send what waits in its outbox until the outbox closes
    (a failed send closes it; the watchdog drops a send the client does not take)."""
    frames_out = session.server.metrics.frames_out
    clock = trio.current_time
    try:
        while (frame := await session.outbox.get()) is not None:
            session.sending_since = clock()
            if frame is REST:  # (counted when its first part went)
                await session.ws.flush()
            else:
                try:
                    await session.ws.send_text(frame)
                except UnicodeEncodeError:
                    # A lone surrogate stored before the protocol refused them: escaped.
                    await session.ws.send_text(escape_lone_surrogates(frame))
                frames_out.inc()
            session.sending_since = None
    except Exception as exc:  # noqa: BLE001 - the client is gone; say so unless expected
        if not session.dropped:
            session.server.trace.warn("send_failed", session.address,
                                      "a send to %s failed: %r", session.address, exc)
    finally:
        session.sending_since = None
        session.outbox.close()
