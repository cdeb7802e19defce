"""Correctness under load, against a server in its own process with its default budgets
(the scenarios: tests/server/load_scenarios.py). While 2,000 idle websockets and 500
handshakes that never finish are held, and while an anonymous client asks the costliest
reads it may as fast as its frame rate allows, a measured client's every round trip is
answered, right and in order, and so are the others. How fast is `python -m bench load`'s
to say (docs/operations.md, "Under load"): no timing is asserted here, and the figures
seen are only recorded. The hostile reader runs at normal priority here (the bench's, on
idle cores only, could starve on a saturated machine). (One agent cannot create more worlds
than its budget: tests/server/test_budgets.py.)
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trio

from tests.server.load_scenarios import (
    FIELD,
    IDLE_ASKED,
    TOTAL,
    Hostile,
    hostile_reader,
    idle_and_half_open,
    spread,
)
from tests.server.server_process import ServerProcess

IDLE, HALF_OPEN = 2000, 500
SAMPLES = 100  # the measured client's round trips, quiet and again under load
HOSTILE_SAMPLES, HOSTILE_BLOCKS = 200, 4  # ... with the reader reading, and stopped


def _answers(first: int, n: int) -> list[dict]:
    """The replies of round trips `first` .. `first + n - 1`, each right."""
    return [{"id": rid, "ok": True, "result": TOTAL} for rid in range(first, first + n)]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server process (fd limits raised for both)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 2 * (IDLE + HALF_OPEN) + 1000
    if hard < need:
        pytest.skip(f"needs {need} file descriptors, the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))
    proc = ServerProcess(tmp_path / "data").start()  # inherits the limit
    yield proc
    proc.kill()


async def test_every_client_is_served_with_2000_idle_and_500_half_open(
        server: ServerProcess, record_property: Callable[[str, object], None]) -> None:
    run = await idle_and_half_open(server, IDLE, HALF_OPEN, SAMPLES)
    record_property("load", {"quiet": spread(run.quiet), "loaded": spread(run.loaded),
                             "half_open_closes": len(run.closes)})
    assert run.replies == _answers(0, 2 * SAMPLES)
    assert run.held == IDLE
    assert run.idle_replies == _answers(1, 1) * IDLE_ASKED  # spread over them, under load
    assert (run.health["status"], run.health["ok"]) == (200, True)
    assert run.health["connections"] == IDLE + 1  # (and the measured client)
    # Every half-open slot was closed by the server's handshake timeout, none by us.
    assert sorted(set(run.closes)) == list(range(HALF_OPEN))


async def test_a_hostile_reader_and_another_client_are_both_served(
        server: ServerProcess, record_property: Callable[[str, object], None]) -> None:
    run = await hostile_reader(server, HOSTILE_SAMPLES, HOSTILE_BLOCKS)
    record_property("hostile_reader", {"quiet": spread(run.quiet),
                                       "hostile": spread(run.hostile), "reader": run.reader})
    assert run.replies == _answers(0, 2 * HOSTILE_SAMPLES)
    assert run.reader["answered"] > 0
    assert set(run.reader) <= {"answered", "over_budget"}  # its refusals: its CPU budget


@pytest.mark.parametrize(("idle", "policy"), [(False, os.SCHED_OTHER), (True, os.SCHED_IDLE)],
                         ids=["test", "bench"])
async def test_the_hostile_reader_runs_on_idle_cores_only_for_the_bench(
        idle: bool, policy: int) -> None:
    # Before: always SCHED_IDLE, so on a saturated machine the test's reader could starve.
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    reader = Hostile(listener.socket.getsockname()[1], FIELD, idle=idle)
    try:
        with trio.fail_after(60):
            async with await listener.accept():  # it has set its priority by then
                assert os.sched_getscheduler(reader.proc.pid) == policy
    finally:
        reader.kill()
        await listener.aclose()
