"""Loading a stored world for a client, over real sockets: what it costs is charged to the
request or subscribe that named the world, and one client's loads in flight are capped
(`loads_at_once`), so a burst of requests naming many stored worlds cannot make the
server read and fold them all before any of that time is charged."""

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


async def test_the_worlds_loading_for_one_client_at_once_are_capped(tmp_path: Path) -> None:
    loading = burn_world.Loading()
    loading.gate = trio.Event()
    async with running_server(tmp_path, budgets=Budgets(loads_at_once=2),
                              **burn_world.slow_settings(loading)) as srv, \
            raw_client(srv) as c, raw_client(srv, srv.owner_token) as owner:
        for rid, name in enumerate("ab", 1):
            await c.send({"id": rid, "op": "slow.spin", "to": f"slow:{name}",
                          "args": {"ms": 0}})
        refusal = {"code": "over_budget", "message": "more than 2 worlds not live are "
                   "being loaded for this client at once; retry when one is answered",
                   "detail": {"budget": "loads_at_once", "limit": 2}}
        await c.send({"id": 3, "op": "slow.spin", "to": "slow:c", "args": {"ms": 0}})
        assert await c.recv() == {"id": 3, "ok": False, "error": refusal}
        await c.send({"id": 4, "op": "subscribe", "to": "slow:d"})
        assert await c.recv() == {"id": 4, "ok": False, "error": refusal}
        await owner.send({"id": 1, "op": "slow.spin", "to": "slow:e", "args": {"ms": 0}})
        with trio.fail_after(5):
            while loading.started < 3:  # the owner has no such budget
                await trio.sleep(0.01)
        assert loading.started == 3  # c and d were not loaded
        loading.gate.set()
        assert {(await c.recv())["id"] for _ in range(2)} == {1, 2}
        result(await owner.recv())
        result(await c.call("slow.spin", "slow:a", ms=0))  # live now: not a load
        result(await c.call("slow.spin", "slow:c", ms=0))
        await c.send({"id": 9, "op": "subscribe", "to": "slow:d"})
        assert result(await c.recv())["topic"] == "slow:d"
        assert srv.state.ledger.accounts[ANONYMOUS].loading == 0
