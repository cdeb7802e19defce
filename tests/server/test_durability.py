"""Durability: every acknowledged write survives SIGKILL of the server process.

`petridish serve` runs as a subprocess; four clients write concurrently (so appends
meet in the store's group commit) until the process is killed mid-stream. After a
restart on the same data directory every write whose reply arrived is in the world's
stream, and the stream holds nothing but well-formed writes.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import trio

from protocol.client import Client, ClientError, RequestError
from tests.field_live._live import ready
from tests.server.server_process import ServerProcess

WRITERS = 4
KILL_AFTER = 120  # acknowledged writes before the SIGKILL


async def _write_until_killed(url: str, token: str, writer: int, acked: list[str],
                              enough: trio.Event, refused: list[dict] | None = None) -> None:
    """Add to counter:durable until the connection ends, noting each write acknowledged
    and, with `refused`, each refusal (else a refusal ends the writing too)."""
    async with Client.connect(url, token=token, reconnect=False) as c:
        for i in range(10_000):
            note = f"w{writer}-{i}"
            try:
                await c.request("counter.add", to="counter:durable",
                                args={"amount": 1, "note": note}, timeout=10)
            except RequestError as exc:
                if refused is None:
                    return
                refused.append({"code": exc.code, "detail": exc.detail})
                continue
            except ClientError:
                return  # the server is gone; this write was never acknowledged
            acked.append(note)
            if len(acked) >= KILL_AFTER:
                enough.set()


async def _serving_a_counter(tmp_path: Path) -> tuple[ServerProcess, str]:
    """A server process on a fresh data directory with counter:durable, and the owner
    token."""
    server = ServerProcess(tmp_path / "data")
    await trio.to_thread.run_sync(server.start)
    token = server.owner_token
    try:
        assert token is not None
        async with Client.connect(server.ws_url, token=token) as c:
            await c.request("lobby.create", args={"kind": "counter", "name": "durable"})
    except BaseException:
        server.kill()
        raise
    return server, token


async def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    server, token = await _serving_a_counter(tmp_path)
    try:
        acked: list[str] = []
        enough = trio.Event()
        async with trio.open_nursery() as nursery:
            for writer in range(WRITERS):
                nursery.start_soon(_write_until_killed, server.ws_url, token, writer, acked,
                                   enough)
            await enough.wait()
            await trio.to_thread.run_sync(server.kill)  # writes are still in flight
        assert server.proc is not None and server.proc.returncode == -9
        assert len(acked) >= KILL_AFTER

        await trio.to_thread.run_sync(server.start)  # same data directory
        assert server.owner_token is None  # not a first start: no token printed
        async with Client.connect(server.ws_url, token=token) as c:
            total = await c.request("counter.get", to="counter:durable")
            async with c.subscribe("counter:durable", since=0) as sub:
                events: list[dict] = []
                with trio.fail_after(10):
                    async for push in sub:
                        assert push.kind == "events"
                        events += push.data
                        if push.rev == total["revision"]:
                            break
            worlds = await c.request("lobby.list")
    finally:
        await trio.to_thread.run_sync(server.kill)

    notes = [e["note"] for e in events if e["type"] == "added"]
    assert set(acked) <= set(notes), "an acknowledged write was lost"
    assert len(notes) == len(set(notes)) == total["adds"] == total["total"]
    # Writes in flight at the kill may or may not have landed, but no more than one each.
    assert len(notes) <= len(acked) + WRITERS
    assert {"kind": "counter", "id": "counter:durable"}.items() <= \
        next(w for w in worlds["worlds"] if w["id"] == "counter:durable").items()


async def test_a_world_lost_while_generated_can_be_created_again(tmp_path: Path) -> None:
    """`lobby.create` of a field answers while the field is generated, nothing of it
    stored yet; killed then, the server comes back without the field, and the lobby (which
    records a world once it is stored) lets its name be created again, the same request id
    included. It answered `already_exists` for ever, for a world that did not exist."""
    server = ServerProcess(tmp_path / "data")
    await trio.to_thread.run_sync(server.start)
    create = {"kind": "field", "name": "big", "params": {"kind": "scatter", "size": 200}}
    try:
        token = server.owner_token
        assert token is not None
        async with Client.connect(server.ws_url, token=token, reconnect=False) as c:
            first = await c.request("lobby.create", args=create, request_id="c1")
            assert first == {"id": "field:big", "revision": 0}
            await trio.to_thread.run_sync(server.kill)  # generation takes seconds
        await trio.to_thread.run_sync(server.start)
        async with Client.connect(server.ws_url, token=token) as c:
            with pytest.raises(RequestError) as lost:
                await c.request("field.rules", to="field:big")
            assert lost.value.code == "unknown_actor"
            again = await c.request("lobby.create", args=create, request_id="c1")
            assert again == {"id": "field:big", "revision": 0}
            await ready(c, "big")
            with pytest.raises(RequestError) as exists:
                await c.request("lobby.create", args=create)
            assert exists.value.code == "already_exists"
    finally:
        await trio.to_thread.run_sync(server.stop)


def test_a_store_that_cannot_be_opened_fails_the_start_saying_why(tmp_path: Path) -> None:
    """A PostgreSQL store that cannot be opened (here: nothing listens; a schema it refuses
    alike) ends the start with one sentence saying why, not a traceback."""
    server = ServerProcess(tmp_path / "data", "--store", "postgresql://127.0.0.1:1/none")
    with pytest.raises(RuntimeError, match="exited before listening"):
        server.start()
    assert server.proc is not None and server.proc.wait(10) == 2
    said = "".join(server.output)
    assert "petridish: the event store cannot be opened: PostgreSQL cannot be reached: " \
           "connection failed: " in said, said
    assert "Traceback" not in said, said


async def test_a_second_server_on_the_same_data_directory_is_refused(tmp_path: Path) -> None:
    """Two servers on one SQLite store would fight for every stream: the second exits with
    a clear message and the first serves on; once the first is killed, a server starts."""
    data = tmp_path / "data"
    with ServerProcess(data) as first:
        second = ServerProcess(data)
        with pytest.raises(RuntimeError, match="exited before listening"):
            second.start()
        assert second.proc is not None and second.proc.wait(10) == 2
        said = "".join(second.output)
        assert f"the data directory {data} is in use by another server (pid {first.proc.pid})" \
            in said, said
        async with Client.connect(first.ws_url, token=first.owner_token) as c:
            await c.request("lobby.create", args={"kind": "counter", "name": "one"})
            await c.request("counter.add", to="counter:one", args={"amount": 1})
        first.kill()
        with ServerProcess(data) as third:
            async with Client.connect(third.ws_url, token=first.owner_token) as c:
                assert (await c.request("counter.add", to="counter:one",
                                        args={"amount": 2}))["total"] == 3


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
async def test_a_signal_to_the_process_group_answers_the_writes_in_flight(
        tmp_path: Path, sig: signal.Signals) -> None:
    """Ctrl-C (SIGINT to the terminal's process group) and `systemctl stop` (SIGTERM to the
    control group) reach the store's writer too. It used to die at once, and the graceful
    shutdown refused the writes in flight `unavailable` (the store down), with a traceback;
    now it serves until the server ends it, so each write is acknowledged or was never
    read (its connection closed 1001)."""
    server, token = await _serving_a_counter(tmp_path)
    try:
        acked: list[str] = []
        refused: list[dict] = []
        enough = trio.Event()
        async with trio.open_nursery() as nursery:
            for writer in range(WRITERS):
                nursery.start_soon(_write_until_killed, server.ws_url, token, writer, acked,
                                   enough, refused)
            await enough.wait()
            server.signal_group(sig)
        assert server.proc is not None
        assert await trio.to_thread.run_sync(server.proc.wait, 30) == 0
        said = server.all_output()
    finally:
        await trio.to_thread.run_sync(server.kill)
    assert refused == [], refused
    assert "writer died" not in said and "Traceback" not in said, said
