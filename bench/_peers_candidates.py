"""Two candidate cuts of docs/performance.md, measured (`python -m bench._peers_profile`).

`stacks`: the websocket framing. Bare echo servers on Starlette + Hypercorn (ours, `bench
ws`'s), on `websockets`' own trio server, and on Node's `ws`, driven alike in alternating
turns: round trips per second and server CPU per round trip.

`codecs`: JSON. Microseconds per call of each JSON step of an add (the request's parse,
its args' validation, the reply's encoding) beside `orjson` and `msgspec` doing the same
decode and encode, where they are installed (they are not dependencies:
`pip install orjson msgspec` to compare).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import trio

from bench import _peers_load as load
from bench import _peers_servers as servers
from bench._peers_sides import Echo, add_request
from bench.peers import KIND


def _log(message: str) -> None:
    print(f"[profile] {message}", file=sys.stderr, flush=True)


def serve_websockets_echo() -> None:
    """A bare echo on `websockets`' trio server (its C-accelerated framing), until killed."""
    from websockets.trio.server import ServerConnection, serve

    from server.commands import tune_gc

    async def echo(ws: ServerConnection) -> None:
        async for message in ws:
            await ws.send(message)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            server = await nursery.start(partial(serve, echo, 0, host="127.0.0.1",
                                                 compression=None, ping_interval=20.0,
                                                 ping_timeout=None))
            tune_gc()
            port = server.listeners[0].socket.getsockname()[1]
            print(f"websockets echo: listening on http://127.0.0.1:{port}", flush=True)

    trio.run(main)


def stacks(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Echo round trips on the three stacks, alternating turns."""
    with tempfile.TemporaryDirectory(prefix="bench-profile-", dir=servers.REPO) as tmp:
        procs = {
            "hypercorn": servers.python_server("hypercorn", "import bench.ws as b; b.serve_echo()",
                                               Path(tmp)),
            "websockets": servers.python_server(
                "websockets", "import bench._peers_candidates as c; c.serve_websockets_echo()",
                Path(tmp)),
            "node_ws": servers.node_server("node_ws", Path(tmp), "echo"),
        }
        try:
            for proc in procs.values():
                proc.ready()
            sample = add_request(KIND, f"{KIND}:c0")
            paths = {"hypercorn": "/ws", "websockets": "/", "node_ws": "/"}
            sides = [Echo(name, f"ws://{p.host}:{p.port}{paths[name]}", sample)
                     for name, p in procs.items()]
            meters = {name: load.Meter(p.cpu_seconds) for name, p in procs.items()}
            trio.run(load.round_trips, sides, meters, args.connections, args.seconds, 4, _log)
        finally:
            for proc in procs.values():
                proc.close()
    figures = {name: meter.figures() for name, meter in meters.items()}
    keys = ("round_trips_per_s", "p50_ms", "server_cpu_us_per_round_trip")
    return {"connections": args.connections, "seconds": args.seconds, **figures,
            "websockets/hypercorn": {k: round(figures["websockets"][k]
                                              / figures["hypercorn"][k], 3) for k in keys}}


def codecs(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Microseconds per call of the JSON work of one add, ours and the alternatives'."""
    import importlib
    import timeit

    from protocol.convert import structure, unstructure
    from protocol.envelope import encode_result, parse_frame
    from protocol.jsontext import compact_encoder, strict_decoder
    from server.worlds import registry as default_registry

    spec = default_registry().get(f"{KIND}.add")
    request = add_request(KIND, f"{KIND}:c0").decode()
    reply = {"id": 1, "ok": True, "result": {"total": 5, "adds": 5, "revision": 6}}
    result = structure(reply["result"], spec.result)
    decode, encode = strict_decoder(lambda c: None), compact_encoder(ensure_ascii=False)
    calls: dict[str, Any] = {
        "parse_frame (decode and envelope checks)": lambda: parse_frame(request),
        "strict_decoder (the decode alone)": lambda: decode(request),
        "structure the add's args (cattrs)": lambda: structure({"amount": 1, "note": ""},
                                                               spec.args),
        "unstructure the add's result": lambda: unstructure(result),
        "encode_result (encode and envelope)": lambda: encode_result(1, reply["result"]),
        "compact_encoder (the encode alone)": lambda: encode(reply),
    }
    for name, loads, dumps in (("orjson", "loads", "dumps"), ("msgspec.json", "decode", "encode")):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        calls[f"{name}.{loads}"] = partial(getattr(module, loads), request)
        calls[f"{name}.{dumps} + decode"] = lambda m=module, d=dumps: getattr(m, d)(reply).decode()
    n = 100_000
    return {"us_per_call (best of 5)": {
        name: round(min(timeit.repeat(call, number=n, repeat=5)) / n * 1e6, 3)
        for name, call in calls.items()}}


