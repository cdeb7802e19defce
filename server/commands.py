"""Server subcommands: `serve`, `token create|revoke|list`, `protocol-schema`."""

from __future__ import annotations

import argparse
import gc
import math
import os
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from protocol.roles import TOKEN_ROLES

if TYPE_CHECKING:
    from server.app import Running


def register(sub: argparse._SubParsersAction) -> None:
    """Add the server's subcommands to the `petridish` parser."""
    serve = sub.add_parser("serve", help="run the server")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8000, help="port (0 picks a free one)")
    serve.add_argument("--data", type=Path, default=Path("data"),
                       help="data directory: tokens, the error log and (without --store) the "
                       "event store (default ./data)")
    serve.add_argument("--open", action="store_true",
                       help="anonymous connections act as agents (local play)")
    serve.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                       help="also let browser pages from ORIGIN (e.g. https://example.org) "
                            "use /ws and /mcp; repeatable; '*' allows any (default: only "
                            "the server's own pages and clients that send no Origin)")
    serve.add_argument("--trusted-proxy", action="append", default=[], metavar="ADDRESS",
                       type=_network,
                       help="a reverse proxy (address or network) whose X-Forwarded-For "
                            "names the client; repeatable")
    serve.add_argument("--budget", action="append", default=[], metavar="NAME=VALUE",
                       type=_budget, help="change one budget (docs/operations.md lists "
                       "them), e.g. connections_per_address=256; repeatable")
    from actors.ecosystem.model_options import add_model_options
    add_model_options(serve)  # --model-url/--model/--model-key-file/--model-timeout
    cluster = serve.add_argument_group(
        "cluster", "several processes sharing the worlds through one PostgreSQL "
        "(docs/scale-out.md)")
    cluster.add_argument("--store", default=os.environ.get("PETRIDISH_STORE") or None,
                         help="event store: a PostgreSQL URI (postgresql://...) makes this "
                         "process a node of a cluster; default $PETRIDISH_STORE, else SQLite "
                         "in the data directory")
    cluster.add_argument("--node", type=_node_name,
                         help="this process's name in the cluster: letters, digits, '.', "
                         "'_', '-' (default: host name and process id)")
    cluster.add_argument("--peer-host", default=None,
                         help="address the other processes connect to (default: --host)")
    cluster.add_argument("--peer-port", type=_port, default=0,
                         help="port for the other processes (default 0: a free one)")
    cluster.add_argument("--peer-addr", type=_host_port, default=None,
                         help="HOST:PORT the others should use, if not peer-host:peer-port")
    cluster.add_argument("--lease-ttl", type=_lease_ttl, default=3.0,
                         help="seconds a world's lease lasts without renewal (default 3; "
                         f"{LEASE_TTL[0]:g} to {LEASE_TTL[1]:g})")
    serve.set_defaults(func=_serve)

    token = sub.add_parser("token", help="issue, revoke and list access tokens")
    token_sub = token.add_subparsers(dest="token_command", required=True)
    create = token_sub.add_parser("create", help="issue a token and print it once")
    create.add_argument("--role", default="agent", choices=TOKEN_ROLES)
    create.add_argument("--name", required=True, help="who the token is for")
    create.add_argument("--data", type=Path, default=Path("data"))
    create.set_defaults(func=_token_create)
    revoke = token_sub.add_parser("revoke", help="revoke the token issued under NAME")
    revoke.add_argument("name")
    revoke.add_argument("--data", type=Path, default=Path("data"))
    revoke.set_defaults(func=_token_revoke)
    listing = token_sub.add_parser("list", help="list issued tokens (never the tokens)")
    listing.add_argument("--data", type=Path, default=Path("data"))
    listing.set_defaults(func=_token_list)

    schema = sub.add_parser("protocol-schema", help="print the JSON Schema of every op")
    schema.set_defaults(func=_protocol_schema)


def _network(text: str) -> str:
    """An IP address or network (e.g. 10.0.0.0/8), as given."""
    import ipaddress

    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an IP address or network (e.g. 127.0.0.1, 10.0.0.0/8)") from None
    return text


def _budget(text: str) -> tuple[str, float]:
    """`NAME=VALUE` of a budget (argparse reports a ValueError as a usage error)."""
    from server.budgets import Budgets

    name, _, value = text.partition("=")
    fields = Budgets().to_json()
    if name not in fields:
        raise argparse.ArgumentTypeError(f"no budget {name!r}; budgets: {', '.join(fields)}")
    try:
        number = type(fields[name])(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name} takes a number, not {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"{name} cannot be negative")
    return name, number


NODE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")
LEASE_TTL = (0.5, 300.0)  # seconds: renewals run every 0.4 x TTL at the shortest


def _lease_ttl(text: str) -> float:
    """--lease-ttl: a number of seconds within LEASE_TTL."""
    try:
        ttl = float(text)
    except ValueError:
        ttl = math.nan
    if not LEASE_TTL[0] <= ttl <= LEASE_TTL[1]:  # (NaN too)
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from "
                                         f"{LEASE_TTL[0]:g} to {LEASE_TTL[1]:g}")
    return ttl


def _node_name(text: str) -> str:
    """--node: a name that can also name a file (its error log)."""
    if not NODE_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a node name: 1 to 64 letters, "
                                         "digits, '.', '_' or '-', not starting with '.'")
    return text


def _port(text: str) -> int:
    """A TCP port number, 0 to 65535."""
    if not (text.isascii() and text.isdigit() and int(text) <= 65535):
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0 to 65535)")
    return int(text)


