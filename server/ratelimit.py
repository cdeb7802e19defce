"""A token bucket for the per-connection frame rate limit.

Time is passed in (seconds on any monotonic clock) so the bucket is
deterministic and tests need no sleeping.
"""

from __future__ import annotations


class TokenBucket:
    """Allows bursts of up to `burst` units, refilled at `rate` units per second."""

    __slots__ = ("_last", "_tokens", "burst", "rate")

    def __init__(self, rate: float, burst: int) -> None:
        if not rate > 0:
            raise ValueError(f"rate must be > 0, not {rate!r}")
        if burst < 1:
            raise ValueError(f"burst must be >= 1, not {burst!r}")
        self.rate = float(rate)
        self.burst = int(burst)
        self._tokens = float(burst)  # a new connection starts with a full bucket
        self._last: float | None = None

    def take(self, now: float, n: int = 1) -> bool:
        """Spend `n` units at time `now` if available; False (and nothing spent) otherwise."""
        if n < 0:
            raise ValueError(f"n must be >= 0, not {n!r}")
        if self._last is None:
            self._last = now
        elif now > self._last:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate)
            self._last = now
        # A `now` earlier than the last one refills nothing and keeps the reference
        # point, so the same stretch of time is never credited twice.
        if self._tokens >= n:
            self._tokens -= n
            return True
        return False

    def available(self, now: float) -> float:
        """Units that `take` could spend at `now` (without spending them)."""
        if self._last is None or now <= self._last:
            return self._tokens
        return min(float(self.burst), self._tokens + (now - self._last) * self.rate)
