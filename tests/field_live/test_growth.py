"""A growing field grows while agents play; old cells never change; fog hides the unreached."""

from __future__ import annotations

from pathlib import Path

import trio

from actors.field import live
from examples.field_agent import Agent
from protocol.client import Client
from tests.field_live._live import play_truly, start
from tests.server.ws_harness import running_server


async def test_growing_field_grows_under_play(tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as srv, Client.connect(srv.ws_url) as c:
        await start(c, "grow", canvas=100, chunk=20, chunks=1, seed=3, grow={"every_s": 1.0})
        to = "field:grow"
        full = [0, 0, 100, 100]
        first = await c.request("field.observe", to, {"rect": full})
        assert first["fog"] is True
        history: list[dict] = [first]
        grows: list[dict] = []
        async with trio.open_nursery() as n:
            for k in range(2):
                n.start_soon(Agent(c, "grow", f"p{k}", "m").run)
            with trio.fail_after(90):
                while len(grows) < 2:
                    await trio.sleep(0.3)
                    view = await c.request("field.history", to, {"revision": history[-1]["revision"]})
                    now = await c.request("field.observe", to, {"rect": full})
                    rings = (await c.request("field.history", to, {
                        "revision": now["revision"]}))["view"]["manifest"]["seed_rings"]
                    grows = [now] * (len(rings) - 1)  # ring 0 is the initial field
                    # nothing known before is unknown or different now (no cell changes)
                    old = {k: v for k, v in history[-1]["known"]}
                    new = {k: v for k, v in now["known"]}
                    assert all(new.get(k) == v for k, v in old.items())
                    assert view["view"]["revision"] == history[-1]["revision"]
                    history.append(now)
            n.cancel_scope.cancel()
        # tiles keep their ids and shapes as rings are added
        rules = await c.request("field.history", to, {"revision": grows[-1]["revision"]})
        manifest = rules["view"]["manifest"]
        assert len(manifest["tiles"]) == grows[-1]["tiles_total"] >= first["tiles_total"] + 2
        first_view = await c.request("field.history", to, {"revision": 1})
        assert manifest["tiles"][:first["tiles_total"]] == first_view["view"]["manifest"]["tiles"]
        # fog: an agent's observation lists a hidden tile only when its group reached it
        obs = await c.request("field.observe", to, {"agent": "a1"})
        reached = set(obs["territory"])
        for t in obs["tiles"]:
            if t["status"] != "hidden":
                reached.update(t["neighbours"])
        hidden = [t["id"] for t in obs["tiles"] if t["status"] == "hidden"]
        assert hidden and set(hidden) <= reached
        everything = await c.request("field.observe", to, {"rect": full})
        unlisted = [t for t in everything["tiles"] if t["status"] == "hidden"]
        assert not unlisted, "without an agent, fog lists no hidden tile"


async def test_growth_triggers_without_the_timer(tmp_path: Path) -> None:
    """With a day-long timer, a field still grows once most of its tiles are revealed or
    solved: the trigger runs after the write that crosses the line, as one grow event."""
    async with running_server(tmp_path, open_mode=True) as srv, Client.connect(srv.ws_url) as c:
        await start(c, "trig", canvas=100, chunk=20, chunks=1, seed=4, grow={"every_s": 86400})
        to = "field:trig"
        solution = (await srv.state.directory.get(to)).state.truth.solution
        agent = (await c.request("field.join", to, {"name": "p"}))["agent"]
        first = await c.request("field.observe", to, {"rect": [0, 0, 100, 100]})
        tiles0 = first["tiles_total"]
        with trio.fail_after(60):
            while True:
                obs = await c.request("field.observe", to, {"rect": [0, 0, 100, 100]})
                if obs["tiles_total"] > tiles0:
                    break
                view = (await c.request("field.history", to, {
                    "revision": obs["revision"]}))["view"]
                share = 1 - view["tile_status"].count("h") / tiles0
                if share < live.GROW_SHARE:
                    await play_truly(c, "trig", agent, solution)
                else:
                    await trio.sleep(0.05)  # the ring is being generated off the actor task
        stored = await srv.state.directory.store.read(to)
        grows = [e.rev for e in stored if e.data["kind"] == "grow"]
        assert len(grows) == 1
        before = (await c.request("field.history", to, {"revision": grows[0] - 1}))["view"]
        # it grew off a write (no timer fired), with most tiles revealed or solved
        assert 1 - before["tile_status"].count("h") / tiles0 >= live.GROW_SHARE
        assert stored[grows[0] - 2].data["kind"] in ("reveal", "commit")
