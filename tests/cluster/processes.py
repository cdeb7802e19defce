"""Real `petridish serve` processes forming a cluster on one PostgreSQL, for the tests that
kill or pause a process, and the load they drive: counters and fields written through
random processes, every acknowledged write logged."""

from __future__ import annotations

import os
import random
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import numpy as np
import trio

from protocol.client import Client, ClientError, RequestError
from server.hello import new_key
from server.storage.pg_local import LocalPostgres
from tests.server.server_process import ServerProcess

REQUEST_TIMEOUT = 5.0  # a write not answered by then is sent again (same request id)
WRITE_DEADLINE = 30.0  # a write still not acknowledged after this fails the test


class Processes:
    """`count` server processes named n0, n1, ... sharing the database `dsn`."""

    def __init__(self, dsn: str, base: Path, count: int = 3) -> None:
        self.dsn, self.base = dsn, base
        self.procs = [self._proc(i) for i in range(count)]
        self.stopped: set[int] = set()  # SIGSTOPped

    def _proc(self, i: int) -> ServerProcess:
        data = self.base / f"n{i}"
        data.mkdir(parents=True, exist_ok=True)
        # One caller (CALLER_KEY) makes every world of these tests: its live-world budget
        # is lifted, the rest stay as served.
        return ServerProcess(data, "--open", "--store", self.dsn, "--node", f"n{i}",
                             "--budget", "live_worlds=1000", "--budget",
                             "creates_per_hour=100000", start_timeout=60)

    def ensure(self) -> None:
        """Start every process that is not running (in parallel: each takes seconds)."""
        dead = [p for p in self.procs if p.proc is None or p.proc.poll() is not None]
        errors: list[BaseException] = []

        def start(p: ServerProcess) -> None:
            try:
                p.start()
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                errors.append(exc)

        threads = [threading.Thread(target=start, args=(p,)) for p in dead]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    def alive(self) -> list[int]:
        """Indexes of the processes running and not paused."""
        return [i for i, p in enumerate(self.procs)
                if p.proc is not None and p.proc.poll() is None and i not in self.stopped]

    def url(self, i: int) -> str:
        """The websocket endpoint of process `i`."""
        return self.procs[i].ws_url

    def kill(self, i: int) -> None:
        """kill -9."""
        self.procs[i].kill()

    def pause(self, i: int) -> None:
        """SIGSTOP."""
        assert self.procs[i].proc is not None
        os.kill(self.procs[i].proc.pid, signal.SIGSTOP)
        self.stopped.add(i)

    def resume(self, i: int) -> None:
        """SIGCONT."""
        assert self.procs[i].proc is not None
        os.kill(self.procs[i].proc.pid, signal.SIGCONT)
        self.stopped.discard(i)

    async def metrics(self, i: int) -> dict[str, float]:
        """Process `i`'s /metrics samples."""
        async with httpx.AsyncClient(base_url=self.procs[i].http_url, timeout=10) as http:
            text = (await http.get("/metrics")).text
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                samples[name] = float(value)
        return samples

    def died(self) -> list[str]:
        """The last lines of every process that exited by itself (a crash)."""
        return [f"n{i} exited {p.proc.returncode}:\n" + "".join(p.output[-40:])
                for i, p in enumerate(self.procs) if p.proc is not None
                and p.proc.poll() is not None and p.proc.returncode not in (0, -9)]

    def close(self) -> None:
        """Kill every process (resumed first, so it can die)."""
        for i in list(self.stopped):
            self.resume(i)
        for crash in self.died():
            print(crash)
        for p in self.procs:
            p.kill()


@contextmanager
def schema_dsn(server: LocalPostgres, name: str) -> Iterator[str]:
    """A DSN whose search_path is a fresh schema, dropped at the end."""
    import psycopg

    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    try:
        yield server.dsn(options=f"-c search_path={name}")
    finally:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {name} CASCADE")


# ---- the load ---------------------------------------------------------------------------

@attrs.define
class Ack:
    """One acknowledged write: the world, the revision its reply named, what identifies it
    in the stored event (a counter's note; a field event's kind and agent)."""

    world: str
    rev: int
    mark: Any
    at: float  # trio.current_time() when the reply came


@attrs.define
class Ledger:
    """Every acknowledged write, and what the writers saw go wrong."""

    acks: list[Ack] = attrs.Factory(list)
    retries: int = 0  # writes sent again with their request id

    def last_ack(self, world: str) -> float | None:
        """When a write to `world` was last acknowledged."""
        times = [a.at for a in self.acks if a.world == world]
        return max(times) if times else None


@attrs.define
class Field:
    """A field of the load: its id, its secret solution, the agents joined to it."""

    world: str
    solution: np.ndarray
    agents: list[str]


async def write_until_acked(procs: Processes, rng: random.Random, ledger: Ledger, op: str,
                            world: str, args: dict[str, Any], request_id: str,
                            clients: dict[int, Client]) -> Any:
    """Send one write through a random live process until it is answered, with the same
    request id every time (so it is applied once however often it is sent)."""
    with trio.fail_after(WRITE_DEADLINE):
        return await _until_acked(procs, rng, ledger, op, world, args, request_id, clients)


