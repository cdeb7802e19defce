"""Lazy public names for world packages (PEP 562).

A world package lists the names `server/` may import with the module that holds each;
a module loads on the first use of one of its names. Every `petridish` command imports
each world package (through its `cli.py`), and most never need the package's engine
(numpy, numba, httpx, SQLite), so `petridish --help` stays fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(package: str, public: Mapping[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, whose `public` maps name -> submodule."""
    namespace = sys.modules[package].__dict__

    def getattr_(name: str) -> Any:
        module = public.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        namespace[name] = value  # found directly from now on
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(public))

    return getattr_, dir_
