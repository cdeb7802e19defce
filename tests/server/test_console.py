"""The owner's console over /ws (server/admin.py, `admin.*` ops): each op's answer on a real
server, its bounds, and its refusal for everyone but the owner."""

from __future__ import annotations

import re
import sqlite3
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio
from websockets.exceptions import ConnectionClosed

from actors.store import StoreUnavailable
from protocol.ops.admin import ADMIN_ID, MAX_PAGE
from server import admin, console, worlds
from server.budgets import Budgets
from server.config import ServerConfig
from server.storage import SqliteEventStore
from tests.server import burn_world
from tests.server.ws_harness import Raw, raw_client, running_server

ADMIN_OPS = sorted(spec.name for spec in worlds.registry() if spec.kind == "admin")
VALID = {"admin.token_create": {"name": "zed"}, "admin.token_revoke": {"name": "ann"},
         "admin.stop": {"id": "counter:a"}, "admin.release": {"id": "counter:a"},
         "admin.unload": {"id": "counter:a"}}


def ok(reply: dict[str, Any]) -> Any:
    assert reply["ok"], reply
    return reply["result"]


def refused(reply: dict[str, Any], code: str) -> dict[str, Any]:
    assert not reply["ok"] and reply["error"]["code"] == code, reply
    return reply["error"]


async def subscribe(raw: Raw, topic: str) -> dict[str, Any]:
    """Follow `topic`; the reply (the snapshot push that follows stays unread)."""
    rid, raw.next_id = raw.next_id, raw.next_id + 1
    await raw.send({"id": rid, "op": "subscribe", "to": topic})
    while (reply := await raw.recv()).get("id") != rid:
        pass
    return reply


async def _closed_with(raw: Raw) -> tuple[list[dict[str, Any]], int | None]:
    """Every frame until the server closes the socket, and the close code."""
    frames = []
    try:
        while True:
            frames.append(await raw.recv())
    except ConnectionClosed:
        pass
    return frames, raw.ws.close_code


def test_every_console_op_is_listed_with_the_owner_role() -> None:
    specs = [s for s in worlds.registry() if s.kind == "admin"]
    assert {s.name for s in specs} >= {"admin.overview", "admin.worlds", "admin.connections",
                                       "admin.tokens", "admin.token_create",
                                       "admin.token_revoke", "admin.budgets", "admin.stop",
                                       "admin.release", "admin.unload"}
    assert {s.role for s in specs} == {"owner"} and {s.default_to for s in specs} == {ADMIN_ID}


@pytest.mark.parametrize("open_mode", [False, True])
async def test_everyone_but_the_owner_is_forbidden_every_console_op(
        tmp_path: Path, open_mode: bool) -> None:
    async with running_server(tmp_path, open_mode=open_mode) as srv:
        ann = srv.state.tokens.create("agent", "ann")
        async with raw_client(srv, ann) as agent, raw_client(srv) as anonymous:
            ok(await agent.call("counter.create", "counter:a"))
            for op in ADMIN_OPS:
                for who in (agent, anonymous):
                    error = refused(await who.call(op, **VALID.get(op, {})), "forbidden")
                    assert error["detail"]["required"] == "owner"
            ok(await agent.call("counter.get", "counter:a"))  # not stopped, not unloaded
        assert [t.name for t in srv.state.tokens.list()] == ["ann"]  # none made, none revoked
        assert await srv.state.directory.store.revision(ADMIN_ID) == 0  # no audit entry


