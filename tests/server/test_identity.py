"""Identities cannot be borrowed: every anonymous connection is a caller of its own, an
agent belongs to the credential that joined it, only the owner may name another
leaderboard user, and a revoked token ends its live sessions."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from protocol.client import Client
from tests.field_live._live import ready
from tests.server.raw_ws import RawSocket
from tests.server.ws_harness import error, raw_client, result, running_server

FIELD = "field:id"


async def _field(srv) -> None:
    async with Client.connect(srv.ws_url, srv.owner_token) as c:
        await c.request("field.start", FIELD, {"size": 30, "seed": 4})
        await ready(c, "id")


async def test_anonymous_connections_on_an_open_server_are_each_their_own(
        tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as srv:
        await _field(srv)
        async with raw_client(srv) as one, raw_client(srv) as two:
            joined = result(await one.call("field.join", FIELD, name="mine"))
            rev = joined["revision"]
            refused = error(await two.call("field.reveal", FIELD, agent=joined["agent"],
                                           tile=joined["seed_tile"], expected_revision=rev))
            assert refused["code"] == "forbidden"
            assert refused["message"] == (f"agent {joined['agent']} belongs to another caller; "
                                          "write only as the agent you joined")
            view = result(await one.call("field.history", FIELD, revision=rev))["view"]
            names = {a["user"] for a in view["agents"]}
            assert len(names) == 1 and names.pop().startswith("anonymous~")
        # A new connection without the key is a new caller: the agent is not its to use.
        async with raw_client(srv) as again:
            refused = error(await again.call("field.reveal", FIELD, agent=joined["agent"],
                                             tile=joined["seed_tile"], expected_revision=rev))
            assert refused["code"] == "forbidden"


async def test_an_anonymous_caller_comes_back_with_its_key(tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as srv:
        await _field(srv)
        async with Client.connect(srv.ws_url) as first:
            joined = await first.request("field.join", FIELD, {"name": "mine"})
            key, name = first.key, first.hello["name"]
        assert key and name.startswith("anonymous~") and key not in name
        async with Client.connect(srv.ws_url, key=key) as back:
            assert back.hello["name"] == name
            obs = await back.request("field.observe", FIELD, {"agent": joined["agent"]})
            await back.request("field.reveal", FIELD, {
                "agent": joined["agent"], "tile": joined["seed_tile"],
                "expected_revision": obs["revision"]})
        async with raw_client(srv, hello=False) as c:
            await c.send({"op": "hello", "protocol": 1, "key": "short"})
            assert error(await c.recv())["message"].startswith("key: expected the key a hello")


async def test_only_the_owner_may_name_another_leaderboard_user(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        await _field(srv)
        ann = srv.state.tokens.create("agent", "ann")
        async with raw_client(srv, ann) as c, raw_client(srv, srv.owner_token) as owner:
            assert error(await c.call("field.join", FIELD, name="x", user="alice")) == {
                "code": "forbidden", "message": "args.user: only the owner may name another "
                "user than the caller", "detail": {"path": "args.user"}}
            result(await c.call("field.join", FIELD, name="x", user="ann"))  # herself
            result(await c.call("field.join", FIELD, name="y"))  # herself, by default
            result(await owner.call("field.join", FIELD, name="z", user="alice"))
            view = result(await c.call("field.history", FIELD, revision=4))["view"]
            assert [a["user"] for a in view["agents"]] == ["ann", "ann", "alice"]


@pytest.mark.parametrize("how", ["the command line", "the store"])
async def test_a_revoked_token_ends_its_live_sessions(tmp_path: Path, how: str) -> None:
    async with running_server(tmp_path) as srv:
        ann = srv.state.tokens.create("agent", "ann")
        bob = srv.state.tokens.create("agent", "bob")
        sock = await RawSocket.open(srv.port)
        assert (await sock.hello(ann))["ok"]
        async with raw_client(srv, bob) as other:
            if how == "the command line":  # another process rewrites tokens.json
                from server.auth import TokenStore
                assert TokenStore(srv.state.tokens.data_dir).revoke("ann")
            else:
                assert srv.state.tokens.revoke("ann")
            with trio.fail_after(5):
                notice = await sock.recv_json()
            assert notice == {"id": None, "ok": False, "error": {
                "code": "unauthorized", "message": "the token this connection said hello "
                "with was revoked", "detail": {}}}
            assert await sock.close_code() == 1008
            assert result(await other.call("lobby.list")) == {"worlds": [], "total": 0, "offset": 0}  # bob stays
        await sock.aclose()
        assert 'petridish_warnings_total{event="token_revoked"} 1' in srv.state.metrics.render()
