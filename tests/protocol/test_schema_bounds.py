"""The schema states the bounds the server enforces (docs/protocol.md: every number and
text of an op's args is bounded, `minimum`/`maximum`/`maxLength` in `petridish
protocol-schema`, `minLength` for a text that may not be empty).

Every number and text that the schema of an op's args bounds (at any depth: `grow.every_s`,
`rect[0]`, `answers.world`) is sent to a real server, over the websocket, to a world of
every kind, just outside and just inside each bound:

- just outside is refused `bad_request` naming that arg's path (`detail.path`);
- just inside is not refused `bad_request` naming that arg (nor the arg holding it), so the
  server refuses nothing the schema admits: an arg the server bounds tighter (or bounds
  where the schema does not) fails here. Every `bad_request` an inside probe meets names a
  path, so a refusal that does not say its arg cannot hide one.

The probes' other args are a base the op accepts or refuses for a reason other than a
malformed arg (checked first); a write's `expected_revision` is the world's revision at
the time and a field write's `agent` one that joined, so the write reaches the checks
behind them (a probe of `expected_revision` itself is stale, but for the one that
matches). An inside probe can only see the checks the op reaches:
the ops that create a world refuse `already_exists` first, so `field.start` is checked in
process as well (`test_field_start_plans_every_value_its_schema_admits`: the converter and
`plan_start`, what the actor runs); the other create ops' worlds are made fresh for each
inside probe. `UNREACHABLE` lists the inside probes the server refuses for a reason the
schema cannot say (a bound that depends on the world's state, a text's form), each with
why.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from actors.field import live
from protocol.convert import structure
from protocol.errors import ProtocolError
from protocol.jsontext import MAX_EXACT_INT
from protocol.ops import field as field_ops
from protocol.schema import registry_schema
from server import worlds
from server.budgets import Budgets
from tests.ecosystem.live import CHANGE, SELF_A
from tests.puzzle.boards import OWN_LEVEL
from tests.server.every_world import create_every_world, resolve, targets, valid
from tests.server.ws_harness import Raw, raw_client, result, running_server

NAME = "sb"  # every world of the test is `<kind>:sb`
TARGETS = targets(NAME)
# Ops whose inside probes each go to a new world (the existing one answers already_exists
# before it looks at the args); field.start is checked in process instead (generating a
# field of the largest settings takes seconds of both cores).
FRESH = {"ecosystem.create", "lab.create", "puzzle.create", "puzzlepack.create"}
IN_PROCESS = {"field.start"}

# Args that make the op reach its checks (the rest: the schema's plain values, `valid`).
BASE: dict[str, dict[str, Any]] = {
    "field.observe": {"rect": [0, 0, 1, 1]},
    "field.join": {"name": "probe"},
    "lobby.create": {"kind": "counter", "name": "probe"},
    "ecosystem.create": {"answers": {"world": "w", "threat": "t", "reward": "r"}, "size": 16},
    "ecosystem.control": {"action": "pause"},
    "ecosystem.patch": {"patch": SELF_A, "expected_graph_version": 1},
    "ecosystem.schedule": {"change": CHANGE},
    "admin.stop": {"id": "counter:nothing"},
    "admin.unload": {"id": "counter:nothing"},
    "admin.release": {"id": "counter:nothing"},
    "admin.token_create": {"name": "probe"},
    "puzzle.hint": {"budget_ms": 100},
    "puzzle.select": {"level": "walls"},
    "puzzlepack.check": {"level": OWN_LEVEL},
    "puzzlepack.save": {"level": OWN_LEVEL},
    "puzzlepack.solve": {"level": OWN_LEVEL, "budget_ms": 100},
    "puzzlepack.level": {"level": OWN_LEVEL["id"]},
    "puzzlepack.remove": {"level": OWN_LEVEL["id"], "expected_revision": 0},  # stale: kept
    "lab.vote": {"client_key": "probe"},  # a visitor's vote names its key
}

# The read that answers a world's revision now, by kind (for the writes' expected_revision).
REVISION_READ = {"field": ("field.observe", {"rect": [0, 0, 1, 1]}),
                 "puzzle": ("puzzle.view", {}), "puzzlepack": ("puzzlepack.view", {})}

# A text of n characters of the form the server reads in the arg (default "x" * n).
FILL: dict[tuple[str, str], Callable[[int], str]] = {
    ("lobby.create", "args.name"): lambda n: "n" * n,
    ("admin.token_create", "args.name"): lambda n: "t" * n,
}

# (op, path, bound) -> why the inside probe at that bound is refused, naming the arg, by a
# check the schema cannot state: a bound that moves with the world's state, a text that
# must name something that exists or have a form. bound: "lo", "hi", "min_len",
# "max_len", "empty" (a text without minLength sent empty), "no_lo", "no_hi" (a number
# without a minimum or maximum sent the least or greatest integer a frame holds).
_WORLD_ID = "a world of this server: `kind:name` of a kind it has (none is 32 letters)"
_LEVEL = "names a level of the pack"
_LINK = "a share link: 'pd1.' and a packed pack"
UNREACHABLE: dict[tuple[str, str, str], str] = {
    ("field.history", "args.revision", "hi"): "at most the field's revision now (it grows)",
    ("field.observe", "args.rect[0]", "hi"): "x is within the field's side G (it grows)",
    ("field.observe", "args.rect[1]", "hi"): "y is within the field's side G (it grows)",
    **{(f"admin.{op}", "args.id", bound): _WORLD_ID
       for op in ("release", "stop", "unload") for bound in ("min_len", "max_len")},
    ("lobby.create", "args.kind", "min_len"): "a kind of world this server has",
    ("lobby.create", "args.kind", "max_len"): "a kind of world this server has",
    ("puzzle.create", "args.pack", "empty"): "names a bundled pack",
    ("puzzle.create", "args.pack", "max_len"): "names a bundled pack",
    ("puzzle.create", "args.level", "max_len"): _LEVEL,
    ("puzzle.create", "args.link", "max_len"): _LINK,
    ("puzzle.create", "args.installed", "max_len"): "names a pack world that exists",
    ("puzzle.history", "args.move", "hi"): "at most the moves made so far on the level",
    ("puzzle.leaderboard", "args.level", "max_len"): _LEVEL,
    ("puzzle.select", "args.level", "empty"): _LEVEL,
    ("puzzle.select", "args.level", "max_len"): _LEVEL,
    ("puzzlepack.create", "args.name", "empty"): "a new pack needs a name (one from a link "
                                                 "does not: it depends on `link`)",
    ("puzzlepack.create", "args.link", "max_len"): _LINK,
    ("puzzlepack.level", "args.level", "empty"): _LEVEL,
    ("puzzlepack.level", "args.level", "max_len"): _LEVEL,
    ("puzzlepack.remove", "args.level", "empty"): _LEVEL,
    ("puzzlepack.remove", "args.level", "max_len"): _LEVEL,
    **{("lab.birth", f"args.{arg}", bound): "a birth without code is a grammar child, which "
       "takes no title or directive (it depends on `code`)"
       for arg in ("title", "directive") for bound in ("empty", "max_len")},
    ("lab.vote", "args.client_key", "empty"): "a visitor's vote names its client key (the "
                                               "owner's arena may leave it empty)",
}


@attrs.frozen
class Bound:
    """One bounded number or text of an op's args: its path below `args` and its bounds."""

    op: str
    segs: tuple[str | int, ...]
    kind: str  # "integer", "number" or "string"
    lo: float | None = None
    hi: float | None = None
    min_len: int | None = None
    max_len: int | None = None

    @property
    def path(self) -> str:
        return "args" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in self.segs)

    def probes(self) -> Iterator[tuple[str, Any, bool]]:
        """(bound, value, inside) pairs: just outside and just inside each bound."""
        if self.kind in ("integer", "number"):
            if self.lo is not None:
                yield "lo", self.lo - 1, False
                yield "lo", self.lo, True
            else:  # no minimum: the least integer a frame holds is admitted
                yield "no_lo", -MAX_EXACT_INT, True
            if self.hi is not None:
                yield "hi", self.hi + 1, False
                yield "hi", self.hi, True
            else:
                yield "no_hi", MAX_EXACT_INT, True
            return
        fill = FILL.get((self.op, self.path), lambda n: "x" * n)
        if self.min_len is not None:
            yield "min_len", "x" * (self.min_len - 1), False
            yield "min_len", fill(self.min_len), True
        else:  # no minLength: the empty text is admitted
            yield "empty", "", True
        if self.max_len is not None:
            yield "max_len", "x" * (self.max_len + 1), False
            yield "max_len", fill(self.max_len), True


