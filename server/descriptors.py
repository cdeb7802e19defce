"""The process's file descriptors: every connection holds one, so `max_connections` must fit
under the descriptor limit.

A process started by systemd (or a shell) gets a soft `RLIMIT_NOFILE` of 1,024 whatever its
hard limit: at 1,024 descriptors every `accept` fails (`EMFILE`), and every client, the
owner's console included, waits until some connection ends. So `fit` raises the soft limit
to the hard one as the server starts, then lowers `max_connections` to what the limit
leaves: `RESERVED` descriptors are kept for the rest (the event store and its writer, the
log files, the listening sockets, the reactor's epoll, the refused connections being
answered: server/tcp_guard.py), and each connection may hold two (its socket, and a static
file being sent to it, which a client that does not read keeps open). It logs once what it
chose. Past `max_connections` the front door answers 503 (or cuts the connection of the
address holding the most), so the process never runs out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import attrs

from server.budgets import Budgets

log = logging.getLogger("petridish.server")

RESERVED = 256  # descriptors kept for everything but client connections
PER_CONNECTION = 2  # a connection's socket, and a file being sent to it
CEILING = 1 << 20  # the soft limit asked for when the hard one is unlimited


def _get() -> tuple[int, int]:
    import resource

    return resource.getrlimit(resource.RLIMIT_NOFILE)


def _set(soft: int, hard: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


Get = Callable[[], tuple[int, int]]  # -> (soft, hard)
Set = Callable[[int, int], None]  # (soft, hard)


def raise_limit(get: Get | None = None, set_: Set | None = None) -> int | None:
    """Raise the soft descriptor limit to the hard one; the soft limit now (None where the
    platform has none)."""
    try:
        soft, hard = (get or _get)()
    except (ImportError, OSError, ValueError):
        return None
    unlimited = hard < 0  # resource.RLIM_INFINITY
    want = CEILING if unlimited else hard
    if soft < 0 or soft >= want:
        return None if soft < 0 else soft
    try:
        (set_ or _set)(want, hard)
    except (OSError, ValueError):
        log.warning("the descriptor limit could not be raised from %d to %d", soft, want)
        return soft
    return want


def fit(budgets: Budgets, get: Get | None = None, set_: Set | None = None) -> Budgets:
    """`budgets` with `max_connections` within the descriptor limit (raised first: see the
    module doc); logs the limit and the bound chosen."""
    limit = raise_limit(get, set_)
    if limit is None:
        return budgets
    room = max((limit - RESERVED) // PER_CONNECTION, 1)
    if budgets.max_connections <= room:
        log.info("descriptors: %d; max_connections %d", limit, budgets.max_connections)
        return budgets
    log.warning("descriptors: %d, which leaves room for %d connections: max_connections "
                "lowered from %d to %d (raise the hard limit, e.g. systemd's LimitNOFILE=, to "
                "allow more)", limit, room, budgets.max_connections, room)
    return attrs.evolve(budgets, max_connections=room)