async def _until_acked(procs: Processes, rng: random.Random, ledger: Ledger, op: str,
                       world: str, args: dict[str, Any], request_id: str,
                       clients: dict[int, Client]) -> Any:
    while True:
        i = rng.choice(procs.alive())
        client = clients.get(i)
        try:
            if client is None:
                raise ClientError("no client yet")
            return await client.request(op, world, args, request_id=request_id,
                                        timeout=REQUEST_TIMEOUT)
        except RequestError as error:
            if error.code not in ("unavailable", "timeout", "overloaded"):
                raise
        except (ClientError, trio.TooSlowError):
            pass
        ledger.retries += 1
        await trio.sleep(0.05)


# The one anonymous caller every client of these tests is (its key, on any process): the
# fields' agents are bound to the caller that joined them, and the writers play them
# through every process.
CALLER_KEY = new_key()


class Load:
    """Writers adding to counters and playing fields through random processes until
    `stop` is set; a writer keeps a client per process and forgets one that failed."""

    def __init__(self, procs: Processes, counters: list[str], fields: list[Field],
                 ledger: Ledger, seed: int) -> None:
        self.procs, self.counters, self.fields, self.ledger = procs, counters, fields, ledger
        self.seed = seed
        self.stop = trio.Event()

    async def writer(self, index: int) -> None:
        rng = random.Random(self.seed * 1000 + index)
        clients: dict[int, Client] = {}
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._keep_clients, clients)
            seq = 0
            while not self.stop.is_set():
                seq += 1
                key = f"w{self.seed}-{index}-{seq}"
                if self.fields and rng.random() < 0.2:
                    field = rng.choice(self.fields)
                    await self._play(field, rng, key, clients)
                else:
                    world = rng.choice(self.counters)
                    reply = await write_until_acked(
                        self.procs, rng, self.ledger, "counter.add", world,
                        {"amount": 1, "note": key}, key, clients)
                    self.ledger.acks.append(Ack(world, reply["revision"], key,
                                                trio.current_time()))
            nursery.cancel_scope.cancel()

    async def _keep_clients(self, clients: dict[int, Client]) -> None:
        """One client per live process, opened again after it fails."""
        async with trio.open_nursery() as nursery:
            while True:
                for i in self.procs.alive():
                    if i not in clients:
                        nursery.start_soon(self._client, i, clients)
                await trio.sleep(0.2)

    async def _client(self, i: int, clients: dict[int, Client]) -> None:
        try:
            async with Client.connect(self.procs.url(i), reconnect=False,
                                      key=CALLER_KEY) as client:
                clients[i] = client
                await trio.sleep_forever()
        except (ClientError, OSError, trio.TooSlowError):
            pass
        finally:
            clients.pop(i, None)

    async def _play(self, field: Field, rng: random.Random, key: str,
                    clients: dict[int, Client]) -> None:
        """One honest write to a field (the secret gives the true values)."""
        agent = rng.choice(field.agents)
        obs = await write_until_acked(self.procs, rng, self.ledger, "field.observe",
                                      field.world, {"agent": agent}, f"{key}-o", clients)
        if obs["ended"] or obs["totals"]["solved"] == obs["tiles_total"]:
            return
        op, args = _honest_move(obs, agent, field.solution)
        if op is None:
            return
        try:
            reply = await write_until_acked(self.procs, rng, self.ledger, op, field.world,
                                            args, key, clients)
        except RequestError as error:  # lost a race to another writer: nothing applied
            if error.code in ("stale_revision", "not_hidden", "not_on_frontier"):
                return
            raise
        kind = "reveal" if op == "field.reveal" else "commit"
        self.ledger.acks.append(Ack(field.world, reply["revision"], (kind, agent),
                                    trio.current_time()))


def _honest_move(obs: dict[str, Any], agent: str,
                 solution: np.ndarray) -> tuple[str | None, dict[str, Any]]:
    """Commit the true values of the group's revealed tiles, else reveal a frontier tile."""
    known = {k for k, _ in obs["known"]}
    tiles = {t["id"]: t for t in obs["tiles"]}
    g = obs["G"]
    mine = [tiles[t] for t in obs["territory"] if tiles[t]["status"] == "revealed"]
    cells = sorted({(t["y0"] + ly + dy) * g + t["x0"] + lx + dx for t in mine
                    for lx, ly, w, h in t["rects"] for dy in range(h) for dx in range(w)}
                   - known)
    if cells:
        return "field.commit", {"agent": agent, "expected_revision": obs["revision"],
                                "cells": [[x, int(solution[x])] for x in cells[:40]]}
    hidden = [t for t in obs["frontier"] if tiles[t]["status"] == "hidden"]
    if not hidden:
        return None, {}
    return "field.reveal", {"agent": agent, "tile": hidden[0],
                            "expected_revision": obs["revision"]}