def bounds_in(schema: dict[str, Any], defs: dict[str, Any], op: str,
              segs: tuple[str | int, ...] = ()) -> Iterator[Bound]:
    """Every bounded number and text in `schema`, at any depth."""
    schema = resolve(schema, defs)
    for alt in schema.get("anyOf", [schema]):
        alt = resolve(alt, defs)
        kind = alt.get("type")
        if kind in ("integer", "number") and ({"minimum", "maximum"} & set(alt)):
            yield Bound(op, segs, kind, lo=alt.get("minimum"), hi=alt.get("maximum"))
        elif kind == "string" and ({"minLength", "maxLength"} & set(alt)):
            yield Bound(op, segs, kind, min_len=alt.get("minLength"),
                        max_len=alt.get("maxLength"))
        elif kind == "object":
            for key, prop in alt.get("properties", {}).items():
                yield from bounds_in(prop, defs, op, (*segs, key))
            if isinstance(alt.get("additionalProperties"), dict):
                yield from bounds_in(alt["additionalProperties"], defs, op, (*segs, "k"))
        elif kind == "array":
            if "prefixItems" in alt:
                for i, item in enumerate(alt["prefixItems"]):
                    yield from bounds_in(item, defs, op, (*segs, i))
            elif "items" in alt:
                yield from bounds_in(alt["items"], defs, op, (*segs, 0))


