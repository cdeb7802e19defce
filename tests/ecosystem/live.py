"""Helpers of the live run tests: tokens, a run's pushes, the uninterrupted batch run of a
live run's decisions."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import trio

from actors.ecosystem.run import simulate
from protocol.client import Client, RequestError
from server.auth import TokenStore

POND = {"world": "A quiet pond where algae bloom and snails graze",
        "threat": "A hungry pike stalks the snails", "reward": "Keep all three alive"}
SIZE = 16  # small grids: the tests play 180 generations at the top speed
TOP = 30  # generations a second
SELF_A = {"kind": "self", "species": "A", "value": "cooperative"}  # a patch, and a change:
CHANGE = {"generation": 5, "activation": "immediate", "duration": "short",
          "transition": "abrupt", "patch": SELF_A}
WAIT = 60  # seconds any wait for a run may take before the test fails


def agent_tokens(data_dir: Path, *names: str) -> list[str]:
    """Agent tokens for `names` in the data directory a server will use."""
    store = TokenStore(data_dir)
    return [store.create("agent", name) for name in names]


def strip(decision: dict[str, Any]) -> dict[str, Any]:
    """A view's decision as the engine takes it (without its number and way)."""
    return {k: decision[k] for k in ("generation", "graphVersion", "change")}


async def uninterrupted(client: Client, to: str) -> tuple[list[str], list[str]]:
    """(the live run's digests, those of a batch run of its setup and decisions)."""
    view = (await client.request("ecosystem.view", to, {}))["view"]
    history = await client.request("ecosystem.history", to, {"generation": 0, "count": 181})
    setup = view["setup"]
    batch = simulate(view["config"], setup["seed"], view["generation"], graph=history["graph"],
                     decisions=[strip(d) for d in view["decisions"]], size=setup["size"])
    return [f["digest"] for f in history["frames"]], batch["record"]["digests"]


async def patch(client: Client, to: str, change: dict[str, str], *,
                retries: int = 20) -> dict[str, Any]:
    """Patch a playing run against the graph version it is at (again when it moved)."""
    for _ in range(retries):
        version = (await client.request("ecosystem.view", to, {}))["view"]["graph_version"]
        try:
            return await client.request("ecosystem.patch", to, {
                "patch": change, "expected_graph_version": version})
        except RequestError as err:
            if err.code != "stale_graph_version":
                raise
            await trio.sleep(0.02)
    raise AssertionError("the graph never held still")


def planes(density: dict[str, Any]) -> dict[str, bytes]:
    """The decoded bytes of each plane of a density picture (species, then "resource")."""
    out = {sid: base64.b64decode(p["data"]) for sid, p in density["species"].items()}
    out["resource"] = base64.b64decode(density["resource"]["data"])
    return out