def _host_port(text: str) -> str:
    """HOST:PORT (an IPv6 host in brackets), the port 1 to 65535."""
    host, _, port = text.rpartition(":")
    if not host.strip("[]") or not (port.isascii() and port.isdigit()
                                     and 0 < int(port) <= 65535):
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT (a port 1 to 65535)")
    return text


EXIT_STORE_FAILED = 3  # the store's writer could not be kept running: restart the server


def _serve(args: argparse.Namespace) -> int:
    import signal

    import trio

    from actors.store import StoreUnavailable
    from server.app import CannotListen, first_error, serve
    from server.budgets import Budgets
    from server.cluster import default_node
    from server.config import ServerConfig, is_postgres
    from server.data_lock import DataDirInUse
    from server.storage.cluster import NodeNameInUse
    from server.storage.pg_durability import NotDurable
    from server.trace import configure_logging

    if args.store is not None and not is_postgres(args.store):
        print("petridish: --store takes a PostgreSQL URI (postgresql://...); without it the "
              "store is SQLite in the data directory", file=sys.stderr)
        return 2
    from actors.ecosystem.endpoint import EndpointError, endpoint_from_args
    try:
        model = endpoint_from_args(args, os.environ)  # the key: file or environment
    except EndpointError as exc:
        print(f"petridish: {exc}", file=sys.stderr)
        return 2
    os.umask(0o077)  # every file the server makes is its user's only
    node = (args.node or default_node()) if args.store is not None else None
    error_log = configure_logging(args.data, node=node)
    config = ServerConfig(host=args.host, port=args.port, data_dir=args.data,
                          open_mode=args.open, model=model, store=args.store, node=node,
                          peer_host=args.peer_host or args.host, peer_port=args.peer_port,
                          peer_addr=args.peer_addr, lease_ttl=args.lease_ttl,
                          allowed_origins=args.allow_origin,
                          trusted_proxies=args.trusted_proxy,
                          budgets=Budgets(**dict(args.budget)))
    fatal: list[str] = []

    async def main() -> None:
        # Signals are caught from before the start: a SIGTERM that arrives as soon as the
        # address is printed still gets the graceful shutdown.
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:
                running: Running = await nursery.start(serve, config)
                warm_worlds()
                tune_gc()
                print(f"petridish: listening on {running.url}", flush=True)
                print(f"petridish: error log: {error_log}", flush=True)
                if running.node is not None:
                    print(f"petridish: node {running.node} (peers at "
                          f"{running.peer_addr})", flush=True)
                if running.owner_token is not None:
                    print(f"petridish: owner token: {running.owner_token}", flush=True)
                async with trio.open_nursery() as waiting:
                    waiting.start_soon(_stop_on_signal, signals, running)
                    await running.stopped.wait()
                    waiting.cancel_scope.cancel()
                if running.state.fatal is not None:
                    fatal.append(running.state.fatal)

    in_use: list[str] = []
    try:
        trio.run(main)
    # Another server runs on --data or as --node, PostgreSQL runs without fsync, or the
    # address is busy.
    except* (DataDirInUse, NotDurable, NodeNameInUse, CannotListen) as refused:
        in_use.append(str(first_error(refused)))
    except* StoreUnavailable as refused:  # PostgreSQL unreachable, or its schema refused
        in_use.append(f"the event store cannot be opened: {first_error(refused).why}")
    if in_use:
        print(f"petridish: {in_use[0]}", file=sys.stderr, flush=True)
        return 2
    if fatal:
        print(f"petridish: exiting: {fatal[0]}", file=sys.stderr, flush=True)
        return EXIT_STORE_FAILED
    return 0


async def _stop_on_signal(signals: AsyncIterator[int], running: Running) -> None:
    async for _ in signals:
        print("petridish: shutting down", flush=True)
        running.stop()
        return


def warm_worlds() -> None:
    """Start each world's `warm` (World.warm: e.g. the field's solver compile) in a daemon
    thread, so the first request of a fresh install does not pay for it."""
    import threading

    from server.worlds import worlds

    for world in worlds():
        if world.warm is not None:
            threading.Thread(target=world.warm, name=f"warm-{world.kind}", daemon=True).start()


def tune_gc() -> None:
    """Keep the cyclic garbage collector's full passes rare and short on a live server.

    Everything alive once the server listens (modules, classes, the loaded worlds) is
    frozen out of collection, the young generation collects every 20,000 net
    allocations rather than every 700, and a full pass waits for 100 middle ones
    rather than 10. Measured under `bench field_live` (shared
    machine): full passes over ~250,000 objects ran 18 times in a run at ~170 ms each,
    the tail of every latency figure; tuned, none or one of ~40 ms.
    """
    gc.freeze()
    gc.set_threshold(20_000, 20, 100)


def _token_create(args: argparse.Namespace) -> int:
    from server.auth import TokenError, TokenStore

    try:
        token = TokenStore(args.data).create(args.role, args.name)
    except TokenError as exc:
        print(f"petridish: {exc}", file=sys.stderr)
        return 2
    print(token)
    return 0


def _token_revoke(args: argparse.Namespace) -> int:
    from server.auth import TokenStore

    if TokenStore(args.data).revoke(args.name):
        print(f"petridish: revoked {args.name}")
        return 0
    print(f"petridish: no token named {args.name!r}", file=sys.stderr)
    return 1


def _token_list(args: argparse.Namespace) -> int:
    from server.auth import TokenStore

    for info in TokenStore(args.data).list():
        print(f"{info.name}\t{info.role}\t{info.created}")
    return 0


def _protocol_schema(_: argparse.Namespace) -> int:
    import json

    from protocol.schema import registry_schema
    from server.worlds import registry

    print(json.dumps(registry_schema(registry()), indent=2, sort_keys=True))
    return 0