def put(value: Any, schema: dict[str, Any], defs: dict[str, Any],
        segs: tuple[str | int, ...], leaf: Any) -> Any:
    """`value` (a JSON value of `schema`, or None) with `leaf` at `segs`, the containers on
    the way made from the schema where `value` has none."""
    if not segs:
        return leaf
    schema = resolve(schema, defs)
    want = "object" if isinstance(segs[0], str) else "array"
    alt = next(resolve(a, defs) for a in schema.get("anyOf", [schema])
               if resolve(a, defs).get("type") == want)
    if want == "object":
        out = dict(value) if isinstance(value, dict) else valid(alt, defs)
        key = segs[0]
        sub = alt.get("properties", {}).get(key, alt.get("additionalProperties", {}))
        out[key] = put(out.get(key), sub, defs, segs[1:], leaf)
        return out
    i = segs[0]
    if isinstance(value, list):
        out = list(value)
    elif "prefixItems" in alt:
        out = [valid(s, defs) for s in alt["prefixItems"]]
    else:
        out = [valid(alt["items"], defs)]
    sub = alt["prefixItems"][i] if "prefixItems" in alt else alt["items"]
    out[i] = put(out[i], sub, defs, segs[1:], leaf)
    return out


def _schema() -> tuple[dict[str, Any], dict[str, Any]]:
    doc = registry_schema(worlds.registry())
    return doc, doc["$defs"]


