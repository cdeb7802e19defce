"""`petridish puzzle ...`: solve, replay, share and unshare levels from the command line.

FILE may be our level JSON, our pack JSON or a Keke competition level file; `--level ID`
picks a level (default: the first) and `--profile P` overrides its rule profile. Exit codes:
0 done (solved / won), 1 not solved or not won, 2 bad input (diagnostics on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    """Add the `puzzle` command group to the `petridish` parser."""
    puzzle = subparsers.add_parser("puzzle", help="the rule-rewriting block puzzle")
    sub = puzzle.add_subparsers(dest="puzzle_command", required=True)

    solve = sub.add_parser("solve", help="search for a winning move list")
    _level_args(solve)
    solve.add_argument("--max-seconds", type=float, default=10.0, help="time cap (default 10)")
    solve.add_argument("--max-nodes", type=int, default=5_000_000, help="expansion cap")
    solve.add_argument("--strategy", choices=("best", "bfs"), default="best",
                       help="best-first (default) or breadth-first (shortest)")
    solve.add_argument("-v", "--verbose", action="store_true", help="trace the search on stderr")
    solve.add_argument("--json", action="store_true", help="print one JSON object")
    solve.set_defaults(func=_solve)

    replay = sub.add_parser("replay", help="play a move list and report the outcome")
    _level_args(replay)
    replay.add_argument("--moves", required=True, help="moves over u d l r s")
    replay.add_argument("--json", action="store_true", help="print one JSON object")
    replay.set_defaults(func=_replay)

    share = sub.add_parser("share", help="print a data-only share link (pd1.)")
    share.add_argument("file", help="level, pack or Keke JSON file")
    share.set_defaults(func=_share)

    unshare = sub.add_parser("unshare", help="validate a share link and print its pack JSON")
    unshare.add_argument("link", help="a pd1. link")
    unshare.set_defaults(func=_unshare)


def _level_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="level, pack or Keke JSON file")
    parser.add_argument("--level", help="level id inside a pack or Keke file")
    parser.add_argument("--profile", help="rule profile override (classic, keke)")


class InputError(Exception):
    """Bad command-line input; the message (and diagnostics) go to stderr."""


def load_pack(path: str) -> Any:
    """Read FILE as a pack: our pack JSON, a Keke file (profile keke) or one level."""
    from .diagnostics import LevelError
    from .keke import import_keke_levels, is_keke_file
    from .level import parse_level
    from .pack import Pack, is_pack, pack_of, parse_pack

    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{path}: cannot read JSON: {exc}") from None
    try:
        if is_keke_file(data):
            levels = tuple(import_keke_levels(data))
            return Pack(name=Path(path).stem, version="1", profile="keke", mechanics=(),
                        levels=levels)
        if is_pack(data):
            return parse_pack(data)
        return pack_of(parse_level(data))
    except LevelError as exc:
        raise InputError(f"{path}: invalid:\n" + "\n".join(f"  {d}" for d in exc.diagnostics)
                         ) from None


def _pick_level(args: argparse.Namespace) -> Any:
    import attrs

    from .profiles import PROFILES

    pack = load_pack(args.file)
    try:
        level = pack.level(args.level) if args.level is not None else pack.levels[0]
    except KeyError as exc:
        raise InputError(str(exc.args[0])) from None
    if args.profile is not None:
        if args.profile not in PROFILES:
            raise InputError(f"unknown profile {args.profile!r} (supported: "
                             f"{', '.join(sorted(PROFILES))})")
        level = attrs.evolve(level, profile=args.profile)
    return level


def _guard(handler: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except InputError as exc:
            print(f"petridish puzzle: {exc}", file=sys.stderr)
            return 2
    run.__doc__ = handler.__doc__
    return run


@_guard
def _solve(args: argparse.Namespace) -> int:
    """Run the solver and print its result."""
    import time

    from .solve import SOLVED, Caps, solve

    level = _pick_level(args)
    trace = (lambda line: print(line, file=sys.stderr)) if args.verbose else None
    result = solve(level, clock=time.monotonic, strategy=args.strategy, trace=trace,
                   caps=Caps(max_seconds=args.max_seconds, max_expanded=args.max_nodes))
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print(f"{result.status}: {result.moves or '-'} ({len(result.moves)} moves, "
              f"{result.expanded} expanded, {result.seconds:.2f} s, {result.model} model)"
              + (f"; {result.reason}" if result.reason else ""))
    return 0 if result.status == SOLVED else 1


@_guard
def _replay(args: argparse.Namespace) -> int:
    """Play --moves in the public engine and print the outcome."""
    from .game import replay

    level = _pick_level(args)
    if any(c not in "udlrsUDLRS" for c in args.moves):
        raise InputError("--moves must be a string over u d l r s")
    result = replay(level, args.moves)
    if args.json:
        print(json.dumps(result))
    else:
        print(("won at step " + str(result["won_at"])) if result["won"] else
              ("lost" if result["lost"] else "not won") + f" after {result['steps']} steps")
    return 0 if result["won"] else 1


@_guard
def _share(args: argparse.Namespace) -> int:
    """Print the share link of FILE."""
    from .share import ShareError, make_link

    try:
        print(make_link(load_pack(args.file)))
    except ShareError as exc:
        raise InputError(f"{exc.code}: {exc}") from None
    return 0


@_guard
def _unshare(args: argparse.Namespace) -> int:
    """Open a share link and print its (revalidated) pack JSON."""
    from .share import ShareError, open_link

    try:
        pack = open_link(args.link)
    except ShareError as exc:
        raise InputError(f"{exc.code}: {exc}") from None
    print(json.dumps(pack.to_json(), indent=2, sort_keys=True))
    return 0
