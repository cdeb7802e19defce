"""A crashing actor over real sockets: `actor_restarted`, equal state, others untouched, and
nothing of the crashed handler kept."""

from __future__ import annotations

from pathlib import Path

import trio
import trio.testing

from actors.runtime import open_directory
from tests.runtime.probe import Block
from tests.server.probe_world import KINDS, probe_registry
from tests.server.ws_harness import error, raw_client, result, running_server


async def test_crash_restarts_with_equal_state_and_the_pending_ask_gets_actor_restarted(
        tmp_path: Path) -> None:
    async with running_server(tmp_path, kinds=KINDS, registry=probe_registry(),
                              open_mode=True) as running, \
            raw_client(running) as c, raw_client(running) as watcher:
        for name in ("a", "b"):
            result(await c.call("lobby.create", kind="probe", name=name))
        for i in range(5):
            result(await c.call("probe.add", "probe:a", amount=i))
        result(await c.call("probe.add", "probe:b", amount=100))
        await watcher.send({"id": 1, "op": "subscribe", "to": "probe:a", "since": 6})
        assert result(await watcher.recv())["rev"] == 6
        before = result(await c.call("probe.get", "probe:a"))
        actor = await running.state.directory.get("probe:a")
        state_before = actor.snapshot()

        # A crash that happens while a second request waits in the mailbox.
        release = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(actor.ask, Block(release))
            await trio.testing.wait_all_tasks_blocked()
            await c.send({"id": 50, "op": "probe.crash", "to": "probe:a",
                          "args": {"after_commit": False}})
            await c.send({"id": 51, "op": "probe.add", "to": "probe:a",
                          "args": {"amount": 1}})
            await trio.testing.wait_all_tasks_blocked()
            assert actor.statistics().mailbox_depth == 2
            release.set()
        replies = {r["id"]: r for r in [await c.recv(), await c.recv()]}
        crashed = error(replies[50])
        assert crashed["code"] == "actor_restarted"
        assert crashed["detail"] == {"actor": "probe:a"}
        assert result(replies[51]) == {"total": before["total"] + 1, "rev": before["rev"] + 1}
        assert actor.statistics().restarts == 1
        assert actor.snapshot() == {"total": state_before["total"] + 1,
                                    "amounts": [*state_before["amounts"], 1]}
        push = await watcher.recv()
        assert (push["rev"], push["data"]) == (7, [{"type": "added", "amount": 1}])
        # A crash after the handler committed: nothing of it is kept or published.
        assert error(await c.call("probe.crash", "probe:a", after_commit=True))["code"] == \
            "actor_restarted"
        assert result(await c.call("probe.get", "probe:a")) == {
            "total": before["total"] + 1, "rev": 7}
        with trio.move_on_after(0.2):
            raise AssertionError(f"a crashed handler's event was published: {await watcher.recv()}")
        # The state equals what a fresh actor folds from the store alone.
        async with open_directory(running.state.directory.store, KINDS) as fresh:
            assert (await fresh.get("probe:a")).snapshot() == actor.snapshot()
        # The other world was untouched.
        other = await running.state.directory.get("probe:b")
        assert (other.statistics().restarts, other.total) == (0, 100)
        assert result(await c.call("probe.get", "probe:b")) == {"total": 100, "rev": 2}


async def test_a_server_bug_is_answered_internal_and_the_socket_survives(tmp_path: Path) -> None:
    async with running_server(tmp_path, kinds=KINDS, registry=probe_registry(),
                              open_mode=True) as running, raw_client(running) as c:
        result(await c.call("lobby.create", kind="probe", name="a"))
        assert error(await c.call("probe.odd", "probe:a")) == {
            "code": "internal", "message": "the server failed on this request; the failure "
                                           "was logged", "detail": {}}
        assert result(await c.call("probe.get", "probe:a")) == {"total": 0, "rev": 1}


async def test_a_request_the_actor_does_not_answer_in_time_gets_timeout_once(
        tmp_path: Path) -> None:
    from actors.runtime import RuntimeConfig

    async with running_server(tmp_path, kinds=KINDS, registry=probe_registry(),
                              open_mode=True, runtime=RuntimeConfig(ask_timeout=0.5)
                              ) as running, raw_client(running) as c:
        result(await c.call("lobby.create", kind="probe", name="a"))
        actor = await running.state.directory.get("probe:a")
        release = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(actor.ask, Block(release), 60)
            await trio.testing.wait_all_tasks_blocked()
            reply = await c.call("probe.add", "probe:a", amount=5)
            assert error(reply) == {"code": "timeout", "message": "probe:a did not answer "
                                    "within 0.5 s", "detail": {"actor": "probe:a"}}
            release.set()
        # The request stayed in the mailbox and was applied; its late answer is not sent.
        assert result(await c.call("probe.get", "probe:a")) == {"total": 5, "rev": 2}
        with trio.move_on_after(0.3):
            raise AssertionError(f"a second reply arrived: {await c.recv()}")
        assert len(running.state.deadlines) == 0  # nothing answered is kept
