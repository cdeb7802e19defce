"""The `petridish` command: one argparse tree, each world adding its own subcommands.

Server commands (`serve`, `token`, `protocol-schema`) live in `server/commands.py`;
each world package of `server/worlds.py` may add its own in `actors/<kind>/cli.py`
(`register(subparsers)`). Handlers import their heavy modules lazily so `petridish
--help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys

from server.worlds import command_modules


def build_parser() -> argparse.ArgumentParser:
    """Return the full parser."""
    parser = argparse.ArgumentParser(prog="petridish", description="Petri Dish Games server")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ["server.commands", *command_modules()]:
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    args = build_parser().parse_args(argv)
    code = args.func(args)
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
