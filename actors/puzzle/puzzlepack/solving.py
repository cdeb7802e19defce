"""The level editor's solver run (`puzzlepack.solve`) as plain data, and its progress.

The run may go to a worker process, so the job is plain data (the level's JSON, the budget,
the name of its progress cell) and `run_solve` a module-level function. Its budget is a hint's:
states expanded (`hint.search_caps`). `Progress` is a 16-byte shared memory cell: the search
writes (states expanded, seconds) into it every 64 expansions, and the pack's actor reads it
to push progress to the editor against the budget's expansions; it works the same from a
thread or another process.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from multiprocessing import shared_memory
from typing import Any

import attrs

from protocol.ops.puzzle import SolveResult

from ..hint import STATUS, search_caps
from ..level import parse_level
from ..solve import solve

_CELL = struct.Struct("<qd")  # expanded, seconds


class Progress:
    """The actor's side of a progress cell: create, read, close (and unlink)."""

    def __init__(self) -> None:
        self._memory = shared_memory.SharedMemory(create=True, size=_CELL.size)
        _CELL.pack_into(self._memory.buf, 0, 0, 0.0)

    @property
    def name(self) -> str:
        """The cell's name, for the worker."""
        return self._memory.name

    def read(self) -> tuple[int, float]:
        """(states expanded, seconds) so far."""
        expanded, seconds = _CELL.unpack_from(self._memory.buf, 0)
        return expanded, seconds

    def close(self) -> None:
        """Free the cell (the worker only ever attaches to it)."""
        self._memory.close()
        self._memory.unlink()


@attrs.frozen
class SolveJob:
    """One editor solve: the level's JSON, the budget, the progress cell's name."""

    level: dict[str, Any]
    budget_ms: int
    progress: str


def run_solve(job: SolveJob, clock: Callable[[], float]) -> SolveResult:
    """Solve the job's level from its start within its budget (`clock` counts the wall-clock
    ceiling and the seconds reported), writing progress into its cell; the answer's moves
    were replayed in the engine."""
    cell = shared_memory.SharedMemory(job.progress)
    try:
        def progress(expanded: int, seconds: float) -> None:
            _CELL.pack_into(cell.buf, 0, expanded, seconds)

        result = solve(parse_level(job.level), clock=clock, progress=progress,
                       caps=search_caps(job.budget_ms))
        progress(result.expanded, result.seconds)
    finally:
        cell.close()
    return SolveResult(STATUS[result.status], result.moves, result.expanded,
                       round(result.seconds, 3), result.reason)
