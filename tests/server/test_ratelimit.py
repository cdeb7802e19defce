"""server/ratelimit.py: the token bucket, with time passed in."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.ratelimit import TokenBucket


def test_burst_then_refused() -> None:
    bucket = TokenBucket(rate=10, burst=5)
    assert [bucket.take(0.0) for _ in range(6)] == [True] * 5 + [False]


def test_refills_at_rate_up_to_burst() -> None:
    bucket = TokenBucket(rate=10, burst=5)
    for _ in range(5):
        assert bucket.take(0.0)
    assert not bucket.take(0.05)  # half a unit refilled
    assert bucket.take(0.1)  # one unit
    assert not bucket.take(0.1)
    # A long pause refills only up to the burst.
    assert bucket.available(100.0) == 5
    assert [bucket.take(100.0) for _ in range(6)] == [True] * 5 + [False]


def test_take_many_is_all_or_nothing() -> None:
    bucket = TokenBucket(rate=1, burst=3)
    assert not bucket.take(0.0, n=4)
    assert bucket.available(0.0) == 3  # the refused take spent nothing
    assert bucket.take(0.0, n=3)
    assert not bucket.take(0.0)


def test_clock_stepping_back_credits_no_time_twice() -> None:
    bucket = TokenBucket(rate=1, burst=10)
    assert bucket.take(10.0, n=10)
    assert not bucket.take(5.0)  # earlier time: nothing refilled
    assert bucket.take(11.0)  # one second after 10.0, not six after 5.0
    assert not bucket.take(11.0)


@pytest.mark.parametrize(("rate", "burst", "message"), [
    (0, 1, r"^rate must be > 0, not 0$"),
    (-1.5, 1, r"^rate must be > 0, not -1.5$"),
    (1, 0, r"^burst must be >= 1, not 0$"),
])
def test_bad_parameters(rate: float, burst: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TokenBucket(rate, burst)


@settings(max_examples=200, deadline=None)
@given(rate=st.floats(0.5, 1000), burst=st.integers(1, 50),
       steps=st.lists(st.tuples(st.floats(0, 2), st.integers(0, 5)), max_size=60))
def test_never_grants_more_than_burst_plus_refill(
        rate: float, burst: int, steps: list[tuple[float, int]]) -> None:
    """Over any run of takes, granted units <= burst + rate * elapsed time."""
    bucket = TokenBucket(rate, burst)
    now, granted = 0.0, 0
    for gap, n in steps:
        now += gap
        if bucket.take(now, n):
            granted += n
        assert granted <= burst + rate * now + 1e-6
        assert 0 <= bucket.available(now) <= burst
