"""The `petridish` command: one argparse tree, each world adding its own subcommands.

Server commands (`serve`, `token`, `protocol-schema`) live in `server/commands.py`;
each world kind exposes `register(subparsers)` in `actors/<kind>/cli.py`. Handlers
import their heavy modules lazily so `petridish --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Modules that contribute subcommands through `register(subparsers)`.
COMMAND_MODULES = (
    "server.commands",
    "actors.field.cli",
    "actors.puzzle.cli",
    "actors.ecosystem.cli",
    "actors.lab.cli",
)


def build_parser() -> argparse.ArgumentParser:
    """Return the full parser; a module that is not built yet is skipped."""
    parser = argparse.ArgumentParser(prog="petridish", description="Petri Dish Games server")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            # Only the command module itself or its world package may be absent; a missing
            # import inside an existing one is a bug and is raised.
            if exc.name is None or not (name == exc.name or name.startswith(exc.name + ".")):
                raise
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    args = build_parser().parse_args(argv)
    code = args.func(args)
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
