"""Loading a stored world for a client, over real sockets: what it costs is charged to the
request or subscribe that named the world."""

from __future__ import annotations

from pathlib import Path

import trio

from server.budgets import Budgets
from tests.server import burn_world
from tests.server.ws_harness import raw_client, result, running_server

ANONYMOUS = "address:127.0.0.1"
LOAD = 0.3  # seconds a slow world takes to load in the charge test


async def test_loading_a_world_is_charged_to_the_request_or_subscribe_that_named_it(
        tmp_path: Path) -> None:
    budgets = Budgets(cpu_rate=1e-6, cpu_burst_anonymous=10.0)
    loading = burn_world.Loading(LOAD)
    async with running_server(tmp_path, budgets=budgets,
                              **burn_world.slow_settings(loading)) as srv, \
            raw_client(srv) as c:
        account = srv.state.ledger.accounts[ANONYMOUS]

        def spent() -> float:
            return budgets.cpu_burst_anonymous - account.cpu.refill(trio.current_time())

        result(await c.call("slow.spin", "slow:a", ms=0))
        assert spent() >= LOAD
        await c.send({"id": 50, "op": "subscribe", "to": "slow:b"})
        assert result(await c.recv())["topic"] == "slow:b"
        assert spent() >= 2 * LOAD
        assert loading.started == 2

