"""Writers for the chaos test: clients that keep writing to a counter and a field through
server kills, and the ledger of every write whose reply said ok.

Each client is a reference `Client` that reconnects; a write is sent with a request id
and sent again with that id while its outcome is unknown (a dropped connection, a dead
store writer's `unavailable`, a `timeout`), as docs/protocol.md tells clients to, so an
acknowledgement may be a retry's answer: the first attempt's result, which must then be
the one stored. Every acknowledgement is recorded as (stream, revision, what the stored
event at that revision must hold).
"""

from __future__ import annotations

from typing import Any

import attrs
import trio

from protocol.client import Client, ClientError, RequestError, new_request_id

UNKNOWN_OUTCOME = {"unavailable", "timeout", "overloaded", "actor_restarted"}
RETRY_PAUSE = 0.05  # seconds between attempts while the outcome is unknown
ATTEMPT_TIMEOUT = 15.0  # seconds one attempt may wait, reconnects included
# Cells a player plays at once: each costs at most one wrong value (how it learns the
# cell), few enough that its wrong-rate stays under the 4% that kills an agent.
PLAYED_CELLS = 6


@attrs.define
class Ack:
    """An acknowledged write: the stored event at `rev` of `stream` holds `holds`."""

    stream: str
    rev: int
    holds: dict[str, Any]


@attrs.define
class Ledger:
    """Every acknowledged write so far, and how many attempts had an unknown outcome."""

    acks: list[Ack] = attrs.Factory(list)
    unknown: int = 0

    def count(self, stream: str) -> int:
        """Acknowledged writes to `stream`."""
        return sum(1 for a in self.acks if a.stream == stream)


async def write(client: Client, ledger: Ledger, op: str, to: str, args: dict[str, Any]
                ) -> dict[str, Any]:
    """Send one write until its outcome is known; its result (RequestError if refused)."""
    request_id = new_request_id()
    while True:
        try:
            return await client.request(op, to, args, request_id=request_id,
                                        timeout=ATTEMPT_TIMEOUT)
        except RequestError as e:
            if e.code not in UNKNOWN_OUTCOME:
                raise
        except (ClientError, trio.TooSlowError):
            pass
        ledger.unknown += 1
        await trio.sleep(RETRY_PAUSE)


async def count_up(url: str, token: str, counter: str, writer: int, ledger: Ledger) -> None:
    """Add to `counter` for ever, each add with a note of its own."""
    async with Client.connect(url, token, reconnect=True) as c:
        for i in range(10**9):
            note = f"w{writer}-{i}"
            done = await write(c, ledger, "counter.add", counter, {"amount": 1, "note": note})
            ledger.acks.append(Ack(counter, done["revision"], {"type": "added", "note": note}))


def _tile_cells(tile: dict[str, Any], G: int) -> list[int]:
    """The cell ids of a tile (its rectangles are relative to its corner)."""
    return [(tile["y0"] + ry + j) * G + tile["x0"] + rx + i
            for rx, ry, rw, rh in tile["rects"] for j in range(rh) for i in range(rw)]


async def play(url: str, token: str, field: str, player: int, ledger: Ledger) -> None:
    """Join `field`, reveal the seed tile, then commit and retract its cells for ever
    (a few at a time, learning each one's value from a rejection: the agent never dies)."""
    async with Client.connect(url, token, reconnect=True) as c:
        rev = 0

        async def fresh(op: str, args: dict[str, Any]) -> dict[str, Any] | None:
            """The write at the current revision (None: stale, `rev` moved on)."""
            nonlocal rev
            try:
                done = await write(c, ledger, op, field, {**args, "expected_revision": rev})
            except RequestError as e:
                if e.code != "stale_revision":
                    raise
                rev = e.detail["revision"]
                return None
            rev = done["revision"]
            return done

        joined = await write(c, ledger, "field.join", field,
                             {"name": f"p{player}", "user": f"chaos{player}"})
        agent, rev = joined["agent"], joined["revision"]
        ledger.acks.append(Ack(field, rev, {"kind": "join", "agent": agent}))
        while (await fresh("field.reveal", {"agent": agent, "tile": joined["seed_tile"]})
               ) is None:
            pass
        ledger.acks.append(Ack(field, rev, {"kind": "reveal", "agent": agent}))
        seen = await c.request("field.observe", field, {"agent": agent})
        tile = next(t for t in seen["tiles"] if t["id"] == joined["seed_tile"])
        cells = _tile_cells(tile, seen["G"])
        value = dict.fromkeys(cells, 1)
        for k in range(10**9):
            if not cells:
                raise AssertionError(f"{agent} has no cell left to play on {field}")
            cell = cells[k % min(len(cells), PLAYED_CELLS)]
            done = await fresh("field.commit", {"agent": agent, "cells": [[cell, value[cell]]]})
            if done is None:
                continue
            if done["accepted"] or done["rejected"]:
                ledger.acks.append(Ack(field, rev, {"kind": "commit", "agent": agent}))
            if done["rejected"]:
                value[cell] ^= 1
                continue
            if not (done["accepted"] or done["ignored"][0]["reason"] == "known"):
                cells.remove(cell)  # a hole, a given or not this agent's to play
                continue
            while (took := await fresh("field.retract", {"agent": agent, "cells": [cell]})
                   ) is None:
                pass
            if took["retracted"]:
                ledger.acks.append(Ack(field, rev, {"kind": "retract", "agent": agent}))
            else:  # another agent's cell, or its tile is solved
                cells.remove(cell)
