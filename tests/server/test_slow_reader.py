"""A client that stops reading is not held: its subscription is dropped with a resync once
its outbox is full, and once a send has waited the send timeout the connection is cut,
with a trace in the log and /metrics. Other clients are served throughout."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import trio

from server.budgets import Budgets
from tests.server.raw_ws import RawSocket
from tests.server.ws_harness import raw_client, result, running_server

WORLD = "counter:w"
NOTE = "n" * 16000


async def test_a_reader_that_does_not_read_is_dropped(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    settings = {"budgets": Budgets(send_timeout=1.0), "outbox_size": 16}
    async with running_server(tmp_path, **settings) as srv:
        token = srv.state.tokens.create("agent", "ann")
        async with raw_client(srv, token) as writer:
            result(await writer.call("counter.create", WORLD))
            sleeper = await RawSocket.open(srv.port)
            assert (await sleeper.hello())["ok"]
            await sleeper.send_json({"id": 1, "op": "subscribe", "to": WORLD})
            assert (await sleeper.recv_json())["result"]["topic"] == WORLD
            # From now on it reads nothing, while 6.4 MB of pushes come its way.
            with trio.fail_after(60):
                sent = 0
                while srv.state.metrics.budget_hits.labels("send_timeout").value == 0:
                    for i in range(16):
                        await writer.send({"id": 100 + sent + i, "op": "counter.add",
                                           "to": WORLD, "args": {"amount": 1, "note": NOTE}})
                    for _ in range(16):
                        assert (await writer.recv())["ok"]
                    sent += 16
                    if sent >= 400:
                        await trio.sleep(0.2)
                while len(srv.state.sessions) > 1:
                    await trio.sleep(0.05)
            # The writer was never slowed down, and is still served.
            assert result(await writer.call("counter.get", WORLD))["adds"] == sent
        assert srv.state.metrics.subscribers_dropped.labels("counter").value == 1
        assert "slow_reader: dropped a connection from 127.0.0.1: a frame waited" in caplog.text
        # What the sleeper finally reads: what was in flight, then the end of the connection.
        pushes = []
        with trio.fail_after(30):
            try:
                while True:
                    opcode, payload = await sleeper.recv_frame()
                    if opcode == 1:
                        pushes.append(json.loads(payload))
            except (EOFError, trio.BrokenResourceError):
                pass
        assert len(pushes) < sent  # it never got them all: nothing was held for it
        await sleeper.aclose()
