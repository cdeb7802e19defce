"""Every op of the puzzle's three worlds over a real socket, refused for malformed, oversized,
unauthorized and stale input with a documented error, and nothing changed; malformed and
huge levels and share links refused with the engine's diagnostic paths, installing nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from actors.puzzle.catalog import ROOM_MAX_THINGS
from protocol.ops import puzzle as ops
from server.auth import TokenStore
from tests.puzzle.boards import OWN_LEVEL, link_of, make_level
from tests.server.ws_harness import Raw, error, raw_client, result, running_server

ROOM, PACK, BOARD = "puzzle:r", "puzzlepack:p", "puzzleboard:main"
MOVE = {"dir": "up", "expected_revision": 1}

# op -> (world, args of a well-formed request): the malformed and oversized variants below
# are made from these.
OPS: dict[str, tuple[str, dict[str, Any]]] = {
    "puzzle.create": (ROOM, {"pack": "starter"}),
    "puzzle.move": (ROOM, MOVE),
    "puzzle.undo": (ROOM, {}),
    "puzzle.reset": (ROOM, {}),
    "puzzle.next": (ROOM, {}),
    "puzzle.select": (ROOM, {"level": "walls"}),
    "puzzle.view": (ROOM, {}),
    "puzzle.hint": (ROOM, {"budget_ms": 100}),
    "puzzle.history": (ROOM, {"move": 0}),
    "puzzle.link": (ROOM, {}),
    "puzzle.leaderboard": (ROOM, {"level": ""}),
    "puzzleboard.level": (BOARD, {"key": "x"}),
    "puzzleboard.users": (BOARD, {"keys": []}),
    "puzzlepack.create": (PACK, {"name": "p"}),
    "puzzlepack.save": (PACK, {"level": OWN_LEVEL}),
    "puzzlepack.remove": (PACK, {"level": "mine"}),
    "puzzlepack.view": (PACK, {}),
    "puzzlepack.level": (PACK, {"level": "mine"}),
    "puzzlepack.check": (PACK, {"level": OWN_LEVEL}),
    "puzzlepack.solve": (PACK, {"level": OWN_LEVEL, "budget_ms": 100}),
}
# A wrong JSON type for one argument of each op with arguments.
MALFORMED: dict[str, dict[str, Any]] = {
    "puzzle.create": {"pack": 7}, "puzzle.move": {"dir": "north", "expected_revision": 1},
    "puzzle.undo": {"expected_revision": "1"}, "puzzle.reset": {"expected_revision": 1.5},
    "puzzle.next": {"expected_revision": True}, "puzzle.select": {"level": ["walls"]},
    "puzzle.view": {"extra": 1}, "puzzle.hint": {"budget_ms": "fast"},
    "puzzle.history": {"move": None}, "puzzle.leaderboard": {"level": {}},
    "puzzle.link": {"level": "x"},
    "puzzleboard.level": {"key": 1}, "puzzleboard.users": {"keys": "x"},
    "puzzlepack.create": {"profile": "baba"}, "puzzlepack.save": {"level": "{}"},
    "puzzlepack.remove": {"level": 3}, "puzzlepack.view": {"x": 0},
    "puzzlepack.level": {}, "puzzlepack.check": {"level": []},
    "puzzlepack.solve": {"level": OWN_LEVEL, "budget_ms": [1]},
}
# One argument past its bound, for each op with a bounded argument.
OVERSIZED: dict[str, dict[str, Any]] = {
    "puzzle.create": {"installed": "x" * (ops.MAX_WORLD_NAME + 1)},
    "puzzle.move": {"dir": "up", "expected_revision": -1},
    "puzzle.undo": {"expected_revision": -1}, "puzzle.reset": {"expected_revision": -5},
    "puzzle.next": {"expected_revision": -2},
    "puzzle.select": {"level": "x" * (ops.MAX_LEVEL_ID + 1)},
    "puzzle.hint": {"budget_ms": ops.MAX_HINT_MS + 1},
    "puzzle.history": {"move": ops.MAX_MOVES + 1},
    "puzzle.leaderboard": {"level": "x" * (ops.MAX_LEVEL_ID + 1)},
    "puzzleboard.level": {"key": "k", "limit": ops.MAX_BOARD_ROWS + 1},
    "puzzleboard.users": {"keys": ["k"] * 257},
    "puzzlepack.create": {"name": "n" * (ops.MAX_PACK_NAME + 1)},
    "puzzlepack.save": {"level": {f"k{i}": 0 for i in range(ops.MAX_LEVEL_FIELDS + 1)}},
    "puzzlepack.remove": {"level": "x" * (ops.MAX_LEVEL_ID + 1)},
    "puzzlepack.level": {"level": "x" * (ops.MAX_LEVEL_ID + 1)},
    "puzzlepack.check": {"level": {f"k{i}": 0 for i in range(ops.MAX_LEVEL_FIELDS + 1)}},
    "puzzlepack.solve": {"level": OWN_LEVEL, "budget_ms": ops.MIN_HINT_MS - 1},
}
WRITES = {"puzzle.move", "puzzle.undo", "puzzle.reset", "puzzle.next", "puzzle.select",
          "puzzle.hint", "puzzlepack.save", "puzzlepack.remove", "puzzlepack.solve"}
STALE = {"puzzle.move": {"dir": "up", "expected_revision": 0}, "puzzle.undo": {"expected_revision": 0},
         "puzzle.reset": {"expected_revision": 0}, "puzzle.next": {"expected_revision": 0},
         "puzzle.select": {"level": "walls", "expected_revision": 0},
         "puzzlepack.save": {"level": OWN_LEVEL, "expected_revision": 9},
         "puzzlepack.remove": {"level": "mine", "expected_revision": 9}}


def outgrown_link() -> str:
    """A 10 KB link of 256 levels of 100 rocks each, written without their facings: 1 MB of
    JSON, which the normalized pack (every facing spelled out) takes past the 1 MiB cap."""
    rocks = make_level(["r" * 64] * 2)
    rocks["objects"] = rocks["objects"][:100]
    for o in rocks["objects"]:
        o["id"] = o["id"][4:]
    del rocks["profile"]
    return link_of(rocks, levels=[{**rocks, "id": str(i)} for i in range(256)])


async def _state(c: Raw) -> tuple[Any, ...]:
    """Everything the refusals must leave alone."""
    room = result(await c.call("puzzle.view", ROOM))
    pack = result(await c.call("puzzlepack.view", PACK))
    board = result(await c.call("puzzleboard.users", BOARD))
    return room, pack, board


def test_the_cases_cover_every_op() -> None:
    names = {spec.name for spec in ops.OPS + ops.BOARD_OPS + ops.PACK_OPS}
    assert set(OPS) == names and set(MALFORMED) == names
    # puzzle.view, puzzle.link and puzzlepack.view take no argument
    assert set(OVERSIZED) == names - {"puzzle.view", "puzzle.link", "puzzlepack.view"}
    revised = {spec.name for spec in ops.OPS + ops.PACK_OPS
               if "expected_revision" in attrs.fields_dict(spec.args)}
    assert set(STALE) == revised and revised <= WRITES


async def test_bad_input_to_every_op_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    tokens = TokenStore(tmp_path)
    ann, bob = tokens.create("agent", "ann"), tokens.create("agent", "bob")
    async with running_server(tmp_path, rate=1e6, burst=10**6) as srv, \
            raw_client(srv, ann) as owner, raw_client(srv, bob) as other, \
            raw_client(srv) as spectator:
        result(await owner.call("puzzle.create", ROOM, pack="starter"))
        result(await owner.call("puzzlepack.create", PACK, name="p"))
        result(await owner.call("puzzlepack.save", PACK, level=OWN_LEVEL))
        before = await _state(spectator)
        codes: dict[str, list[str]] = {}
        for op, (to, args) in OPS.items():
            found = codes.setdefault(op, [])
            bad = error(await owner.call(op, to, **MALFORMED[op]))
            assert bad["code"] == "bad_request" and bad["detail"]["path"].startswith("args"), (
                op, bad)
            found.append(bad["code"])
            if op in OVERSIZED:
                big = error(await owner.call(op, to, **OVERSIZED[op]))
                assert big["code"] == "bad_request" and big["detail"]["path"].startswith(
                    "args."), (op, big)
                found.append(big["code"])
            if op in WRITES | {"puzzle.create", "puzzlepack.create"}:
                role = error(await spectator.call(op, to, **args))
                assert role["code"] == "forbidden" and role["detail"]["required"] == "agent"
                found.append(role["code"])
            if op in WRITES:
                theirs = error(await other.call(op, to, **args))
                assert theirs["code"] == "forbidden" and set(theirs["detail"]) & {
                    "player", "owner"}, (op, theirs)
                found.append(theirs["code"])
            if op in STALE:
                stale = error(await owner.call(op, to, **STALE[op]))
                assert stale["code"] == "stale_revision" and "revision" in stale["detail"], op
                found.append(stale["code"])
        again = error(await owner.call("puzzle.create", ROOM, pack="starter"))
        assert again["code"] == "already_exists"
        assert error(await owner.call("puzzlepack.create", PACK, name="p"))["code"] == (
            "already_exists")
        assert await _state(spectator) == before
        assert all(codes.values())


async def test_malformed_and_huge_levels_and_links_install_nothing(tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as srv, raw_client(srv) as agent:
        frog = make_level(["B=Y..", "b...f"])
        frog["objects"][0]["noun"] = "frog"
        cases = {
            "bad base64": ("pd1.%%%", None, "bad_base64"),
            "frog": (link_of(frog), [{"path": "levels[0].objects[0].noun",
                                      "message": 'unknown noun "frog"'}], "invalid_content"),
            "65 wide": (link_of({**make_level(["b"]), "width": 65}),
                        [{"path": "levels[0].width",
                          "message": "must be an integer from 1 to 64"}], "invalid_content"),
            "profile list": (link_of(make_level(["b"]), profile=[]),
                             [{"path": "profile", "message":
                               "unknown profile [] (supported: classic, keke)"}],
                             "invalid_content"),
            "outgrown": (outgrown_link(), None, "too_large"),
        }
        for name, (link, diagnostics, share) in cases.items():
            for op, to in (("puzzle.create", f"puzzle:{name.replace(' ', '-')}"),
                           ("puzzlepack.create", f"puzzlepack:{name.replace(' ', '-')}")):
                refused = error(await agent.call(op, to, link=link))
                assert refused["code"] == "bad_request", (name, op)
                assert refused["detail"]["path"] == "args.link"
                assert refused["detail"]["share"] == share
                assert refused["detail"].get("diagnostics") == diagnostics
                assert srv.state.directory.alive(to) is None
        crowded = make_level(["b" + "." * 63, "." * 64])
        crowded["objects"] += [{"id": f"r{i}", "noun": "rock", "x": i % 64, "y": 1}
                               for i in range(ROOM_MAX_THINGS)]
        for op, to in (("puzzle.create", "puzzle:crowded"),
                       ("puzzlepack.create", "puzzlepack:crowded")):
            refused = error(await agent.call(op, to, link=link_of(crowded)))
            assert refused["detail"]["diagnostics"][0]["path"] == "levels[0].objects"
        assert await srv.state.directory.store.streams() == {}
        # The editor's path: a pack refuses a huge or malformed level with the level's paths.
        result(await agent.call("puzzlepack.create", "puzzlepack:ed", name="ed"))
        huge = {**OWN_LEVEL, "width": 100}
        for op in ("puzzlepack.save", "puzzlepack.check", "puzzlepack.solve"):
            reply = await agent.call(op, "puzzlepack:ed", level=huge)
            if op == "puzzlepack.check":
                assert result(reply) == {"ok": False, "rules": [], "diagnostics": [
                    {"path": "width", "message": "must be an integer from 1 to 64"}]}
            else:
                refused = error(reply)
                assert refused["code"] == "bad_request"
                assert refused["detail"]["diagnostics"] == [
                    {"path": "width", "message": "must be an integer from 1 to 64"}]
        assert result(await agent.call("puzzlepack.view", "puzzlepack:ed"))["levels"] == []
