"""Work off an actor's task: worker threads, or worker processes for pure-Python work
long enough that holding the GIL would stall the server's one trio thread (the puzzle's
solver). Both wait behind the runtime's one offload limiter (`RuntimeConfig.offload_threads`),
so heavy work waits its turn rather than multiplying. Work that mostly waits on a network
peer (a model's reply, `offload(io=True)`) takes a thread behind a limiter of its own
(`RuntimeConfig.io_threads`): a slow model never holds the CPU work's slot. `Actor.offload`
is the way in.

A worker process (`process=True`) is one of a pool of as many spawned processes as offload
threads: its `work` and result must pickle (a module-level function, or a
`functools.partial` of one over plain data), and a time limit is counted on `work_clock`.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import functools
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import trio

T = TypeVar("T")

# The name a worker thread bears while it runs offloaded work (trio names it back after):
# a thread abandoned at a stop runs on, holding what its work names until it ends.
OFFLOAD_THREAD = "offload"

# The clock offloaded work counts a wall-clock limit on (a world's domain code reads no clock
# of its own: its effect passes this one). It pickles by name, so it travels to a worker process.
work_clock: Callable[[], float] = time.monotonic


def _worker_start(parent: int) -> None:
    """A worker process's initializer. It runs at a lower priority (nice +10), so that on a
    busy machine offloaded work yields the CPU to the server's loop, and it exits as soon as
    the process that started it is gone (a pool's worker holds both ends of its own job
    pipe, so a parent killed by SIGKILL would otherwise leave it waiting forever). It
    ignores SIGINT (a Ctrl-C reaches the server's whole process group; the server's
    shutdown ends the pool), not SIGTERM, with which a broken pool ends its workers."""
    os.nice(10)
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


@functools.cache
def _process_pool(workers: int) -> concurrent.futures.ProcessPoolExecutor:
    """The worker processes of `offload(process=True)`, started on first use and shared by
    every actor. Spawned, not forked: the server's process holds threads and a trio loop."""
    pool = concurrent.futures.ProcessPoolExecutor(
        max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
        initializer=_worker_start, initargs=(os.getpid(),))
    # Shut down before the interpreter tears its modules down (a pool collected later
    # fails in its callbacks); a job still running is at most one search budget.
    atexit.register(pool.shutdown, cancel_futures=True)
    return pool


async def _in_process(work: Callable[[], T], limiter: trio.CapacityLimiter) -> T:
    """`work()` in a worker process, waited for without a thread; a job still queued when the
    waiter is cancelled is dropped (a running one runs to its end)."""
    async with limiter:
        future = _process_pool(int(limiter.total_tokens)).submit(work)
        token = trio.lowlevel.current_trio_token()
        finished = trio.Event()

        def wake(_: concurrent.futures.Future[T]) -> None:
            try:
                token.run_sync_soon(finished.set)
            except trio.RunFinishedError:
                pass  # the server stopped meanwhile: nobody waits

        future.add_done_callback(wake)
        try:
            await finished.wait()
        finally:
            future.cancel()
        try:
            return future.result()
        except concurrent.futures.process.BrokenProcessPool:
            _process_pool.cache_clear()  # a worker died: the next job gets a fresh pool
            raise


def thread_timed(work: Callable[[], T], *, held: bool = False
                 ) -> Callable[[], tuple[T, float]]:
    """`work` for a worker thread, returning its value and the thread's CPU seconds for it
    (what serving a caller cost off the actor's task, for `Deferred.charge`: a world's own
    code reads no clock); `held`: the seconds it held the thread instead (wall time, for
    work that runs a subprocess, whose CPU no thread clock sees)."""
    clock = time.perf_counter if held else time.thread_time

    def timed() -> tuple[T, float]:
        started = clock()
        return work(), clock() - started
    return timed


async def run_offloaded(work: Callable[[], T], limiter: trio.CapacityLimiter,
                        process: bool) -> T:
    """`work()` in a worker process (`process`) or a worker thread, behind `limiter`; a
    thread's result is dropped when the waiter is cancelled (a thread runs to its end)."""
    if process:
        return await _in_process(work, limiter)
    held = [work]

    def job() -> T:  # lets go of `work` as it ends, while the thread bears its name
        return held.pop()()
    return await trio.to_thread.run_sync(job, limiter=limiter, abandon_on_cancel=True,
                                         thread_name=OFFLOAD_THREAD)
