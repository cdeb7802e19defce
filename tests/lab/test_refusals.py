"""Every lab op over a real socket with malformed, oversized, unauthorized and stale input:
each refused with its documented code, and nothing changes (the stored stream and the
lab's counts are as they were)."""

from __future__ import annotations

import typing
from pathlib import Path

import attrs
import pytest

from actors.lab.rules import WORLD
from protocol.bounds import bounds_of
from protocol.client import Client, RequestError
from tests.lab.live import GOOD, born, new_lab
from tests.server.ws_harness import error, raw_client, running_server

SPECS = {spec.name: spec for spec in WORLD.ops}


def _fields(spec) -> list[tuple[str, typing.Any, typing.Any]]:
    hints = typing.get_type_hints(spec.args)
    return [(f.name, hints[f.name], bounds_of(f)) for f in attrs.fields(spec.args)]


def required(spec) -> dict:
    """Well-typed values for the fields without a default."""
    out = {}
    for field, (name, tp, _) in zip(attrs.fields(spec.args), _fields(spec), strict=True):
        if field.default is attrs.NOTHING:
            out[name] = True if tp is bool else "x"
    return out


def malformed(spec) -> tuple[dict, str]:
    """Args with one field of the wrong JSON type (or an unknown key), and its path."""
    for name, tp, _ in _fields(spec):
        alts = typing.get_args(tp) or (tp,)
        if str in alts or typing.get_origin(tp) is typing.Literal:
            return {**required(spec), name: 5}, f"args.{name}"
        if int in alts:
            return {**required(spec), name: "5"}, f"args.{name}"
        if bool in alts:
            return {**required(spec), name: 1}, f"args.{name}"
    return {"surplus": 1}, "args.surplus"


def oversized(spec) -> tuple[dict, str] | None:
    """Args with one field past its bound, and its path (None: nothing to oversize)."""
    for name, tp, b in _fields(spec):
        alts = typing.get_args(tp) or (tp,)
        if b is not None and b.length is not None and str in alts:
            return {**required(spec), name: "x" * (b.length + 1)}, f"args.{name}"
        if b is not None and b.hi is not None and int in alts:
            # past the top, unless that is past what JSON holds exactly (then below the bottom)
            past = int(b.hi) + 1 if b.hi < 2**53 - 1 else int(b.lo) - 1
            return {**required(spec), name: past}, f"args.{name}"
    return None


async def snapshot(srv, owner: Client, lab: str) -> tuple:
    return (await srv.state.directory.store.revision(lab),
            await owner.request("lab.info", lab, {}))


