"""`python -m bench puzzle`: engine and fast-path speed, and the solver on Keke's full_biy set.

Figures:
* `engine_steps_per_s`: public engine (`Game.step`) over every corpus solution;
* `fast_steps_per_s`: the solver's keke fast path over the same moves (and the ratio);
* `solver`: for each full_biy level (keke profile), whether the solver found a (replay-checked)
  solution within `--max-seconds`, its length against the shipped one, states expanded. An
  expansion with folded walks (`actors/puzzle/walks.py`) plays every step out of the YOU's
  walk region, so it costs several single-move expansions: compare `expanded_per_s` only
  between runs of the same solver.

Options: `--max-seconds S` (default 10) per level, `--limit N` (first N levels only),
`--strategy best|bfs`, `--clock cpu|wall` (default cpu: the process's own CPU time, so a
busy shared machine does not eat the budget; one process, one core).
The corpus is read from `$PETRIDISH_SHARED/baba-corpus`, or `shared/` beside the clone.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

SETS = ("demo", "test", "search_biy", "full_biy", "user_milk_biy")


def _corpus_dir() -> Path:
    """The Keke corpus folder: `$PETRIDISH_SHARED` or `shared/` beside the clone."""
    shared = Path(os.environ.get("PETRIDISH_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    folder = shared / "baba-corpus" / "keke"
    if not folder.is_dir():
        raise SystemExit(f"bench puzzle: {folder} is absent; lay shared/ beside the clone "
                         "or set PETRIDISH_SHARED to its path")
    return folder


def _corpus(name: str) -> list[Any]:
    from actors.puzzle.keke import import_keke_levels

    path = _corpus_dir() / f"{name}_LEVELS.json"
    return import_keke_levels(json.loads(path.read_text()))


def _step_rates() -> dict[str, float]:
    from actors.puzzle.fast import FastLevel
    from actors.puzzle.game import create_game
    from actors.puzzle.words import MOVE_LETTERS

    levels = [lv for name in SETS for lv in _corpus(name)]
    steps = sum(len(lv.solution) for lv in levels)
    t0 = time.perf_counter()
    for lv in levels:
        game = create_game(lv)
        for letter in lv.solution:
            game.step(MOVE_LETTERS[letter])
    engine = time.perf_counter() - t0
    t0 = time.perf_counter()
    for lv in levels:
        fast = FastLevel(lv)
        key = fast.initial()
        for letter in lv.solution:
            key, _, _ = fast.step(key, letter)
    quick = time.perf_counter() - t0
    return {"corpus_steps": steps, "engine_steps_per_s": round(steps / engine),
            "fast_steps_per_s": round(steps / quick), "fast_over_engine": round(engine / quick, 1)}


def main(argv: list[str]) -> dict:
    """Run the benchmark; progress lines go to stderr."""
    from actors.puzzle.solve import SOLVED, Caps, solve

    parser = argparse.ArgumentParser(prog="python -m bench puzzle")
    parser.add_argument("--max-seconds", type=float, default=10.0)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--strategy", choices=("best", "bfs"), default="best")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = parser.parse_args(argv)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    out: dict[str, Any] = _step_rates()
    print(f"steps: {out}", file=sys.stderr)
    levels = _corpus("full_biy")[: args.limit]
    rows = []
    total_expanded = 0
    total_seconds = 0.0
    for lv in levels:
        result = solve(lv, clock=clock, strategy=args.strategy,
                       caps=Caps(max_seconds=args.max_seconds))
        total_expanded += result.expanded
        total_seconds += result.seconds
        rows.append({"id": lv.id, "status": result.status, "length": len(result.moves),
                     "shipped": len(lv.solution), "expanded": result.expanded,
                     "seconds": round(result.seconds, 2), "model": result.model})
        print(f"{lv.id:>4} {result.status:<18} {len(result.moves):>3}/{len(lv.solution):<3} "
              f"{result.expanded:>8} exp {result.seconds:6.2f} s", file=sys.stderr)
    solved = [r for r in rows if r["status"] == SOLVED]
    out["solver"] = {
        "set": "full_biy", "profile": "keke", "strategy": args.strategy, "clock": args.clock,
        "max_seconds": args.max_seconds, "levels": len(rows), "solved": len(solved),
        "solved_pct": round(100 * len(solved) / max(1, len(rows)), 1),
        "expanded_per_s": round(total_expanded / max(total_seconds, 1e-9)),
        "shorter_than_shipped": sum(r["length"] < r["shipped"] for r in solved),
        "equal_to_shipped": sum(r["length"] == r["shipped"] for r in solved),
        "longer_than_shipped": sum(r["length"] > r["shipped"] for r in solved),
        "length_ratio_mean": round(sum(r["length"] / r["shipped"] for r in solved)
                                   / max(1, len(solved)), 3),
        "unsolved": [r["id"] for r in rows if r["status"] != SOLVED],
        "per_level": rows,
    }
    return out
