"""`petridish field ...`: check the mosaic engine from outside.

- `propagate W H CELLS [--depth D] [-v]` prints the referee's closure of one rectangular
  tile (row-major `.`/`0`/`1`); `-v` first prints each deduction, from the same code
- `count W H CELLS [--cap N]` prints the tile's number of solutions, up to the cap
- `generate --layout scatter|chunks --size N --seed S --out FILE` writes manifest,
  solution and givens as JSON
- `warm` compiles the solver's kernels (cached on disk) so the first field does not pay
"""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `field` command group."""
    field = subparsers.add_parser("field", help="mosaic engine: propagate, count, generate")
    sub = field.add_subparsers(dest="field_command", required=True)

    p = sub.add_parser("propagate", help="the referee's closure of one rectangular tile")
    _tile_args(p)
    p.add_argument("--depth", type=int, default=0, help="bifurcation depth (default 0)")
    p.add_argument("-v", "--verbose", action="store_true", help="print each deduction")
    p.set_defaults(func=_propagate)

    c = sub.add_parser("count", help="number of solutions of one rectangular tile")
    _tile_args(c)
    c.add_argument("--cap", type=int, default=1000, help="stop counting here (default 1000)")
    c.set_defaults(func=_count)

    g = sub.add_parser("generate", help="write a generated field as JSON")
    g.add_argument("--layout", choices=("scatter", "chunks"), default="scatter")
    g.add_argument("--size", type=int, required=True,
                   help="canvas side G (scatter: the whole field)")
    g.add_argument("--seed", type=int, required=True)
    g.add_argument("--chunks", type=int, default=3, help="chunks: initial block side")
    g.add_argument("--chunk", type=int, default=40, help="chunks: chunk side in cells")
    g.add_argument("--out", required=True, help="output file ('-' for stdout)")
    g.set_defaults(func=_generate)

    w = sub.add_parser("warm", help="compile the solver's kernels now (cached on disk), so "
                                    "the first field does not pay for it")
    w.set_defaults(func=_warm)


def _warm(_args: argparse.Namespace) -> int:
    import time

    from actors.field.warm import warm

    began = time.perf_counter()
    warm()
    print(f"petridish: field solver ready in {time.perf_counter() - began:.1f} s")
    return 0


def _tile_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("W", type=int, help="tile width")
    p.add_argument("H", type=int, help="tile height")
    p.add_argument("CELLS", help="row-major cells: '.' unknown, '0', '1'")


def _tile(args: argparse.Namespace):
    """(tile geometry, values) of the command line's tile, or an error string."""
    import numpy as np

    from actors.field.geometry import Geometry, Manifest, ShapeError, TileShape

    W, H, cells = args.W, args.H, args.CELLS
    if not (2 <= W <= 1000 and 2 <= H <= 1000):
        return None, f"W and H must be in 2..1000, not {W}x{H}"
    if len(cells) != W * H:
        return None, f"CELLS has {len(cells)} characters, W x H is {W * H}"
    bad = set(cells) - set(".01")
    if bad:
        return None, f"CELLS may hold only '.', '0' and '1', not {sorted(bad)}"
    try:
        geo = Geometry(Manifest(max(W, H), (TileShape(0, 0, 0, W, H, ((0, 0, W, H),)),)))
    except ShapeError as exc:
        return None, f"not a playable tile: {exc}"
    vals = np.array([-1 if ch == "." else int(ch) for ch in cells], dtype=np.int8)
    return (geo, vals), None


def _propagate(args: argparse.Namespace) -> int:
    from actors.field.propagate import propagate

    built, err = _tile(args)
    if err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.depth < 0:
        print("error: --depth must be >= 0", file=sys.stderr)
        return 2
    geo, vals = built
    closure = propagate(geo, lambda cells: vals[cells], lambda t: True, [0], args.depth)
    if closure.contradiction is not None:
        print("error: these cells break the rules or admit no solution", file=sys.stderr)
        return 1
    out = list(args.CELLS)
    for d in closure.fixed.values():
        out[d.cell] = str(d.value)
        if args.verbose:
            y, x = divmod(d.cell, args.W)
            print(f"({x},{y}) = {d.value}  by {'+'.join(d.rules)}")
    print("".join(out))
    return 0


def _count(args: argparse.Namespace) -> int:
    from actors.field.solve import count

    built, err = _tile(args)
    if err or args.cap < 1:
        print(f"error: {err or '--cap must be >= 1'}", file=sys.stderr)
        return 2
    geo, vals = built
    print(count(geo.tiles[0], vals, args.cap))
    return 0


def _generate(args: argparse.Namespace) -> int:
    from actors.field.generate import generate_chunks, generate_scatter

    if not 8 <= args.size <= 1000:
        print(f"error: --size must be in 8..1000, not {args.size}", file=sys.stderr)
        return 2
    try:
        if args.layout == "scatter":
            field = generate_scatter(args.seed, args.size)
        else:
            field = generate_chunks(args.seed, args.size, args.chunks, args.chunk)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = field.to_json()
    if args.out == "-":
        print(text)
    else:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
        print(f"{args.out}: {len(field.manifest.tiles)} tiles on a {args.size} canvas",
              file=sys.stderr)
    return 0