def _base(op: str, args_schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    return {**valid(args_schema, defs), **copy.deepcopy(BASE.get(op, {}))}


def all_bounds() -> list[Bound]:
    doc, defs = _schema()
    return [b for op, spec in sorted(doc["ops"].items())
            for b in bounds_in(spec["args"], defs, op)]


def _names(error: dict[str, Any], path: str) -> bool:
    """Whether a refusal names `path` or an arg that holds it."""
    at = error.get("detail", {}).get("path")
    return isinstance(at, str) and (path == at or path.startswith((f"{at}.", f"{at}[")))


def test_every_bounded_arg_is_probed() -> None:
    """The probes cover the schema's every bounded number and text (and the field ops that
    the review found loose); the exceptions name bounds that exist."""
    bounds = all_bounds()
    assert len(bounds) > 100
    paths = {(b.op, b.path) for b in bounds}
    for op, path in [("field.join", "args.name"), ("field.start", "args.chunk"),
                     ("field.start", "args.grow.every_s"), ("field.observe", "args.rect[3]")]:
        assert (op, path) in paths
    probed = {(b.op, b.path, bound) for b in bounds for bound, _, inside in b.probes()
              if inside}
    assert set(UNREACHABLE) <= probed
    assert {(op, path) for op, path in FILL} <= paths
    assert set(BASE) <= set(_schema()[0]["ops"])


# The bounds the review found the schema to leave looser than the server, by the constants
# the server checks (protocol/ops/field.py).
FIELD_BOUNDS = {
    ("field.join", "args.name"): {"min_len": 1, "max_len": field_ops.MAX_NAME},
    ("field.start", "args.chunk"): {"lo": field_ops.MIN_CHUNK, "hi": field_ops.MAX_CHUNK},
    ("field.start", "args.chunks"): {"lo": 1, "hi": field_ops.MAX_CANVAS // field_ops.MIN_CHUNK},
    ("field.start", "args.size"): {"lo": field_ops.MIN_SIZE, "hi": field_ops.MAX_SIZE},
    ("field.start", "args.canvas"): {"lo": field_ops.MIN_CHUNK, "hi": field_ops.MAX_CANVAS},
    ("field.start", "args.depth"): {"lo": 0, "hi": field_ops.MAX_DEPTH},
    ("field.history", "args.revision"): {"lo": 1, "hi": field_ops.MAX_REVISION},
}


@pytest.mark.parametrize(("key", "expected"), FIELD_BOUNDS.items())
def test_the_field_schema_states_the_bounds_the_referee_checks(
        key: tuple[str, str], expected: dict[str, int]) -> None:
    found = {(b.op, b.path): b for b in all_bounds()}[key]
    assert {k: getattr(found, k) for k in expected} == expected


def test_field_start_plans_every_value_its_schema_admits() -> None:
    """What the actor runs on a `field.start` (the converter, then `plan_start`), for every
    bounded arg just outside (refused naming it) and just inside (planned). The base is a
    growing field of one chunk of the smallest side on the largest canvas, where every
    value the schema admits fits the bounds that depend on another arg (a canvas of at
    least the chunk, at most canvas // chunk chunks); a scatter field for its size."""
    doc, defs = _schema()
    schema = doc["ops"]["field.start"]["args"]
    bounds = list(bounds_in(schema, defs, "field.start"))
    assert {b.path for b in bounds} == {"args.seed", "args.size", "args.canvas", "args.chunks",
                                        "args.chunk", "args.depth", "args.grow.every_s"}
    growing = {"grow": {"every_s": 600}, "canvas": field_ops.MAX_CANVAS,
               "chunk": field_ops.MIN_CHUNK, "chunks": 1}
    failures = []
    for b in bounds:
        for bound, value, inside in b.probes():
            base = {"size": field_ops.MIN_SIZE} if b.path == "args.size" else growing
            args = put(base, schema, defs, b.segs, value)
            try:
                a = structure(args, field_ops.StartArgs)
                live.plan_start(a.seed, a.size, a.canvas, a.chunks, a.chunk, a.guess,
                                a.depth, a.grow.every_s if a.grow else None, a.fog, a.kind)
            except ProtocolError as exc:
                if inside or (exc.code, exc.detail.get("path")) != ("bad_request", b.path):
                    failures.append(f"{b.path}={value!r} ({bound}): {exc.code} {exc}")
            except live.StartError as exc:
                failures.append(f"{b.path}={value!r} ({bound}): plan_start refused: {exc}")
            else:
                if not inside:
                    failures.append(f"{b.path}={value!r} ({bound}): planned")
    assert not failures, "\n".join(failures)


# ---- over the websocket ------------------------------------------------------------------


async def _call(raw: Raw, op: str, to: str, args: Any) -> dict[str, Any]:
    """One request's reply (a frame the server could not read is answered with id null)."""
    rid, raw.next_id = raw.next_id, raw.next_id + 1
    await raw.send({"id": rid, "op": op, "to": to, "args": args})
    while True:
        reply = await raw.recv(timeout=30.0)
        if reply.get("id") in (rid, None) and "ok" in reply:
            return reply


async def _live(raw: Raw, op: str, to: str, args: dict[str, Any], probed: str,
                agent: dict[str, Any]) -> dict[str, Any]:
    """`args` with the world's revision now as `expected_revision` and, for a field write,
    the joined `agent`, unless the probe is of that arg."""
    kind = to.partition(":")[0]
    out = dict(args)
    if "expected_revision" in args and probed != "args.expected_revision" and \
            kind in REVISION_READ:
        read, read_args = REVISION_READ[kind]
        out["expected_revision"] = result(await _call(raw, read, to, read_args))["revision"]
    if op in ("field.reveal", "field.commit", "field.retract") and probed != "args.agent":
        out["agent"] = agent["agent"]
    return out


def _refused_outside(err: dict[str, Any] | None, b: Bound) -> bool:
    """Whether `err` is the refusal of a value just outside a bound of `b`: bad_request
    naming its path (the frame's own refusal, for an integer no JSON reader holds exactly)."""
    if err is None or err["code"] != "bad_request":
        return False
    return err.get("detail", {}).get("path") == b.path


async def test_every_bound_in_the_schema_is_the_servers(tmp_path: Path) -> None:
    doc, defs = _schema()
    budgets = Budgets(cpu_rate=1e6, cpu_rate_agent=1e6, cpu_burst=1e6,
                      cpu_burst_anonymous=1e6, creates_per_hour=10**6, live_worlds=10**6,
                      joins_per_hour=10**6)
    fresh = itertools.count()
    failures: list[str] = []
    # a frame may hold the longest text (a share link of 65,536 characters) and more
    settings = {"rate": 1e6, "burst": 10**6, "budgets": budgets, "max_frame": 2**18}
    async with running_server(tmp_path, **settings) as srv:
        agent = srv.state.tokens.create("agent", "ann")
        await create_every_world(srv, agent, NAME, field_size=24)
        async with raw_client(srv, agent) as ann:  # a level for the pack's ops to name
            result(await _call(ann, "puzzlepack.save", TARGETS["puzzlepack"], {"level": OWN_LEVEL}))
            writer = result(await _call(ann, "field.join", TARGETS["field"], {"name": "writer"}))
        BASE["field.reveal"] = {"tile": writer["seed_tile"]}  # hidden, on its frontier
        async with raw_client(srv, agent) as ann, raw_client(srv, srv.owner_token) as owner:
            for op, spec in sorted(doc["ops"].items()):
                bounds = list(bounds_in(spec["args"], defs, op))
                if not bounds:
                    continue
                raw = owner if spec["role"] == "owner" else ann
                to = TARGETS[op.partition(".")[0]]
                base = _base(op, spec["args"], defs)
                first = await _call(raw, op, to, await _live(raw, op, to, base, "", writer))
                if not first["ok"] and first["error"]["code"] == "bad_request":
                    failures.append(f"{op}: the base {base} is refused: {first['error']}")
                    continue
                for b in bounds:
                    for bound, value, inside in b.probes():
                        if op in IN_PROCESS and inside:
                            continue
                        at = f"{op} {b.path}={str(value)[:40]!r} ({bound}, " \
                             f"{'inside' if inside else 'outside'})"
                        target = to
                        if op in FRESH and inside:
                            target = f"{to.partition(':')[0]}:{NAME}{next(fresh)}"
                        args = put(base, spec["args"], defs, b.segs, value)
                        if inside:
                            args = await _live(raw, op, target, args, b.path, writer)
                        reply = await _call(raw, op, target, args)
                        err = None if reply["ok"] else reply["error"]
                        if not inside:
                            if not _refused_outside(err, b):
                                failures.append(f"{at}: {err or 'accepted'}")
                            continue
                        if err is None or err["code"] != "bad_request":
                            continue
                        known = UNREACHABLE.get((op, b.path, bound))
                        if "path" not in err.get("detail", {}):
                            failures.append(f"{at}: a bad_request without a path: {err}")
                        elif _names(err, b.path) and known is None:
                            failures.append(f"{at}: refused though the schema admits it: {err}")
                        elif known is not None and not _names(err, b.path):
                            failures.append(f"{at}: listed as unreachable, not refused: {err}")
            assert result(await _call(ann, "counter.get", TARGETS["counter"], {}))
    assert not failures, "\n".join(failures)
