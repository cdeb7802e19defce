"""The descriptor limit: raised to the hard limit at start, `max_connections` fitted under
what it leaves (logged once), and a failing `accept` logged at most every 10 s."""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import pytest
import trio

from server import descriptors, front
from server.budgets import Budgets
from tests.server.ws_harness import running_server


class Limits:
    """A fake RLIMIT_NOFILE: (soft, hard), and the soft limits asked for."""

    def __init__(self, soft: int, hard: int, settable: bool = True) -> None:
        self.soft, self.hard, self.settable = soft, hard, settable
        self.asked: list[int] = []

    def get(self) -> tuple[int, int]:
        return self.soft, self.hard

    def set(self, soft: int, hard: int) -> None:
        self.asked.append(soft)
        if not self.settable:
            raise ValueError("not allowed")
        self.soft, self.hard = soft, hard


@pytest.mark.parametrize(("soft", "hard", "settable", "limit", "connections"), [
    (1024, 524288, True, 524288, 10_000),  # systemd's defaults: raised, room enough
    (1024, 1024, True, 1024, 384),  # a hard limit of 1,024: max_connections lowered
    (1024, 4096, False, 1024, 384),  # not raised (refused): fitted to the soft one
    (1024, -1, True, 1 << 20, 10_000),  # unlimited: a million
    (65536, 65536, True, 65536, 10_000),  # nothing to do
    (2048, 8192, True, 8192, 3968),  # two descriptors a connection, past 256
])
def test_the_soft_limit_is_raised_and_max_connections_fits_under_it(
        soft: int, hard: int, settable: bool, limit: int, connections: int,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "petridish.server")
    limits = Limits(soft, hard, settable)
    budgets = descriptors.fit(Budgets(), limits.get, limits.set)
    assert limits.soft == limit
    assert budgets.max_connections == connections
    assert budgets.connections_per_address == Budgets().connections_per_address
    lines = [r.getMessage() for r in caplog.records if "descriptors" in r.getMessage()]
    assert len(lines) == 1
    assert lines[0].startswith(f"descriptors: {limit}")
    assert f"max_connections {connections}" in lines[0] or \
        f"from 10000 to {connections}" in lines[0]


async def test_serve_fits_max_connections_to_the_descriptor_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
        ) -> None:
    """With `ulimit -n 1024` and no higher hard limit, 17 addresses x 64 idle connections
    would take every descriptor: the server holds at most 384 (each may hold two)."""
    caplog.set_level(logging.INFO, "petridish.server")
    limits = Limits(1024, 1024)
    monkeypatch.setattr(descriptors, "_get", limits.get)
    monkeypatch.setattr(descriptors, "_set", limits.set)
    async with running_server(tmp_path) as srv:
        assert srv.state.config.budgets.max_connections == 384
        assert srv.state.guard.budgets.max_connections == 384
        assert srv.state.ledger.budgets.max_connections == 384
    assert "max_connections lowered from 10000 to 384" in caplog.text


class _Exhausted:
    """A listener whose accepts fail for want of descriptors, `failures` times."""

    def __init__(self, failures: int) -> None:
        self.failures = failures

    async def accept(self) -> trio.SocketStream:
        await trio.lowlevel.checkpoint()
        if self.failures:
            self.failures -= 1
            raise OSError(errno.EMFILE, "Too many open files")
        await trio.sleep_forever()
        raise AssertionError


async def test_failed_accepts_are_logged_at_most_every_ten_seconds(
        autojump_clock: trio.abc.Clock, caplog: pytest.LogCaptureFixture) -> None:
    listener = _Exhausted(300)  # 30 s of failures, one every ACCEPT_RETRY
    async with trio.open_nursery() as nursery:
        nursery.start_soon(front._accept, listener, nursery, None)
        while listener.failures:
            await trio.sleep(1)
        nursery.cancel_scope.cancel()
    lines = [r.getMessage() for r in caplog.records if r.name == "petridish.front"]
    assert 3 <= len(lines) <= 4, lines
    assert lines[0] == ("accept failed (Too many open files), 1 time(s) since the last "
                        "report; retrying every 0.1 s")
    assert sum(int(line.split(", ")[1].split()[0]) for line in lines) <= 300
    assert int(lines[1].split(", ")[1].split()[0]) >= 90
