"""LifePot simulation speed: 180 generations with 4 species at 64x64 and 128x128, one core.

`python -m bench ecosystem [--repeats N] [--pin]`. Times `run.simulate` end to end
(rates, schedule, field update, metrics, score, digests). Goal: 180 generations at 64x64
in under 0.25 s. The simulation is single-threaded (elementwise numpy, no BLAS); `--pin`
also binds the process to one CPU, which on a busy shared machine makes the wall time
worse, so CPU seconds are reported beside wall seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

GENERATIONS = 180
# A four-species world: producer, two grazers, a hunter; six pairs, toxin pressure.
ANSWERS = {"world": "A lush pond with algae, snails and fish", "threat": "A pike and poison",
           "reward": "coexist and grow"}


def _pin_one_core() -> str:
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"cpu{cpu}"
    return "unpinned"


def main(argv: list[str]) -> dict[str, Any]:
    """Run the benchmark; returns the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench ecosystem")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pin", action="store_true", help="bind the process to one CPU")
    args = parser.parse_args(argv)
    pinned = _pin_one_core() if args.pin else "unpinned"

    from actors.ecosystem.keywords import deterministic_setup
    from actors.ecosystem.run import simulate
    from actors.ecosystem.setup import default_config

    worlds = {"4sp": deterministic_setup(ANSWERS)["config"], "2sp_default": default_config()}
    out: dict[str, Any] = {"generations": GENERATIONS, "pinned": pinned,
                           "repeats": args.repeats, "goal_s_4sp_64": 0.25}
    simulate(worlds["4sp"], 0, 5, size=16)  # warm caches and imports
    for name, config in worlds.items():
        for size in (64, 128):
            times, cpu = [], []
            for rep in range(args.repeats):
                start, start_cpu = time.perf_counter(), time.process_time()
                simulate(config, rep, GENERATIONS, size=size)
                times.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
                print(f"{name} {size}x{size} run {rep}: {times[-1]:.3f} s wall, "
                      f"{cpu[-1]:.3f} s cpu", file=sys.stderr)
            key = f"{name}_{size}"
            out[f"{key}_best_s"] = round(min(times), 4)
            out[f"{key}_median_s"] = round(statistics.median(times), 4)
            # CPU time of this process: the fairer figure on a machine shared with others.
            out[f"{key}_median_cpu_s"] = round(statistics.median(cpu), 4)
            out[f"{key}_generations_per_s"] = round(GENERATIONS / statistics.median(times), 1)
    out["goal_met_4sp_64"] = out["4sp_64_median_s"] < 0.25
    return out
