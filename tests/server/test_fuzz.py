"""Hostile frames derived from the protocol's own JSON Schema (`petridish protocol-schema`):
for every op and every field a wrong type, an out-of-range number, an oversized text or
list, a lone surrogate, an unknown or a missing key, deep nesting, oversized frames and
bad envelopes. From each role, at least 5,000 of them: every one answered with an error,
no connection dropped, no state changed, no stack trace or Python name in any reply."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from protocol.schema import registry_schema
from server import worlds
from server.budgets import Budgets
from tests.server.every_world import create_every_world, resolve, targets, valid
from tests.server.ws_harness import Raw, raw_client, result, running_server

FRAMES_PER_ROLE = 5000
WINDOW = 64  # frames in flight at once (the server admits 32 and reads on as they finish)
TARGETS = targets("fz")
LEAKS = re.compile(r"Traceback|File \"|NoneType|object at 0x|<class|Error\(|\bdict\b|"
                   r"\bstr\b|\bint object\b|cattrs|attrs")


def _wrong(schema: dict[str, Any], defs: dict[str, Any]) -> list[Any]:
    """Values of a JSON type `schema` does not admit."""
    schema = resolve(schema, defs)
    kinds = set()
    for alt in schema.get("anyOf", [schema]):
        alt = resolve(alt, defs)
        kinds.add("enum" if "enum" in alt else alt.get("type"))
    # One value of each JSON type; a field admitting numbers admits integers too.
    of_type = {"integer": 7, "number": 1.5, "string": "s", "boolean": True, "array": [1],
               "object": {"a": 1}, "null": None}
    admitted = set(kinds) | ({"integer"} if "number" in kinds else set())
    out = [v for k, v in of_type.items() if k not in admitted]
    if "enum" in kinds:
        out = [v for v in out if not isinstance(v, str)] + ["not-a-choice"]
    return out


def _out_of_bounds(schema: dict[str, Any], defs: dict[str, Any]) -> list[Any]:
    """Values of the right type beyond the schema's bounds, and numbers no client holds."""
    schema = resolve(schema, defs)
    out: list[Any] = []
    for alt in schema.get("anyOf", [schema]):
        alt = resolve(alt, defs)
        if alt.get("type") in ("integer", "number"):
            if "maximum" in alt:
                out.append(alt["maximum"] + 1)
            if "minimum" in alt:
                out.append(alt["minimum"] - 1)
            out += [2**60, -(2**60), "1e400"]
        elif alt.get("type") == "string":
            if "maxLength" in alt:
                out.append("x" * (alt["maxLength"] + 1))
            out.append("\ud800")
            out.append("bad\udc00text")
            out.append("nul\x00")
        elif alt.get("type") == "array" and "maxItems" in alt:
            item = valid(alt.get("items", {}), defs)
            out.append([item] * (alt["maxItems"] + 1))
    return out


def _defects(schema_doc: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(op, to, args) triples, each with exactly one defect the converter must refuse."""
    defs = schema_doc["$defs"]
    out: list[tuple[str, str, Any]] = []
    for op, spec in sorted(schema_doc["ops"].items()):
        to = TARGETS[op.partition(".")[0]]
        args_schema = resolve(spec["args"], defs)
        base = valid(args_schema, defs)
        out.append((op, to, {**base, "zz_unknown": 1}))
        for bad in (5, "x", [], None):
            out.append((op, to, bad))
        for key in args_schema.get("required", []):
            out.append((op, to, {k: v for k, v in base.items() if k != key}))
        for key, prop in args_schema.get("properties", {}).items():
            for value in _wrong(prop, defs) + _out_of_bounds(prop, defs):
                out.append((op, to, {**base, key: value}))
            out.append((op, to, {**base, key: NESTED}))
        out.append((op, to.replace(":", "::"), base))  # a malformed actor id
        out.append((op, "nokind:x", base))
        other = "counter:fz" if not op.startswith("counter") else "field:fz"
        out.append((op, other, base))  # a world of another kind
        out.append((op.replace(".", ".no_"), to, base))  # an unknown op
    return out


NESTED = "__nested__"  # written as 3,000 nested lists (json.dumps would overflow first)


def _frame(rid: int, op: str, to: str, args: Any) -> str:
    text = json.dumps({"id": rid, "op": op, "to": to, "args": args})
    text = text.replace(f'"{NESTED}"', "[" * 3000 + "1" + "]" * 3000)
    return text.replace('"1e400"', "1e400")  # a number JSON writes, but no double holds


def _frames(defects: list[tuple[str, str, Any]], rng: random.Random) -> Iterator[str]:
    rid = 0
    while True:
        for op, to, args in rng.sample(defects, len(defects)):
            rid += 1
            yield _frame(rid, op, to, args)
            if rid % 250 == 0:  # a frame over max_frame, and one that is not JSON
                rid += 1
                yield json.dumps({"id": rid, "op": op, "to": to, "args": {"n": "x" * 70000}})
                rid += 1
                yield f'{{"id": {rid}, "op": ' + "[" * 50 + "'"


async def _hammer(raw: Raw, frames: Iterator[str], count: int) -> list[dict[str, Any]]:
    """Send `count` frames, WINDOW at a time, and return every reply."""
    replies: list[dict[str, Any]] = []
    while len(replies) < count:
        batch = [next(frames) for _ in range(min(WINDOW, count - len(replies)))]
        for text in batch:
            await raw.send(text)
        for _ in batch:
            replies.append(await raw.recv())
    return replies


async def _state(srv: Any) -> dict[str, int]:
    return await srv.state.directory.store.streams()


async def test_schema_driven_hostile_frames_from_every_role_change_nothing(
        tmp_path: Path) -> None:
    schema_doc = registry_schema(worlds.registry())
    defects = _defects(schema_doc)
    assert len(defects) > 200
    # The frame rate and CPU budgets are lifted: 5,000 frames as fast as a socket takes
    # them are what this test sends, and their refusal is tests/server/test_budgets.py's.
    budgets = Budgets(cpu_rate=1e6, cpu_rate_agent=1e6, cpu_burst=1e6,
                      cpu_burst_anonymous=1e6)
    settings = {"rate": 1e6, "burst": 10**6, "budgets": budgets}
    async with running_server(tmp_path, **settings) as srv:
        tokens = srv.state.tokens
        roles = {"anonymous spectator": None, "another agent": tokens.create("agent", "bob"),
                 "agent": tokens.create("agent", "ann"), "owner": srv.owner_token}
        await create_every_world(srv, roles["agent"], "fz")
        before = await _state(srv)
        rng = random.Random(7)
        for role, token in roles.items():
            async with raw_client(srv, token) as raw:
                replies = await _hammer(raw, _frames(defects, rng), FRAMES_PER_ROLE)
                # still connected and answering after all that
                assert result(await raw.call("counter.get", "counter:fz"))["revision"] == 1
            accepted = [r for r in replies if r.get("ok")]
            assert not accepted, f"{role}: hostile frames were accepted: {accepted[:3]}"
            assert all("error" in r for r in replies), role
            leaks = [r["error"]["message"] for r in replies
                     if LEAKS.search(r["error"]["message"])]
            assert not leaks, f"{role}: replies name Python internals: {sorted(set(leaks))[:5]}"
            assert {r["error"]["code"] for r in replies} <= {
                "bad_request", "too_large", "unknown_op", "unknown_actor", "forbidden",
                "unauthorized"}, role
        assert await _state(srv) == before
        assert all(s.restarts == 0 for s in srv.state.directory.live())
