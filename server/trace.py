"""Failures that leave a trace: one warning line in the error log and a count in `/metrics`.

Every event the owner must be able to find afterwards goes through `Trace.warn`: a failed
send, a 1011 close, a refused hello (with the peer's address), a dropped slow reader, a
budget hit, a crashed actor, a store writer that died, requests in flight that their
worlds never answered (freed by the backstop). Each is counted in
`petridish_warnings_total{event}` every time, and logged at warning at most once per
`interval` seconds per (event, key) (the key is who caused it: an address, a credential,
an actor), the next line saying how many were folded into it, so a hostile client cannot
flood the log. `Throttle` is that rule alone, for the lines that may repeat elsewhere
(failed accepts, a crowded peer port, a lost notification connection).
`configure_logging` keeps the error log in `<data>/logs/error.log` (a cluster's node:
`error-<node>.log`, as its processes may share the data directory).
"""

from __future__ import annotations

import logging
import logging.handlers
import math
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path

import trio

from server.metrics import Metrics

log = logging.getLogger("petridish.trace")

EVENTS = ("send_failed", "close_1011", "hello_refused", "slow_reader", "budget",
          "actor_crashed", "store_writer", "origin_refused", "token_revoked", "unsettled")
KEYS = 4096  # (event, key) pairs remembered for throttling; the oldest are forgotten
ERROR_LOG = Path("logs") / "error.log"
LOG_BYTES = 10 * 1024 * 1024  # the error log rotates past this, keeping LOG_BACKUPS files
LOG_BACKUPS = 3
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class Throttle:
    """When a line that may repeat is written: at most once per `interval` seconds per
    key (of `clock`), those held back counted into the next. The `keys` keys written last
    are remembered (a forgotten one is written at once again).

        if (held := throttle.due(address)) is not None:
            log.warning("... (%d more since)", ..., held)
    """

    def __init__(self, interval: float, clock: Callable[[], float] = trio.current_time,
                 keys: int = 1) -> None:
        self.interval, self.clock, self.keys = interval, clock, keys
        self._last: OrderedDict[Hashable, tuple[float, int]] = OrderedDict()

    def due(self, key: Hashable = None) -> int | None:
        """How many lines of `key` were held back since its last one, when one is due now
        (write it); None when its last was written within `interval` (this one is held
        back and counted)."""
        now = self.clock()
        last, held = self._last.get(key, (-math.inf, 0))
        if now - last < self.interval:
            self._last[key] = (last, held + 1)
            return None
        self._last[key] = (now, 0)
        self._last.move_to_end(key)
        while len(self._last) > self.keys:
            self._last.popitem(last=False)
        return held


class Trace:
    """Counts every warning event and logs it, throttled per (event, key)."""

    def __init__(self, metrics: Metrics, interval: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.metrics = metrics
        self._throttle = Throttle(interval, clock, KEYS)

    def warn(self, event: str, key: str, message: str, *args: object) -> None:
        """Count `event` and log `message % args` at warning unless `key` logged this
        event within `interval` seconds (then it is folded into the next line)."""
        if event not in EVENTS:
            raise ValueError(f"unknown trace event {event!r}")
        self.metrics.warnings.labels(event).inc()
        folded = self._throttle.due((event, key))
        if folded is None:
            return
        more = f" (and {folded} more like it since)" if folded else ""
        log.warning(f"{event}: {message}{more}", *args)


def _private_file(path: Path) -> None:
    """Create `path` with mode 0600 if absent (the handler then appends to it)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    os.chmod(path, 0o600)


def configure_logging(data_dir: Path, level: int = logging.INFO, *,
                      node: str | None = None) -> Path:
    """Log to stderr at `level`, and keep warnings and errors in `<data>/logs/error.log`,
    or `error-<node>.log` for a cluster's `node` (each file is one process's: rotation is
    not safe across processes), mode 0600, rotated past LOG_BYTES; returns its path."""
    path = Path(data_dir) / (ERROR_LOG.with_name(f"error-{node}.log") if node else ERROR_LOG)
    _private_file(path)
    root = logging.getLogger()
    root.setLevel(level)
    stderr = logging.StreamHandler()
    stderr.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    errors = logging.handlers.RotatingFileHandler(path, maxBytes=LOG_BYTES,
                                                  backupCount=LOG_BACKUPS, encoding="utf-8")
    errors.setLevel(logging.WARNING)
    errors.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(stderr)
    root.addHandler(errors)
    # websockets' protocol says "connection open" and "connection closed" at info for every
    # websocket: a client churning connections would drive stderr's volume.
    logging.getLogger("websockets").setLevel(logging.WARNING)
    return path
