"""A connection's outbox: its replies and pushes, in one bounded queue, written to a free
socket at once by whoever queues them (server/session.py's writer sends what waits)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from actors.runtime.subscriber import SubscriberQueue

if TYPE_CHECKING:
    from server.session import Session

REST = ""  # queued for the writer: the rest of a frame the socket took a part of


class Outbox(SubscriberQueue):
    """The connection's outbox; what its subscriptions cost is charged to its client.

    While it is empty and the socket is free, a frame is written at once by whoever
    queues it (a world's reply or push, the reader's refusal): a non-blocking write, no
    wait, and no turn of the writer task. Only what the socket does not take at once
    waits for the writer (the frame, or REST when the socket took a part of it).
    """

    def __init__(self, session: Session, capacity: int, max_chars: int) -> None:
        super().__init__(capacity, max_chars)
        self.session = session

    def _at_once(self, frame: str) -> str | None:
        session = self.session
        if not session.writing or frame is REST:
            return frame
        try:
            if not session.ws.send_at_once(frame):
                return frame
        except UnicodeEncodeError:
            return frame  # the writer sends it escaped
        session.server.metrics.frames_out.inc()
        return REST if session.ws.owes else None

    def charge(self, seconds: float) -> None:
        """A subscription's first push cost `seconds` of the world's time."""
        self.session.charge(seconds)

    def get_nowait(self) -> str | None:
        """As the queue's; room made here lets a paused reader read again."""
        frame = super().get_nowait()
        if self.session.paused:
            self.session.resume_reading()
        return frame
