"""One task reads every greeted websocket: `Reactor`.

A connection past its hello is a `Reader` watched by the reactor: its socket sits in an
epoll set of the reactor's own, registered once (level-triggered), and the reactor's
task waits for that set through trio (an epoll descriptor is readable when one of its
sockets is). It serves the ready connections in passes: a pass takes every connection
epoll reports ready and every one left with a message already read, and hands each at
most one message (reading its socket first when nothing it read is left); epoll is asked
again only once the pass is done, so one client's many frames never hold the others. A
pass is served in rounds of at most `round_seconds`, and the task yields after each, so
the worlds' tasks run between.

Why: a reader task per connection cost every request a task step of its own (the wake,
the coroutine chain resumed, trio's registration of the socket changed twice with
`epoll_ctl`), about as much as parsing and checking the request; the reactor's step is
shared by every connection ready at once (docs/performance.md).

A reader that may not take a message now (its outbox full, its answer slots taken) is
`pause`d: its socket leaves the set (TCP pushes back on the client) until `resume`
(which also wakes the reactor through an eventfd in the set).
"""

from __future__ import annotations

import logging
import os
import select
import time
from typing import Protocol

import trio

log = logging.getLogger("petridish.reactor")


class Reader(Protocol):
    """A connection the reactor serves."""

    readable: bool  # set by the reactor when epoll reports its socket

    def serve_one(self) -> bool:
        """Hand over at most one message (reading the socket when `readable` and nothing
        read is left); True when another message is already read and waits."""

    def failed(self) -> None:
        """`serve_one` raised (the reactor logged it and serves the reader no more)."""


class Reactor:
    """The reading task of every watched connection (see the module doc)."""

    def __init__(self, round_seconds: float) -> None:
        self.round_seconds = round_seconds
        self._epoll = select.epoll()
        self._wake = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._epoll.register(self._wake, select.EPOLLIN)
        self._readers: dict[int, Reader] = {}  # by socket descriptor
        self._fds: dict[Reader, int] = {}
        self._pass: dict[Reader, None] = {}  # this pass's readers not served yet (ordered)
        self._next: dict[Reader, None] = {}  # the next pass's: messages left, or resumed
        self._parked = False  # the task waits for the epoll set

    def __len__(self) -> int:
        """Connections watched (paused ones included)."""
        return len(self._fds)

    def watch(self, fd: int, reader: Reader) -> None:
        """Serve `reader`, whose socket is `fd`, from now on (its messages already read
        first)."""
        self._fds[reader] = fd
        self._readers[fd] = reader
        self._epoll.register(fd, select.EPOLLIN)
        self.resume(reader)

    def unwatch(self, reader: Reader) -> None:
        """Stop serving `reader` (before its socket closes: a descriptor's number is
        reused by the next connection)."""
        fd = self._fds.pop(reader, None)
        self._pass.pop(reader, None)
        self._next.pop(reader, None)
        if fd is None:
            return
        if self._readers.pop(fd, None) is not None:
            self._unregister(fd)

    def pause(self, reader: Reader) -> None:
        """Leave `reader`'s socket unread until `resume`."""
        fd = self._fds.get(reader)
        self._pass.pop(reader, None)
        self._next.pop(reader, None)
        if fd is not None and self._readers.pop(fd, None) is not None:
            self._unregister(fd)

    def resume(self, reader: Reader) -> None:
        """Serve `reader` again from the next round (a no-op unless it is paused)."""
        fd = self._fds.get(reader)
        if fd is None:
            return
        if fd not in self._readers:
            self._readers[fd] = reader
            self._epoll.register(fd, select.EPOLLIN)
        self._next[reader] = None
        if self._parked:
            self._parked = False
            os.eventfd_write(self._wake, 1)

    def _unregister(self, fd: int) -> None:
        try:
            self._epoll.unregister(fd)
        except (OSError, ValueError):
            pass  # closed already: the kernel dropped it from the set

    async def run(self) -> None:
        """Serve until cancelled."""
        clock = time.perf_counter
        try:
            while True:
                if not self._pass and not self._next_pass():
                    await self._park()
                    continue
                started = clock()
                while self._pass:
                    reader = next(iter(self._pass))
                    del self._pass[reader]
                    try:
                        if reader.serve_one():
                            self._next[reader] = None
                    except Exception:  # a bug: that connection ends, the others go on
                        log.exception("serving a connection failed")
                        self.unwatch(reader)
                        reader.failed()
                    if clock() - started >= self.round_seconds:
                        break
                # The worlds' turn before the next round; when nothing is ready, the wait
                # for the epoll set is that turn (a checkpoint first would be a task step
                # more per request on a quiet server).
                if self._pass or self._next_pass():
                    await trio.lowlevel.checkpoint()
                else:
                    await self._park()
        finally:
            self._epoll.close()
            os.close(self._wake)

    async def _park(self) -> None:
        """Wait until a watched socket is readable or a reader resumed."""
        self._parked = True
        await trio.lowlevel.wait_readable(self._epoll.fileno())
        self._parked = False

    def _next_pass(self) -> bool:
        """Start the next pass: the readers left from the last, then those whose sockets
        epoll reports; False when there are none."""
        ready, self._next = self._next, {}
        readers = self._readers
        for fd, _ in self._epoll.poll(0):
            reader = readers.get(fd)
            if reader is not None:
                reader.readable = True
                ready[reader] = None
            elif fd == self._wake:
                try:
                    os.eventfd_read(self._wake)
                except BlockingIOError:
                    pass
        self._pass = ready
        return bool(ready)
