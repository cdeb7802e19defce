"""Killing only the event store's writer process: writes answer `unavailable` at once and
nothing is acknowledged that is not durable, `/healthz` says not ok, and within seconds a
new writer serves again; a writer that keeps dying makes the server exit non-zero for a
supervisor to restart it."""

from __future__ import annotations

import itertools
import os
import signal
import time
from pathlib import Path

import httpx
import trio

from tests.server.server_process import ServerProcess
from tests.server.ws_harness import error, raw_client, result, running_server

WORLD = "counter:w"


async def _health(url: str) -> tuple[int, dict]:
    async with httpx.AsyncClient() as http:
        r = await http.get(f"{url}/healthz")
    return r.status_code, r.json()


async def test_a_dead_writer_refuses_writes_until_a_new_one_serves(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        store = srv.state.directory.store
        token = srv.state.tokens.create("agent", "ann")
        async with raw_client(srv, token) as c:
            result(await c.call("counter.create", WORLD))
            assert result(await c.call("counter.add", WORLD, amount=1))["revision"] == 2
            assert (await _health(srv.url))[0] == 200
            first = store._proc.pid
            os.kill(first, signal.SIGKILL)
            started = time.monotonic()
            refused = error(await c.call("counter.add", WORLD, amount=10))
            took = time.monotonic() - started
            assert refused["code"] == "unavailable", refused
            assert "event store" in refused["message"]
            status, health = await _health(srv.url)
            assert status == 503 and health["ok"] is False and "writer" in health["trouble"]
            print(f"\nwriter killed: a write answered unavailable in {took * 1000:.0f} ms")
            # A new writer comes up within seconds and the world loads again from the store.
            with trio.fail_after(20):
                while True:
                    reply = await c.call("counter.add", WORLD, amount=100)
                    if reply["ok"]:
                        break
                    assert reply["error"]["code"] == "unavailable", reply
                    await trio.sleep(0.05)
            back = time.monotonic() - started
            print(f"writer killed: a write was acknowledged again after {back:.2f} s")
            assert store._proc.pid != first and store.restarts == 1
            # The refused write may or may not have been stored, the acknowledged ones are,
            # and the stream has no hole: the revision counts every stored event.
            total = result(await c.call("counter.get", WORLD))
            assert total["total"] in (101, 111)
            assert total["revision"] == total["adds"] + 1
            assert (await _health(srv.url))[0] == 200
            metrics = srv.state.metrics.render()
            assert 'petridish_warnings_total{event="store_writer"} 1' in metrics
            assert "petridish_store_writer_restarts_total 1" in metrics
            assert "petridish_store_up 1" in metrics


async def test_a_writer_that_keeps_dying_makes_the_server_exit_non_zero(
        tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data")
    await trio.to_thread.run_sync(server.start)
    try:
        assert server.proc is not None
        deaths = 0
        with trio.fail_after(60):
            while server.proc.poll() is None:
                deaths += await trio.to_thread.run_sync(server.kill_writer)
                await trio.sleep(0.05)
        assert server.proc.wait(10) == 3, "".join(server.output)
        assert deaths == 6, deaths  # the first start and five restarts
        assert any("exiting: the event store's writer could not be kept running" in line
                   for line in server.output), "".join(server.output)
    finally:
        await trio.to_thread.run_sync(server.kill)


async def test_a_write_the_writer_died_holding_says_its_outcome_is_unknown(
        tmp_path: Path) -> None:
    """The writer dies with the append in its hands: the reply is `unavailable` with
    `detail.outcome: "unknown"`, what docs/protocol.md tells a client to retry on with the
    same request id, and the retries apply the write once."""
    async with running_server(tmp_path) as srv:
        store = srv.state.directory.store
        token = srv.state.tokens.create("agent", "ann")
        async with raw_client(srv, token) as c:
            result(await c.call("counter.create", WORLD))
            add = {"op": "counter.add", "to": WORLD, "args": {"amount": 5},
                   "request_id": "add-5"}
            writer = store._proc.pid
            os.kill(writer, signal.SIGSTOP)
            try:
                await c.send({"id": 100, **add})
                with trio.fail_after(10):
                    while not store._waiting:  # the append went to the writer
                        await trio.sleep(0.01)
            finally:
                os.kill(writer, signal.SIGKILL)
            refused = error(await c.recv())
            assert refused["code"] == "unavailable", refused
            assert refused["detail"] == {"store": "down", "stored": "unknown",
                                         "outcome": "unknown"}
            with trio.fail_after(20):  # until a new writer serves
                for rid in itertools.count(101):
                    await c.send({"id": rid, **add})
                    reply = await c.recv()
                    if reply["ok"]:
                        break
                    assert reply["error"]["code"] == "unavailable", reply
                    assert "outcome" not in reply["error"]["detail"], reply  # not sent
                    await trio.sleep(0.05)
            assert result(await c.call("counter.get", WORLD))["total"] == 5
