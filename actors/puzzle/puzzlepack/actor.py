"""`PackActor`: a pack world's effect, `puzzlepack.solve`, the solver off the actor's task.

The solve is answered when the search ends (`defer`); meanwhile the pack's subscribers get a
snapshot every `PROGRESS_EVERY` seconds whose `solving` says how far it got (states expanded
against the budget's, seconds), read from the run's shared progress cell. One solve per pack
at a time; the search runs in a worker process (`offload(process=True)`, see
actors/puzzle/actor.py).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs

from actors.runtime import Call, Timer, WorldActor, refused
from actors.runtime.deferred import Deferred
from actors.runtime.host import Effect
from actors.runtime.offload import work_clock
from actors.world import Refusal
from protocol.errors import ErrorCode, ProtocolError
from protocol.ops import puzzle as ops

from ..hint import search_caps
from . import rules
from .solving import Progress, SolveJob, run_solve

PROGRESS_EVERY = 0.25  # seconds between progress pushes while a solve runs


@attrs.frozen
class _Tick:
    """Timer: push the running solve's progress."""


@attrs.frozen
class _Solved:
    """The solve ended."""

    result: ops.SolveResult


@attrs.frozen
class _Failed:
    """The solve raised (logged by the runtime)."""


@attrs.define
class _Run:
    """The solve in flight: who waits for it, its progress cell, its budget and ticker."""

    answer: Deferred
    progress: Progress
    budget_ms: int
    ticker: Timer


class PackActor(WorldActor):
    """One pack: the table's ops, plus the editor's solver runs."""

    state: rules.Shelf
    search_in_process: ClassVar[bool] = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._run: _Run | None = None

    def view(self) -> Any:
        """The pack's view, plus the progress of a solve in flight (`solving`, or null)."""
        data = super().view()
        if data and self._run is not None:
            expanded, seconds = self._run.progress.read()
            budget = self._run.budget_ms
            data["solving"] = {"expanded": expanded, "seconds": round(seconds, 3),
                               "budget_ms": budget,
                               "max_expanded": search_caps(budget).max_expanded}
        elif data:
            data["solving"] = None
        return data

    async def _solve(self, call: Call) -> None:
        """Start the search of the given level (answered when it ends)."""
        state, args = self.state, call.args
        refusal = rules.writable(state, self.ctx(call), None)
        if refusal is not None:
            raise refused(refusal)
        if self._run is not None:
            raise self.refuse(ops.PuzzleCode.SEARCHING, "a solve of this pack is still "
                              "running; wait for its answer")
        level = rules.checked(state, args.level)
        if isinstance(level, Refusal):
            raise refused(level)
        progress = Progress()
        job = SolveJob(level.to_json(), args.budget_ms, progress.name)
        self._run = _Run(self.defer(), progress, args.budget_ms,
                         self.every(PROGRESS_EVERY, _Tick()))
        self.publish_view()
        self.offload(functools.partial(run_solve, job, work_clock), _Solved, _Failed,
                     process=self.search_in_process)

    async def on_message(self, message: Any) -> None:
        """Progress ticks and the end of a solve."""
        if isinstance(message, _Tick):
            self.publish_view()
            return
        if not isinstance(message, _Solved | _Failed):
            await super().on_message(message)
            return
        run, self._run = self._run, None
        if run is None:
            return
        run.ticker.cancel()
        run.progress.close()
        self.publish_view()
        if isinstance(message, _Solved):
            run.answer.succeed(message.result)
        else:
            run.answer.fail(ProtocolError(ErrorCode.INTERNAL, "the solver failed on this "
                                          "level; the failure was logged"))

    effects: ClassVar[Mapping[str, Effect]] = {"puzzlepack.solve": _solve}


WORLD = attrs.evolve(rules.WORLD, actor=PackActor)
