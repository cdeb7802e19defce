"""A benchmark's server lifts every budget its load generator (hundreds of clients on one
loopback address) would spend, and keeps the rest: a budget added to server/budgets.py
must be sorted here, or a bench at 1,000 connections measures refusals (as `bench peers`
did once `max_live_worlds` came)."""

from __future__ import annotations

import attrs

from bench._budgets import LIFTED, lifted_budgets
from server.budgets import Budgets

KEPT = {
    "max_connections",  # server-wide, above any bench's connections
    "handshake_timeout",  # per connection
    "hello_failure_rate",  # the refill of hello_failures, lifted
    "subscriptions",  # per connection: a bench connection follows one world
    "send_timeout",  # per frame
    "cpu_contended",  # only read when a CPU budget refuses, lifted
    "loads_at_once",  # no world is loaded again while max_live_worlds is lifted
}


def test_every_budget_is_lifted_or_kept_for_a_reason() -> None:
    names = set(attrs.fields_dict(Budgets))
    assert not KEPT & set(LIFTED)
    assert names == KEPT | set(LIFTED), names ^ (KEPT | set(LIFTED))
    budgets = lifted_budgets()
    assert all(getattr(budgets, name) >= 10**6 for name in LIFTED)
