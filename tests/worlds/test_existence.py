"""No world comes to life by being named; a refused create leaves nothing; a spectator's
huge or negative observe rectangle is refused and the field keeps answering."""

from __future__ import annotations

from pathlib import Path

import trio

from protocol.client import Client, RequestError
from tests.field_live._live import start
from tests.server.ws_harness import error, raw_client, result, running_server


async def test_300_unknown_names_start_nothing_and_leave_the_lobby_unchanged(
        tmp_path: Path) -> None:
    async with running_server(tmp_path, rate=1e6, burst=10**6) as srv, \
            raw_client(srv) as spectator:
        before = result(await spectator.call("lobby.list"))
        live_before = [s.actor_id for s in srv.state.directory.live()]
        kinds = ["field", "counter", "lobby"]
        replies = []
        for i in range(300):
            kind = kinds[i % 3]
            op = {"field": "field.observe", "counter": "counter.get", "lobby": "lobby.list"}[kind]
            replies.append(error(await spectator.call(op, f"{kind}:nobody-{i}")))
        assert [r["code"] for r in replies] == ["unknown_actor"] * 300
        for i in range(0, 300, 3):  # subscriptions start nothing either
            await spectator.send({"id": 5000 + i, "op": "subscribe", "to": f"field:sub-{i}"})
            assert error(await spectator.recv())["code"] == "unknown_actor"
        await trio.sleep(0.1)
        assert [s.actor_id for s in srv.state.directory.live()] == live_before
        assert result(await spectator.call("lobby.list")) == before
        assert await srv.state.directory.store.streams("field:") == {}


async def test_a_refused_create_leaves_no_world(tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as srv, raw_client(srv) as agent:
        refused = error(await agent.call("lobby.create", kind="counter", name="c",
                                         params={"size": 3}))
        assert refused == {"code": "bad_request", "message": "args.params.size: unknown key",
                           "detail": {"path": "args.params.size"}}
        bad_field = error(await agent.call("lobby.create", kind="field", name="f",
                                           params={"size": 5}))
        assert bad_field == {"code": "bad_request", "message": "args.params.size: must be "
                             "between 14 and 200", "detail": {"path": "args.params.size"}}
        # the create op's own refusal names its argument within params too
        bad_room = error(await agent.call("lobby.create", kind="puzzle", name="p",
                                          params={"pack": "nosuch"}))
        assert bad_room["detail"]["path"] == "args.params.pack", bad_room
        assert error(await agent.call("field.start", "field:g", size=5))["code"] == \
            "bad_request"
        for world in ("counter:c", "field:f", "field:g", "puzzle:p"):
            assert srv.state.directory.alive(world) is None
            read = {"counter": "counter.get", "field": "field.rules", "puzzle": "puzzle.view"}
            assert error(await agent.call(read[world.partition(":")[0]], world))["code"] == \
                "unknown_actor"
        assert result(await agent.call("lobby.list")) == {"worlds": [], "total": 0, "offset": 0}
        assert await srv.state.directory.store.streams() == {}
        # and the names stay free
        assert result(await agent.call("lobby.create", kind="counter", name="c"))["id"] == \
            "counter:c"


async def test_a_huge_or_negative_rectangle_is_refused_and_the_field_answers_on(
        tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as srv, \
            Client.connect(srv.ws_url) as agent, Client.connect(srv.ws_url) as spectator:
        await start(agent, "r", size=20, seed=3)
        for rect, path, says in (([0, 0, 6000, 6000], "args.rect[2]", "1 and 1000"),
                                 ([0, 0, 10**9, 1], "args.rect[2]", "1 and 1000"),
                                 ([-1, 0, 5, 5], "args.rect[0]", "0 and 999"),
                                 ([0, -5, 5, 5], "args.rect[1]", "0 and 999"),
                                 ([0, 0, 0, 5], "args.rect[2]", "1 and 1000")):
            for _ in range(10):
                try:
                    await spectator.request("field.observe", "field:r", {"rect": rect})
                except RequestError as err:
                    assert err.code == "bad_request" and err.detail == {"path": path}
                    assert err.message == f"{path}: must be between {says}"
                else:
                    raise AssertionError(f"{rect} was accepted")
        clipped = await spectator.request("field.observe", "field:r", {"rect": [5, 5, 1000, 1000]})
        assert clipped["tiles"]
        joined = await agent.request("field.join", "field:r", {"name": "still"})
        assert joined["revision"] == 2
        assert srv.state.directory.alive("field:r").statistics().restarts == 0


async def test_an_unknown_world_names_its_create_op_only_for_a_name_it_creates(
        tmp_path: Path) -> None:
    """`field.start` starts no daily field and no id outside [a-zA-Z0-9_-]: the refusal for
    such a field that does not exist names no op that would create it."""
    async with running_server(tmp_path, open_mode=True) as srv, raw_client(srv) as c:
        for world, hint in (("field:plain", True), ("field:day-2020-01-01", False),
                            ("field:a.b", False)):
            refused = error(await c.call("field.rules", world))
            assert refused["code"] == "unknown_actor"
            assert refused["message"] == f"there is no world {world!r}" + (
                "; field.start creates it" if hint else ""), refused
            if not hint:
                assert error(await c.call("field.start", world, size=14))["code"] == \
                    "bad_request"
