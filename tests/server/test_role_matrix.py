"""The role matrix: every registered op and every MCP tool, sent by each kind of caller,
passes only where docs/protocol.md (and the worlds' pages it points to) allow it. The
callers: a spectator (no token), the agent who created every world, another agent, a
revoked token, the owner, and, on an `--open` server, an anonymous caller. A refused
call is `forbidden` (`unauthorized` for the revoked token) with a structured error, and
changes nothing in the store. The ops come from the registry and the tools from the MCP
server's own list, so ops added later (the owner's console) are covered as they land.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from protocol.client import Client
from protocol.errors import ErrorCode, ProtocolError
from protocol.roles import role_at_least
from protocol.schema import registry_schema
from server import mcp, worlds
from server.budgets import Budgets
from tests.field_live._live import ready
from tests.server import mcp_harness
from tests.server.every_world import create_every_world, targets, valid
from tests.server.raw_ws import RawSocket
from tests.server.role_docs import creator_only, creator_writes, documented
from tests.server.ws_harness import raw_client, result, running_server

NAME = "rm"  # every world of the matrix is `<kind>:rm`
REFUSED = {"forbidden", "unauthorized"}


@attrs.frozen
class Caller:
    """One kind of caller: its token, role, and whether it created the worlds."""

    label: str
    token: str | None
    role: str
    creator: bool = False
    revoked: bool = False

    def refusal(self, role: str, creator_only: bool) -> str | None:
        """The code the docs give this caller for an op of `role` (None: it passes)."""
        if self.revoked:
            return "unauthorized"
        if not role_at_least(self.role, role) or (creator_only and not self.creator):
            return "forbidden"
        return None


def test_every_op_is_documented_with_its_declared_role() -> None:
    docs = documented()
    registry = worlds.registry()
    undocumented = [s.name for s in registry if s.name not in docs]
    assert not undocumented, f"ops the docs do not list with a role: {undocumented}"
    drift = {s.name: (s.role, docs[s.name][0]) for s in registry if docs[s.name][0] != s.role}
    assert not drift, f"declared role != documented role: {drift}"
    assert all(creator_writes().values()), creator_writes()


def _op_args(schema: dict[str, Any], op: str, agent: str, seed_tile: int,
             revision: int) -> dict[str, Any]:
    """Args the converter accepts; a field write names the creator's agent."""
    args = valid(schema["ops"][op]["args"], schema["$defs"])
    if "agent" in args or op in ("field.reveal", "field.commit", "field.retract"):
        args["agent"] = agent
    if op == "field.reveal":
        args["tile"] = seed_tile
    if "expected_revision" in args and op.startswith("field."):
        args["expected_revision"] = revision
    return args


async def _send_all(srv: Any, caller: Caller, frames: list[dict[str, Any]]
                    ) -> list[dict[str, Any]]:
    """Each frame's reply, as `caller`; a revoked token's hello is refused, so each of
    its frames goes on a fresh connection right behind the refused hello."""
    if not caller.revoked:
        async with raw_client(srv, caller.token) as raw:
            return [await raw.call(f["op"], f["to"], **f["args"]) for f in frames]
    replies = []
    for f in frames:
        sock = await RawSocket.open(srv.port)
        await sock.send_json({"op": "hello", "protocol": 1, "token": caller.token})
        await sock.send_json({"id": 1, **f})
        hello = await sock.recv_json()
        assert hello["error"]["code"] == "unauthorized", hello
        code = await sock.close_code()
        assert code == 1008, code  # the op frame behind it was never answered
        replies.append(hello)
        await sock.aclose()
    return replies


async def _tool_calls(srv: Any, caller: Caller, calls: list[tuple[str, dict[str, Any]]]
                      ) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(timeout=30) as http:
        return [await mcp_harness.tool(http, srv.url, name, args, caller.token)
                for name, args in calls]


async def _daily_ready(srv: Any) -> None:
    async with Client.connect(srv.ws_url) as c:
        listed = await c.request("lobby.list", args={"kind": "field"})
        for world in listed["worlds"]:
            if world["id"].startswith("field:day-"):
                await ready(c, world["id"].partition(":")[2])


def _judge(what: str, error: dict[str, Any] | None, code: str | None) -> str | None:
    """What is wrong with a reply whose expected refusal is `code` (None: it passes)."""
    if code is None:
        return None if (error or {}).get("code") not in REFUSED else f"{what}: {error}"
    if error is None:
        return f"{what}: passed, the docs refuse it ({code})"
    structured = (error.get("code") == code and isinstance(error.get("message"), str)
                  and bool(error["message"]) and isinstance(error.get("detail", {}), dict))
    return None if structured else f"{what}: {error}, not {code}"