async def test_worlds_are_listed_in_pages_with_mailbox_subscribers_revision_summary(
        tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, raw_client(srv, srv.owner_token) as owner, \
            raw_client(srv) as spectator:
        for name in ("a", "b", "c"):
            ok(await owner.call("counter.create", f"counter:{name}"))
        ok(await owner.call("counter.add", "counter:b", amount=2))
        ok(await owner.call("field.start", "field:fz", size=14, seed=4))
        ok(await subscribe(spectator, "counter:b"))
        rows = ok(await owner.call("admin.worlds", limit=MAX_PAGE))
        by_id = {w["id"]: w for w in rows["worlds"]}
        assert {"counter:a", "counter:b", "counter:c", "field:fz", ADMIN_ID} <= set(by_id)
        assert rows["total"] == len(rows["worlds"]) and rows["offset"] == 0
        b = by_id["counter:b"]
        assert (b["kind"], b["state"], b["revision"], b["subscribers"]) == \
            ("counter", "live", 2, 1)
        assert b["mailbox_depth"] == 0 and b["mailbox_peak"] >= 1 and b["handled"] >= 2
        assert b["summary"] is None  # a counter says nothing of itself
        assert by_id["field:fz"]["summary"]["state"] in ("generating", "live")
        ids = [w["id"] for w in rows["worlds"]]
        assert ids == sorted(ids)
        first = ok(await owner.call("admin.worlds", offset=0, limit=2))
        rest = ok(await owner.call("admin.worlds", offset=2, limit=MAX_PAGE))
        assert [w["id"] for w in first["worlds"] + rest["worlds"]] == ids
        assert first["total"] == rest["total"] == len(ids)
        for bad in ({"limit": MAX_PAGE + 1}, {"limit": 0}, {"offset": -1}, {"extra": 1}):
            refused(await owner.call("admin.worlds", **bad), "bad_request")
        overview = ok(await owner.call("admin.overview"))
        assert overview["live_worlds"] == len(ids) and overview["held"] == []
        assert overview["store"] == {"ok": True, "trouble": None, "restarts": 0}


async def test_connections_by_role_each_with_identity_address_topics_and_queue(
        tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        ann = srv.state.tokens.create("agent", "ann")
        async with raw_client(srv, srv.owner_token) as owner, raw_client(srv, ann) as agent, \
                raw_client(srv) as spectator, raw_client(srv, hello=False):
            ok(await agent.call("counter.create", "counter:a"))
            ok(await subscribe(spectator, "counter:a"))
            ok(await subscribe(spectator, "lobby:main"))
            page = ok(await owner.call("admin.connections"))
            assert page["by_role"] == {"none": 1, "spectator": 1, "agent": 1, "owner": 1}
            assert page["total"] == 4
            agents = ok(await owner.call("admin.connections", role="agent"))["connections"]
            assert [(c["role"], c["identity"], c["address"]) for c in agents] == \
                [("agent", "ann", "127.0.0.1")]
            watcher, = ok(await owner.call("admin.connections", role="spectator"))["connections"]
            assert watcher["subscriptions"] == ["counter:a", "lobby:main"]
            assert watcher["queued_frames"] >= 0 and watcher["queued_chars"] >= 0
            assert watcher["identity"]  # an anonymous caller has a name of its own
            none, = ok(await owner.call("admin.connections", role="none"))["connections"]
            assert (none["identity"], none["subscriptions"]) == ("", [])
            paged = ok(await owner.call("admin.connections", offset=3, limit=1))
            assert paged["total"] == 4 and len(paged["connections"]) == 1
            refused(await owner.call("admin.connections", role="admin"), "bad_request")
            counts = ok(await owner.call("admin.overview"))["connections"]
            assert (counts["websockets"], counts["ungreeted"]) == (4, 1)
            assert counts["tcp"] >= 4


async def test_tokens_are_created_listed_and_revoked_ending_their_sessions(
        tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, raw_client(srv, srv.owner_token) as owner:
        made = ok(await owner.call("admin.token_create", name="ann"))
        assert (made["name"], made["role"]) == ("ann", "agent") and made["token"]
        refused(await owner.call("admin.token_create", name="ann"), "already_exists")
        for _ in range(2):  # a create sent again with its request id is not shown twice
            await owner.send({"id": 99, "op": "admin.token_create", "request_id": "r-1",
                              "args": {"name": "cy"}})
            reply = await owner.recv()
        refused(reply, "already_exists")
        for bad in ({"name": "owner"}, {"name": "no spaces"}, {"name": ""},
                    {"name": "x" * 65}, {"name": "bob", "role": "spectator"}):
            refused(await owner.call("admin.token_create", **bad), "bad_request")
        async with raw_client(srv, made["token"]) as ann, raw_client(srv, made["token"]) as ann2:
            assert ok(await ann.call("counter.create", "counter:a"))["revision"] == 1
            listed = ok(await owner.call("admin.tokens"))["tokens"]
            assert [(t["name"], t["role"], t["sessions"]) for t in listed] == \
                [("ann", "agent", 2), ("cy", "agent", 0)]
            revoked = ok(await owner.call("admin.token_revoke", name="ann"))
            assert revoked == {"name": "ann", "revoked": True, "sessions_ended": 2}
            for client in (ann, ann2):
                frames, code = await _closed_with(client)
                assert [f["error"]["code"] for f in frames] == ["unauthorized"]
                assert code == 1008
        assert [t["name"] for t in ok(await owner.call("admin.tokens"))["tokens"]] == ["cy"]
        again = ok(await owner.call("admin.token_revoke", name="ann"))
        assert again == {"name": "ann", "revoked": False, "sessions_ended": 0}
        audit = ok(await owner.call("admin.overview"))["audit"]
        assert [(e["type"], e["name"], e["by"]) for e in audit] == \
            [("token_revoked", "ann", "owner"), ("token_created", "cy", "owner"),
             ("token_created", "ann", "owner")]
    for path in tmp_path.rglob("*"):  # the plaintext was shown once and kept nowhere
        if path.is_file():
            assert made["token"].encode() not in path.read_bytes(), path


async def test_budgets_in_force_and_who_hit_them(tmp_path: Path) -> None:
    budgets = Budgets(subscriptions=1)
    async with running_server(tmp_path, budgets=budgets) as srv, \
            raw_client(srv, srv.owner_token) as owner, raw_client(srv) as spectator:
        report = ok(await owner.call("admin.budgets"))
        in_force = srv.state.config.budgets  # max_connections fitted to the descriptors
        assert in_force == attrs.evolve(budgets, max_connections=in_force.max_connections)
        assert report["budgets"] == in_force.to_json() and report["hits"] == []
        assert report["connection"]["max_frame"] == srv.state.config.max_frame
        ok(await subscribe(spectator, "lobby:main"))
        ok(await owner.call("counter.create", "counter:a"))
        refused(await subscribe(spectator, "counter:a"), "over_budget")
        hit, = ok(await owner.call("admin.budgets"))["hits"]
        assert (hit["budget"], hit["who"], hit["count"]) == ("subscriptions", "127.0.0.1", 1)
        assert hit["last_s"] >= 0


async def test_the_accounts_with_the_most_in_flight_are_listed(tmp_path: Path) -> None:
    """The budgets view lists the accounts with the most requests in flight (the most
    first, at most INFLIGHT_LISTED), and /metrics their sum."""
    loading = burn_world.Loading()
    loading.gate = trio.Event()  # slow worlds answer nothing until it is set
    names = [f"agent-{i:02}" for i in range(console.INFLIGHT_LISTED + 1)]
    async with running_server(tmp_path, budgets=Budgets(loads_at_once=100),
                              **burn_world.slow_settings(loading)) as srv, \
            raw_client(srv, srv.owner_token) as owner, AsyncExitStack() as stack, \
            httpx.AsyncClient() as http:
        agents = [await stack.enter_async_context(
            raw_client(srv, srv.state.tokens.create("agent", name))) for name in names]
        anonymous = await stack.enter_async_context(raw_client(srv))
        senders = [*agents, anonymous, anonymous]
        for rid, c in enumerate(senders):
            await c.send({"id": rid, "op": "slow.spin", "to": "slow:x", "args": {"ms": 0}})
        with trio.fail_after(10):
            while srv.state.ledger.inflight() != len(senders):
                await trio.sleep(0.01)
        assert ok(await owner.call("admin.budgets"))["inflight"] == [
            {"account": "address:127.0.0.1", "inflight": 2},
            *({"account": name, "inflight": 1}
              for name in names[:console.INFLIGHT_LISTED - 1])]
        metrics = (await http.get(f"{srv.url}/metrics")).text
        assert f"\npetridish_inflight {len(senders)}\n" in metrics
        loading.gate.set()
        for c in senders:
            assert (await c.recv())["ok"]
        with trio.fail_after(10):
            while srv.state.ledger.inflight():
                await trio.sleep(0.01)
        assert ok(await owner.call("admin.budgets"))["inflight"] == []


async def test_a_stopped_world_stays_held_across_a_restart_until_released(
        tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, raw_client(srv, srv.owner_token) as owner:
        ok(await owner.call("counter.create", "counter:a"))
        ok(await owner.call("counter.create", "counter:b"))
        ok(await owner.call("admin.stop", id="counter:a"))
        ok(await owner.call("admin.stop", id="counter:b"))
        ok(await owner.call("admin.release", id="counter:b"))
    token = (tmp_path / "owner.token").read_text().strip()  # (shown on the first start only)
    async with running_server(tmp_path) as srv, raw_client(srv, token) as owner:
        # (the first request after the start, before anything asks the console)
        error = refused(await owner.call("counter.get", "counter:a"), "unavailable")
        assert error["detail"]["held"] is True
        assert ok(await owner.call("admin.overview"))["held"] == ["counter:a"]
        assert ok(await owner.call("counter.get", "counter:b"))["revision"] == 1
        ok(await owner.call("admin.release", id="counter:a"))
    async with running_server(tmp_path) as srv, raw_client(srv, token) as owner:
        assert ok(await owner.call("admin.overview"))["held"] == []
        assert ok(await owner.call("counter.get", "counter:a"))["revision"] == 1


async def test_a_console_that_cannot_load_is_logged_and_the_server_serves(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with running_server(tmp_path) as srv, raw_client(srv, srv.owner_token) as owner:
        ok(await owner.call("counter.create", "counter:a"))
        ok(await owner.call("admin.stop", id="counter:a"))
    with sqlite3.connect(tmp_path / "events.sqlite3") as db:  # an event it cannot read
        db.execute("UPDATE events SET data = '[1]' WHERE stream = ?", (ADMIN_ID,))
    token = (tmp_path / "owner.token").read_text().strip()
    async with running_server(tmp_path) as srv, raw_client(srv, token) as owner:
        assert ok(await owner.call("counter.get", "counter:a"))["revision"] == 1
    assert "the owner's console could not load" in caplog.text


def test_what_is_held_outlives_the_audit_window_and_old_snapshots() -> None:
    state = admin.evolve(admin.Audit(), {"type": "world_stopped", "id": "counter:a"})
    for k in range(admin.AUDIT_KEPT + 5):
        state = admin.evolve(state, {"type": "world_unloaded", "id": f"counter:u{k}"})
    assert state.held == {"counter:a"} and len(state.entries) == admin.AUDIT_KEPT
    assert admin.from_snapshot(admin.to_snapshot(state)) == state
    # A snapshot from before holds were kept: a list of entries, stops and releases read.
    old = [{"type": "world_stopped", "id": "counter:a"}, {"type": "world_stopped",
                                                           "id": "counter:b"},
           {"type": "world_released", "id": "counter:a"}]
    assert admin.from_snapshot(old) == admin.Audit(tuple(old), frozenset({"counter:b"}))


async def test_a_world_is_stopped_released_and_unloaded(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, raw_client(srv, srv.owner_token) as owner, \
            raw_client(srv) as spectator:
        ok(await owner.call("counter.create", "counter:a"))
        ok(await owner.call("counter.add", "counter:a", amount=5))
        ok(await subscribe(spectator, "counter:a"))
        await spectator.recv()  # its snapshot
        assert ok(await owner.call("admin.stop", id="counter:a")) == \
            {"id": "counter:a", "was_live": True, "held": True}
        push = await spectator.recv()
        assert (push["kind"], push["data"]) == ("resync", {"reason": "actor_stopped"})
        error = refused(await spectator.call("counter.get", "counter:a"), "unavailable")
        assert error["detail"]["held"] is True
        refused(await subscribe(spectator, "counter:a"), "unavailable")
        row, = [w for w in ok(await owner.call("admin.worlds"))["worlds"]
                if w["id"] == "counter:a"]
        assert (row["state"], row["revision"]) == ("held", -1)
        assert ok(await owner.call("admin.overview"))["held"] == ["counter:a"]
        assert ok(await owner.call("admin.release", id="counter:a")) == \
            {"id": "counter:a", "was_live": False, "held": False}
        assert ok(await spectator.call("counter.get", "counter:a"))["total"] == 5
        assert ok(await owner.call("admin.unload", id="counter:a")) == \
            {"id": "counter:a", "was_live": True, "held": False}
        with trio.fail_after(5):
            while any(s.actor_id == "counter:a" for s in srv.state.directory.live()):
                await trio.sleep(0.01)
        assert ok(await owner.call("admin.unload", id="counter:a"))["was_live"] is False
        assert ok(await spectator.call("counter.get", "counter:a"))["revision"] == 2
        for bad in ("admin:main", "nokind:x", "counter:", "COUNTER:a", "counter:" + "x" * 81,
                    "x" * 200):
            refused(await owner.call("admin.stop", id=bad), "bad_request")
        audit = ok(await owner.call("admin.overview"))["audit"]
        assert [e["type"] for e in audit] == ["world_unloaded", "world_released",
                                              "world_stopped"]


class _Refusing(SqliteEventStore):
    """A SQLite store whose appends are refused while `down`, as with its writer dead."""

    down = False

    async def append(self, *args: Any, **kwargs: Any) -> int:
        if self.down:
            raise StoreUnavailable("its writer stopped", sent=False)
        return await super().append(*args, **kwargs)


def _refusing(config: ServerConfig) -> _Refusing:
    return _Refusing.in_directory(config.data_dir)


async def test_a_change_whose_record_cannot_be_stored_is_not_made(tmp_path: Path) -> None:
    """`unavailable`, "nothing was stored", is true of every console change: none is made
    before its audit record is durable (a create made first is revoked again)."""
    async with running_server(tmp_path, store_opener=_refusing) as srv, \
            raw_client(srv, srv.owner_token) as owner:
        store, directory = srv.state.directory.store, srv.state.directory
        ann = srv.state.tokens.create("agent", "ann")
        ok(await owner.call("counter.create", "counter:a"))
        ok(await owner.call("admin.stop", id="counter:b"))
        store.down = True
        changes = [("admin.token_create", {"name": "bob"}), ("admin.token_revoke", {"name": "ann"}),
                   ("admin.stop", {"id": "counter:a"}), ("admin.release", {"id": "counter:b"}),
                   ("admin.unload", {"id": "counter:a"})]
        for op, args in changes:
            error = refused(await owner.call(op, **args), "unavailable")
            assert error["detail"] == {"store": "down", "stored": "no"}, op
        assert [t.name for t in srv.state.tokens.list()] == ["ann"]
        assert srv.state.tokens.check(ann) is not None
        assert directory.held == {"counter:b"} and directory.alive("counter:a") is not None
        store.down = False
        for op, args in changes:
            ok(await owner.call(op, **args))
        assert srv.state.tokens.check(ann) is None
        assert [t.name for t in srv.state.tokens.list()] == ["bob"]
        assert directory.held == {"counter:a"}
        audit = ok(await owner.call("admin.overview"))["audit"]
        assert [e["type"] for e in audit][::-1] == [
            "world_stopped", "token_created", "token_revoked", "world_stopped",
            "world_released"]  # (counter:a was unloaded by its stop)


async def test_a_revoke_recorded_but_not_written_says_so(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, raw_client(srv, srv.owner_token) as owner:
        ann = srv.state.tokens.create("agent", "ann")
        (tmp_path / "tokens.json.tmp").mkdir()  # where the token files are written first
        error = refused(await owner.call("admin.token_revoke", name="ann"), "unavailable")
        assert re.fullmatch(r"the revoke of 'ann' is in the audit trail, but the token files "
                            r"could not be written \(\[Errno 21\] Is a directory: '.*'\): "
                            r"the token still works; revoke it again", error["message"])
        assert error["detail"] == {"recorded": True, "done": False}
        assert srv.state.tokens.check(ann) is not None
        (tmp_path / "tokens.json.tmp").rmdir()
        assert ok(await owner.call("admin.token_revoke", name="ann"))["revoked"] is True
        audit = ok(await owner.call("admin.overview"))["audit"]
        assert [(e["type"], e["name"]) for e in audit] == [("token_revoked", "ann")] * 2
