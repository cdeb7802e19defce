"""Run one benchmark: `python -m bench NAME [ARGS...]`.

Each `bench/NAME.py` defines `main(argv: list[str]) -> dict`; the dict is printed
as one JSON object on stdout (progress goes to stderr).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys

import bench


def main() -> int:
    """Dispatch to the named benchmark module."""
    names = sorted(m.name for m in pkgutil.iter_modules(bench.__path__) if not m.name.startswith("_"))
    if len(sys.argv) < 2 or sys.argv[1] not in names:
        print(f"usage: python -m bench NAME   (NAME: {', '.join(names)})", file=sys.stderr)
        return 2
    module = importlib.import_module(f"bench.{sys.argv[1]}")
    print(json.dumps(module.main(sys.argv[2:]), indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
