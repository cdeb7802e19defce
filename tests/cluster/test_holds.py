"""The owner's `admin.stop` in a cluster: the world is held on every node (it stops where
it lives, no node loads it) until `admin.release`, and a node that joins later holds it
too (server/cluster/holds.py)."""

from __future__ import annotations

import pytest

from protocol.client import Client, RequestError
from tests.cluster.conftest import Nodes, wait_for

pytestmark = pytest.mark.postgres
WORLD = "counter:held"


async def _held(client: Client) -> bool:
    """True when `client`'s node refuses the world as held."""
    try:
        await client.request("counter.get", WORLD)
    except RequestError as e:
        if e.code == "unavailable" and (e.detail or {}).get("held"):
            return True
        raise
    return False


async def test_a_world_stopped_on_one_node_is_held_on_every_node(nodes: Nodes) -> None:
    a, b = [await nodes.start(n) for n in "ab"]
    token = (nodes.data_dir / "owner.token").read_text().strip()
    async with Client.connect(a.ws_url, token) as owner, Client.connect(b.ws_url) as cb:
        await cb.request("counter.create", WORLD)
        await owner.request("admin.overview")  # the console lives on a from now on
        assert WORLD in b.directory.hosted() and "admin:main" in a.directory.hosted()
        assert (await owner.request("admin.stop", args={"id": WORLD}))["held"] is True
        await wait_for(lambda: WORLD in b.directory.held)
        await wait_for(lambda: WORLD not in b.directory.hosted())
        assert await _held(cb) and await _held(owner)

        c = await nodes.start("c")  # a node that joins now holds it before it serves
        assert WORLD in c.directory.held
        async with Client.connect(c.ws_url) as cc:
            assert await _held(cc)
            await owner.request("admin.release", args={"id": WORLD})
            await wait_for(lambda: WORLD not in b.directory.held | c.directory.held)
            for client in (cb, cc, owner):
                assert (await client.request("counter.get", WORLD))["revision"] == 1
