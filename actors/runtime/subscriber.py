"""The bounded queue of text frames between actors and one connection's socket.

Actors never await a client: they `offer` pushes, which fails at once when the queue is
full (the actor then drops that subscriber with a `resync` notice, which is `force`d in
past the bound: at most one per topic, so the queue stays bounded). The connection's
own tasks `put` replies, waiting for room, and its writer task `get`s frames in order.
The bound counts frames and, optionally, characters: a queue that is not empty takes no
frame that would push it past `max_chars` (an empty one takes any frame, so one large
snapshot still gets through).

A subclass may take a frame past the queue while it is empty (`_at_once`: a connection's
outbox writes it to the socket at once when the socket takes it without waiting), so a
frame waits here only behind others or for a busy socket.

Every connection holds one, idle most of its life: the FIFO is two lists (frames pushed,
frames to pop in reverse) rather than a deque (an empty deque holds a 760-byte block),
and the parking lot of waiting putters is made on the first wait.
"""

from __future__ import annotations

import attrs
import trio

from actors.runtime.waiter import Waiter


@attrs.frozen
class QueueStatistics:
    """Frames waiting, the most ever waiting, and the bound."""

    depth: int
    peak: int
    capacity: int
    chars: int


class SubscriberQueue:
    """A FIFO of text frames with a soft bound (`offer`, `put`) and an overflow (`force`)."""

    # How firmly this subscriber holds the worlds it follows live (the directory's
    # `_make_room`): None, a world it follows is never unloaded to make room; a number
    # (the worlds its client follows: an anonymous spectator's), a world whose every
    # subscriber has one may be, theirs whose lightest follower follows most first.
    footprint: int | None = None

    def __init__(self, capacity: int, max_chars: int | None = None) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, not {capacity}")
        self.capacity = capacity
        self.max_chars = max_chars
        self._chars = 0
        self._back: list[str] = []  # pushed, oldest first
        self._front: list[str] = []  # to pop, oldest last
        self._getter = Waiter("a SubscriberQueue")  # the writer task, in `get`
        self._writable: trio.lowlevel.ParkingLot | None = None  # putters waiting for room
        self._peak = 0
        self.closed = False

    def __len__(self) -> int:
        return len(self._back) + len(self._front)

    def _full_for(self, frame: str) -> bool:
        depth = len(self)
        if depth >= self.capacity:
            return True
        return (self.max_chars is not None and depth > 0
                and self._chars + len(frame) > self.max_chars)

    def _at_once(self, frame: str) -> str | None:
        """The queue is empty: deliver `frame` now if the consumer can take it without
        waiting. None when it was delivered, else what to enqueue (here: `frame`)."""
        return frame

    def _push(self, frame: str) -> None:
        if not self._back and not self._front:
            taken = self._at_once(frame)
            if taken is None:
                return
            frame = taken
        self._back.append(frame)
        self._chars += len(frame)
        self._peak = max(self._peak, len(self))
        self._getter.wake()

    async def _park(self) -> None:
        if self._writable is None:
            self._writable = trio.lowlevel.ParkingLot()
        await self._writable.park()

    def offer(self, frame: str) -> bool:
        """Enqueue without waiting; False when full or closed (nothing enqueued)."""
        if self.closed or self._full_for(frame):
            return False
        self._push(frame)
        return True

    def force(self, frame: str) -> None:
        """Enqueue past the bound: for the one notice that ends a subscription, and for
        replies whose requests were admitted while there was room (their number is
        bounded by the connection's `max_inflight`)."""
        if not self.closed:
            self._push(frame)

    async def put(self, frame: str) -> None:
        """Enqueue, waiting while the queue is full; a closed queue discards the frame."""
        while not self.closed and self._full_for(frame):
            await self._park()
        if not self.closed:
            self._push(frame)

    def has_room(self) -> bool:
        """True while a small frame would be taken (`offer`, `put` without a wait)."""
        return not self._full_for("")

    def get_nowait(self) -> str | None:
        """The next frame, or None when none is waiting."""
        if not self._front:
            if not self._back:
                return None
            self._front, self._back = self._back, self._front
            self._front.reverse()
        frame = self._front.pop()
        self._chars -= len(frame)
        if self._writable:  # waiters recheck: a small frame may fit where a big one not
            self._writable.unpark_all()
        return frame

    async def get(self) -> str | None:
        """The next frame, waiting for one; None once the queue is closed and empty.

        One task gets (the connection's writer), so the queue parks and wakes it itself.
        """
        while (frame := self.get_nowait()) is None:
            if self.closed:
                return None
            await self._getter.wait()
        return frame

    def close(self) -> None:
        """Refuse new frames; `get` still drains what is queued, then returns None."""
        self.closed = True
        self._getter.wake()
        if self._writable is not None:
            self._writable.unpark_all()

    def statistics(self) -> QueueStatistics:
        """Depth, peak, capacity and characters waiting, as a frozen value."""
        return QueueStatistics(len(self), self._peak, self.capacity, self._chars)