@pytest.mark.parametrize("open_mode", [False, True], ids=["closed", "open"])
async def test_only_what_the_docs_allow_passes(tmp_path: Path, open_mode: bool,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    docs = documented()
    creates = {w.kind: w.create for w in worlds.worlds()}
    to = targets(NAME)
    budgets = Budgets(hello_failures=10_000, creates_per_hour=1000, live_worlds=1000,
                      cpu_rate=1e6, cpu_rate_agent=1e6, cpu_burst=1e6,
                      cpu_burst_anonymous=1e6)
    async with running_server(tmp_path, open_mode=open_mode, budgets=budgets,
                              rate=1e6, burst=10**6) as srv:
        registry = srv.state.registry  # every op the server serves
        schema = registry_schema(registry)
        tokens = srv.state.tokens
        ann = tokens.create("agent", "ann")
        rex = tokens.create("agent", "rex")
        tokens.revoke("rex")
        callers = [Caller("agent", ann, "agent", creator=True),
                   Caller("another agent", tokens.create("agent", "bob"), "agent"),
                   Caller("revoked token", rex, "agent", revoked=True),
                   Caller("owner", srv.owner_token, "owner")]
        callers.append(Caller("anonymous", None, "agent") if open_mode
                       else Caller("spectator", None, "spectator"))
        await create_every_world(srv, ann, NAME, field_size=24)
        async with raw_client(srv, ann) as c:
            joined = result(await c.call("field.join", to["field"], name="mine"))
        # A kind without a world made here (an owner's console) gets its default actor.
        frames = {s.name: {"op": s.name, "to": to.get(s.kind) or s.default_to
                           or f"{s.kind}:main", "args": _op_args(
            schema, s.name, joined["agent"], joined["seed_tile"], joined["revision"])}
            for s in registry}
        expect = {(c.label, s.name): c.refusal(s.role, creator_only(s, docs, creates.get(s.kind)))
                  for c in callers for s in registry}

        # The tools: which ops each one asks, learned from the creator's calls without
        # changing anything (a write is recorded and refused, not sent).
        asked: list[tuple[str, str]] = []
        ask = mcp.McpCall.ask

        async def spy(self: mcp.McpCall, actor_id: str, op: str, args: Any,
                      **kw: Any) -> Any:
            asked.append((actor_id, op))
            if registry.get(op).role == "spectator":
                return await ask(self, actor_id, op, args, **kw)
            raise ProtocolError(ErrorCode.UNAVAILABLE, "recorded by the test, not sent")

        async with httpx.AsyncClient() as http:
            status, listed = await mcp_harness.rpc(http, srv.url, "tools/list", {},
                                                   srv.owner_token)
        assert status == 200 and listed is not None
        tools = {t["name"]: t for t in listed["result"]["tools"]}
        declared = {t.name: t for w in worlds.worlds() for t in w.tools}
        assert set(tools) == set(declared)
        by_name = {"game_id": NAME, "run_id": NAME, "room": NAME,
                   "agent": joined["agent"], "tile": joined["seed_tile"],
                   "expected_revision": joined["revision"]}
        calls = []
        for name, tool in sorted(tools.items()):
            args = valid(tool["inputSchema"], tool["inputSchema"].get("$defs", {}))
            named = by_name.keys() & tool["inputSchema"].get("properties", {}).keys()
            calls.append((name, {**args, **{k: by_name[k] for k in named}}))
        tool_ops: dict[str, list[tuple[str, str]]] = {}
        with monkeypatch.context() as patched:
            patched.setattr(mcp.McpCall, "ask", spy)
            for name, args in calls:
                asked.clear()
                await _tool_calls(srv, callers[0], [(name, args)])
                tool_ops[name] = list(asked)
        await _daily_ready(srv)  # listing the games started today's field
        specs = {s.name: s for s in registry}
        tool_expect = {(c.label, name): c.refusal(declared[name].role, False) or next(
            (code for _, op in ops if (code := expect[c.label, op])), None)
            for c in callers for name, ops in tool_ops.items()}
        for name, ops in tool_ops.items():
            for _, op in ops:
                assert role_at_least(declared[name].role, specs[op].role), (name, op)

        # Refused calls first, every caller: none changes the store. Then what passes.
        before = await srv.state.directory.store.streams()
        problems = {"bypasses": [], "overrefused": []}
        tally: Counter[str] = Counter()
        for refused in (True, False):
            for c in callers:
                ops = [op for (label, op), code in expect.items()
                       if label == c.label and bool(code) == refused]
                replies = await _send_all(srv, c, [frames[op] for op in ops])
                mine = [(n, a) for n, a in calls if bool(tool_expect[c.label, n]) == refused]
                answers = await _tool_calls(srv, c, mine)
                judged = [_judge(f"{c.label}: {op}", r.get("error"), expect[c.label, op])
                          for op, r in zip(ops, replies, strict=True)]
                judged += [_judge(f"{c.label}: tool {n}", r["error"], tool_expect[c.label, n])
                           for (n, _), r in zip(mine, answers, strict=True)]
                problems["bypasses" if refused else "overrefused"] += filter(None, judged)
                tally[f"{'refused' if refused else 'passed'}"] += len(judged)
            if refused:
                assert await srv.state.directory.store.streams() == before, "a refusal wrote"
    figures = {"callers": [c.label for c in callers], "ops": len(registry),
               "tools": len(tools), "cells": sum(tally.values()), **tally,
               **{k: len(v) for k, v in problems.items()}}
    print(f"\nrole matrix ({'open' if open_mode else 'closed'}): {figures}")
    assert not problems["bypasses"], problems["bypasses"]
    assert not problems["overrefused"], problems["overrefused"]
