"""Test glue for live fields: start one and wait for it, play correct moves from the secret,
play an agent to its death with wrong ones, read an actor's stored events."""

from __future__ import annotations

from typing import Any

import numpy as np
import trio

from actors.field.events import event_from_json
from actors.field.fold import State, replay
from protocol.client import Client, RequestError


async def ready(client: Client, game: str, timeout: float = 60.0) -> dict[str, Any]:
    """Wait until `field:game` has its manifest; its rules."""
    with trio.fail_after(timeout):
        while True:
            try:
                return await client.request("field.rules", f"field:{game}")
            except RequestError as e:
                if e.code not in ("generating", "unknown_actor"):
                    raise
            await trio.sleep(0.1)


async def start(client: Client, game: str, **args: Any) -> dict[str, Any]:
    """Start `field:game` with `args` and wait until it is ready."""
    started = await client.request("field.start", f"field:{game}", args)
    assert started == {"game": game, "status": "generating", "revision": 0}
    return await ready(client, game)


async def stored_replay(directory: Any, actor_id: str) -> State:
    """The fold of the actor's events as read back from the store."""
    stored = await directory.store.read(actor_id)
    return replay([event_from_json({k: v for k, v in e.data.items()
                                    if k not in ("dirty", "caller")}) for e in stored])


def tile_cells(tile: dict, G: int) -> list[int]:
    """The cell ids of an observed tile."""
    return [(tile["y0"] + ly + dy) * G + tile["x0"] + lx + dx
            for lx, ly, w, h in tile["rects"] for dy in range(h) for dx in range(w)]


async def play_truly(c: Client, game: str, agent: str, solution: np.ndarray,
                     target: dict | None = None) -> None:
    """One correct write for `agent`: commit the true values of its group's revealed tiles,
    else reveal the hidden frontier tile nearest `target` (a tile; default: the first).
    A test's honest player, driven by the field's secret."""
    to = f"field:{game}"
    obs = await c.request("field.observe", to, {"agent": agent})
    known = {k for k, _ in obs["known"]}
    tiles = {t["id"]: t for t in obs["tiles"]}
    G = obs["G"]
    mine = [tiles[t] for t in obs["territory"] if tiles[t]["status"] == "revealed"]
    cells = sorted({x for t in mine for x in tile_cells(t, G)} - known)
    if cells:
        await c.request("field.commit", to, {"agent": agent, "expected_revision": obs["revision"],
                                             "cells": [[x, int(solution[x])] for x in cells]})
        return
    hidden = [tiles[t] for t in obs["frontier"] if tiles[t]["status"] == "hidden"]
    tile = hidden[0] if target is None else min(
        hidden, key=lambda t: abs(t["x0"] - target["x0"]) + abs(t["y0"] - target["y0"]))
    await c.request("field.reveal", to, {"agent": agent, "tile": tile["id"],
                                         "expected_revision": obs["revision"]})


async def die(write: Any, observe: Any, solution: Any, seed_tile: int, reveal: Any) -> None:
    """Reveal the seed tile, then commit every unknown cell of it wrong until dead (each
    write and read a callable, so any transport can die)."""
    obs = await observe()
    await reveal(obs["revision"])
    for _ in range(40):
        obs = await observe()
        tile = next(t for t in obs["tiles"] if t["id"] == seed_tile)
        known = {c for c, _ in obs["known"]}
        G = obs["G"]
        cells = sorted({(tile["y0"] + ly + dy) * G + tile["x0"] + lx + dx
                        for lx, ly, w, h in tile["rects"] for dy in range(h)
                        for dx in range(w)} - known)
        result = await write([[c, 1 - int(solution[c])] for c in cells], obs["revision"])
        if result["health"]["state"] == "dead":
            return
    raise AssertionError("never died")


async def die_on_ws(c: Client, game: str, solution: np.ndarray, name: str) -> str:
    """Join `field:game` as `c`'s caller and commit wrong cells until dead; the agent id."""
    to = f"field:{game}"
    j = await c.request("field.join", to, {"name": name})
    me = j["agent"]
    await die(lambda cells, rev: c.request("field.commit", to, {
                  "agent": me, "cells": cells, "expected_revision": rev}),
              lambda: c.request("field.observe", to, {"agent": me}), solution, j["seed_tile"],
              lambda rev: c.request("field.reveal", to, {
                  "agent": me, "tile": j["seed_tile"], "expected_revision": rev}))
    return me