async def test_malformed_oversized_and_unauthorized_input_changes_nothing(
        tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner, \
            raw_client(srv, srv.owner_token) as raw_owner, raw_client(srv) as spectator:
        lab = await new_lab(owner, "r")
        await born(owner, lab, 2)
        before = await snapshot(srv, owner, lab)
        for op, spec in sorted(SPECS.items()):
            args, path = malformed(spec)
            bad = error(await raw_owner.call(op, lab, **args))
            assert (bad["code"], bad["detail"].get("path")) == ("bad_request", path), (op, bad)
            if (big := oversized(spec)) is not None:
                args, path = big
                bad = error(await raw_owner.call(op, lab, **args))
                assert (bad["code"], bad["detail"]["path"]) == ("bad_request", path), (op, bad)
            if spec.role == "owner":
                assert error(await spectator.call(op, lab))["code"] == "forbidden", op
            if op != "lab.create":  # which would create it
                assert error(await raw_owner.call(op, "lab:nowhere", **required(spec)))[
                    "code"] == "unknown_actor", op
            assert await snapshot(srv, owner, lab) == before, op


async def test_a_frame_past_the_limit_and_a_bad_token_are_refused(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner, \
            raw_client(srv, srv.owner_token) as raw:
        lab = await new_lab(owner, "big")
        before = await snapshot(srv, owner, lab)
        await raw.send({"id": 9, "op": "lab.birth", "to": lab,
                        "args": {"track": "shader", "code": "x" * 70_000}})
        huge = error(await raw.recv())  # not read, so answered without its id
        assert huge["code"] == "too_large"
        assert await snapshot(srv, owner, lab) == before
        with pytest.raises(RequestError) as err:
            async with Client.connect(srv.ws_url, "pdg_not-a-token"):
                pass
        assert err.value.code == "unauthorized"


async def test_stale_input_for_every_op_is_refused_or_changes_nothing(tmp_path: Path) -> None:
    """What a stale caller sends, op by op: names that are gone, verdicts already given,
    parents no longer proven, directives that exist (the deal windows are in test_live)."""
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, srv.owner_token) as owner, \
            Client.connect(srv.ws_url) as visitor:
        lab = await new_lab(owner, "stale")

        async def refused(c: Client, op: str, args: dict, code: str) -> None:
            before = await snapshot(srv, owner, lab)
            with pytest.raises(RequestError) as err:
                await c.request(op, lab, args)
            assert err.value.code == code, (op, err.value)
            assert await snapshot(srv, owner, lab) == before

        async def no_change(op: str, args: dict) -> dict:
            before = await snapshot(srv, owner, lab)
            reply = await owner.request(op, lab, args)
            assert await snapshot(srv, owner, lab) == before
            return reply

        await refused(owner, "lab.create", {}, "already_exists")
        await refused(owner, "lab.pair", {"track": "shader"}, "no_pair")
        await refused(visitor, "lab.public_pair", {"client_key": "k"}, "no_pair")
        a, b, c = await born(owner, lab, 3)
        for oid in (a, b):
            await owner.request("lab.ok", lab, {"id": oid})
        await owner.request("lab.invalid", lab, {"id": c, "log": "ERROR: first\nsecond"})
        assert not (await no_change("lab.ok", {"id": a}))["changed"]  # proven already
        assert not (await no_change("lab.ok", {"id": c}))["changed"]  # dead
        dead = await no_change("lab.invalid", {"id": c, "log": "ERROR: another"})
        assert (dead["changed"], dead["error"]) == (False, "ERROR: first")  # the first stays
        for op in ("lab.ok", "lab.invalid", "lab.status", "lab.lineage"):
            args = {"id": "s-0000000000000000", **({"log": "x"} if op == "lab.invalid" else {})}
            await refused(owner, op, args, "unknown_organism")
        await refused(visitor, "lab.seen", {"id": a, "client_key": "k", "ok": True},
                      "not_dealt")
        await refused(visitor, "lab.vote", {"pair": "0" * 16, "winner": a, "client_key": "k"},
                      "not_dealt")
        pair = await visitor.request("lab.public_pair", lab, {"client_key": "k"})
        await refused(visitor, "lab.vote", {"pair": pair["pair"], "winner": c,
                                            "client_key": "k"}, "not_in_pair")
        owner_pair = await owner.request("lab.pair", lab, {"track": "shader"})
        await refused(visitor, "lab.vote", {"pair": owner_pair["pair"], "client_key": "k",
                                            "winner": owner_pair["left"]["id"]}, "forbidden")
        await owner.request("lab.invalid", lab, {"id": b, "log": "ERROR: lost its proof"})
        await refused(visitor, "lab.cross", {"a": a, "b": b, "client_key": "k"},
                      "unknown_organism")  # b died since it was proven: not public
        await refused(visitor, "lab.cross", {"a": a, "b": a, "client_key": ""}, "bad_request")
        d1 = await owner.request("lab.directive_add", lab, {
            "text": "Calm and meditative in deep teals, slow soft blobs drifting"})
        await refused(owner, "lab.directive_add", {
            "text": "Calm and meditative in deep teals, slow soft blobs drifting"},
            "already_exists")
        await refused(owner, "lab.directive_add", {"text": "use more uniforms and a while loop"},
                      "bad_directive")
        await refused(owner, "lab.directive_mutate", {"winner": d1["id"], "loser": "d-gone"},
                      "unknown_directive")
        await refused(owner, "lab.directive_mutate", {"winner": d1["id"], "loser": d1["id"]},
                      "bad_directive")
        await refused(owner, "lab.birth", {"track": "shader", "code": GOOD,
                                           "directive": "d-gone"}, "unknown_directive")
        assert (await no_change("lab.directives", {"track": "panel"}))["directives"] == []
        assert (await no_change("lab.gallery", {"limit": 1}))["organisms"] == []
        assert (await no_change("lab.backlog", {"track": "panel"}))["total"] == 0
