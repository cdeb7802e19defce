"""The budgets a benchmark's server runs under: the per-client ones lifted.

A load generator is hundreds of clients on one loopback address (and, for anonymous
callers, one account): the per-address and per-account budgets of server/budgets.py
would refuse its 65th connection, its 21st world, its 31st join, its 65th world followed, its
requests in flight past 64 (128 for an agent), its 21st lab cross and 1,801st public pair
or vote, its HTTP requests past 20 a second and its CPU past a tenth of a core, which is their
point in production and not what a benchmark of the hot path measures. So is the process's bound on live worlds: a bench
whose 1,000 connections each add to a world of their own would otherwise unload and load
them again by turns (`max_live_worlds`, 500). The server-wide cap on connections and
every per-connection bound stay.
"""

from __future__ import annotations

from server.budgets import Budgets

LIFTED: dict[str, float] = {
    "connections_per_address": 1_000_000,
    "max_ungreeted": 1_000_000,
    "ungreeted_per_address": 1_000_000,
    "hello_failures": 1_000_000,
    "http_rate": 1e9,  # a bench's HTTP requests (pages, /mcp) come from one address too
    "http_burst": 1_000_000_000,
    "cpu_rate": 1e9,
    "cpu_rate_agent": 1e9,
    "cpu_burst": 1e9,
    "cpu_burst_anonymous": 1e9,
    "creates_per_hour": 1_000_000_000,
    "live_worlds": 1_000_000_000,
    "joins_per_hour": 1_000_000_000,
    "worlds_followed": 1_000_000_000,
    "inflight_per_account": 1_000_000_000,
    "inflight_anonymous": 1_000_000_000,
    "max_live_worlds": 1_000_000_000,
    "crosses_per_hour": 1_000_000_000,
    "deals_per_hour": 1_000_000_000,
    "votes_per_hour": 1_000_000_000,
    "stored_per_hour": 10**15,  # bytes: a bench writes for as long as it runs
    "stored_anonymous": 10**15,
}


def lifted_budgets() -> Budgets:
    """`Budgets` with the per-client limits lifted (for a `ServerConfig`)."""
    return Budgets(**LIFTED)


def budget_args() -> list[str]:
    """The `--budget NAME=VALUE` options of `petridish serve` that lift them."""
    return [part for name, value in LIFTED.items() for part in ("--budget", f"{name}={value}")]


def serve_code(*args: str, prefix: str = "") -> str:
    """Python code that runs `petridish serve --port 0 --data DATA ARGS` with the lifted
    budgets (DATA is the code's first argument); `prefix` runs first."""
    rest = [*args, *budget_args()]
    return (f"import sys; {prefix}from server.cli import main; "
            f"sys.exit(main(['serve', '--port', '0', '--data', sys.argv[1], *{rest!r}]))")
