"""Field ops end to end over real sockets: races, refusals, death, reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from actors.field import referee
from protocol.client import Client, RequestError
from server.auth import TokenStore
from tests.field_live._live import play_truly, ready, start, tile_cells
from tests.server.ws_harness import running_server
from tests.utf16 import EMOJI, edges

GAME = "ops"


async def _refused(client: Client, op: str, args: dict, code: str, message: str = "") -> dict:
    with pytest.raises(RequestError) as err:
        await client.request(op, f"field:{GAME}", args)
    assert err.value.code == code, err.value
    if message:
        assert err.value.message == message
    return err.value.detail


async def test_stale_revision_race_then_retry(tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as srv, \
            Client.connect(srv.ws_url) as a, Client.connect(srv.ws_url) as b:
        await start(a, GAME, size=30, seed=4)
        ja = await a.request("field.join", f"field:{GAME}", {"name": "a"})
        jb = await b.request("field.join", f"field:{GAME}", {"name": "b"})
        rev = (await a.request("field.observe", f"field:{GAME}", {"agent": ja["agent"]}))["revision"]
        outcomes: dict[str, object] = {}

        async def reveal(c: Client, j: dict) -> None:
            try:
                outcomes[j["agent"]] = await c.request("field.reveal", f"field:{GAME}", {
                    "agent": j["agent"], "tile": j["seed_tile"], "expected_revision": rev})
            except RequestError as e:
                outcomes[j["agent"]] = e

        async with trio.open_nursery() as n:
            n.start_soon(reveal, a, ja)
            n.start_soon(reveal, b, jb)
        errors = [o for o in outcomes.values() if isinstance(o, RequestError)]
        assert len(errors) == 1 and errors[0].code == "stale_revision"
        assert errors[0].detail == {"revision": rev + 1}
        loser = ja if outcomes[ja["agent"]] is errors[0] else jb
        client = a if loser is ja else b
        obs = await client.request("field.observe", f"field:{GAME}", {"agent": loser["agent"]})
        assert obs["revision"] == rev + 1
        done = await client.request("field.reveal", f"field:{GAME}", {
            "agent": loser["agent"], "tile": loser["seed_tile"], "expected_revision": rev + 1})
        assert done["revision"] == rev + 2 and done["givens"]


async def test_bad_input_for_every_op_changes_nothing(tmp_path: Path) -> None:
    tokens = TokenStore(tmp_path)
    alice, bob = tokens.create("agent", "alice"), tokens.create("agent", "bob")
    async with running_server(tmp_path) as srv, Client.connect(srv.ws_url, alice) as c, \
            Client.connect(srv.ws_url, bob) as other, Client.connect(srv.ws_url) as spectator:
        await _refused(c, "field.observe", {}, "unknown_actor",
                       "there is no world 'field:ops'; field.start creates it")
        await _refused(c, "field.start", {"size": 5}, "bad_request",
                       "args.size: must be between 14 and 200")
        # bounds that depend on another arg: the schema cannot state them, the referee does
        await _refused(c, "field.start", {"kind": "field", "chunk": 100, "chunks": 11},
                       "bad_request", "args.chunks: 1..10 chunks of 100 fit the largest canvas")
        await _refused(c, "field.start", {"grow": {"every_s": 60}, "canvas": 50, "chunk": 60},
                       "bad_request", "args.canvas: the canvas side is chunk..1000")
        await _refused(c, "field.start", {"size": "20"}, "bad_request", "args.size: expected int")
        await start(c, GAME, size=20, seed=2)
        await _refused(c, "field.start", {"size": 20}, "already_exists")
        j = await c.request("field.join", f"field:{GAME}", {"name": "alice"})
        agent, seed = j["agent"], j["seed_tile"]
        before = await c.request("field.history", f"field:{GAME}", {"revision": 2})
        rev = 2
        reveal = {"agent": agent, "tile": seed, "expected_revision": rev}
        commit = {"agent": agent, "cells": [[0, 0]], "expected_revision": rev}
        retract = {"agent": agent, "cells": [0], "expected_revision": rev}
        cases = [
            ("field.join", {"name": ""}, "bad_request"),
            ("field.join", {"name": "x", "extra": 1}, "bad_request"),
            ("field.observe", {"agent": "a9"}, "agent"),
            ("field.observe", {"rect": [0, 0, 0, 1]}, "bad_request"),
            ("field.reveal", {**reveal, "tile": 10_000}, "bad_tile"),
            ("field.reveal", {**reveal, "tile": "x"}, "bad_request"),
            ("field.reveal", {**reveal, "expected_revision": 1}, "stale_revision"),
            ("field.reveal", {**reveal, "agent": "a7"}, "agent"),
            ("field.commit", {**commit, "cells": [[0, 2]]}, "bad_cell"),
            ("field.commit", {**commit, "cells": [[0]]}, "bad_cell"),
            ("field.commit", {**commit, "cells": [[0, 1]] * 5000}, "too_large"),
            ("field.commit", {**commit, "intent": "x" * 161}, "bad_request"),
            ("field.commit", {**commit, "expected_revision": 0}, "stale_revision"),
            ("field.retract", {**retract, "cells": [-1]}, "bad_cell"),
            ("field.retract", {**retract, "expected_revision": 9}, "stale_revision"),
            ("field.history", {"revision": 99}, "bad_request"),
            ("field.leaderboard", {"merged": 1}, "bad_request"),
            ("field.rules", {"x": 1}, "bad_request"),
        ]
        for op, args, code in cases:
            await _refused(c, op, args, code)
        await _refused(c, "field.history", {"revision": 3}, "bad_request",
                       "args.revision: must be between 1 and 2, the field's revision now")
        await _refused(c, "field.history", {"revision": 0}, "bad_request",
                       f"args.revision: must be between 1 and {2**53 - 1}")
        # another caller cannot act as alice's agent; a spectator cannot write at all
        for op, args in (("field.reveal", reveal), ("field.commit", commit),
                         ("field.retract", retract)):
            with pytest.raises(RequestError) as err:
                await other.request(op, f"field:{GAME}", args)
            assert err.value.code == "forbidden"
            assert err.value.message == (f"agent {agent} belongs to another caller; write only "
                                         "as the agent you joined")
            with pytest.raises(RequestError) as err:
                await spectator.request(op, f"field:{GAME}", args)
            assert err.value.code == "forbidden"
        # a reveal off the frontier
        far = next(t for t in range(20) if t != seed)
        await _refused(c, "field.reveal", {**reveal, "tile": far}, "not_on_frontier")
        after = await c.request("field.history", f"field:{GAME}", {"revision": 2})
        obs = await c.request("field.observe", f"field:{GAME}", {"agent": agent})
        assert obs["revision"] == rev and after == before
        # and the right call still works
        ok = await c.request("field.reveal", f"field:{GAME}", reveal)
        assert ok["revision"] == rev + 1


async def test_death_over_the_protocol(tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as srv, Client.connect(srv.ws_url) as c:
        await start(c, GAME, size=40, seed=9)
        prober = (await c.request("field.join", f"field:{GAME}", {"name": "probe"}))["agent"]
        honest = (await c.request("field.join", f"field:{GAME}", {"name": "mate"}))["agent"]
        to = f"field:{GAME}"
        solution = (await srv.state.directory.get(to)).state.truth.solution
        everything = await c.request("field.observe", to, {"rect": [0, 0, 40, 40]})
        tiles = {t["id"]: t for t in everything["tiles"]}
        seeds = {a["id"]: tiles[a["seed_tile"]] for a in everything["agents"]}

        def groups(obs: dict) -> dict[str, str]:
            return {a["id"]: a["group"] for a in obs["agents"]}

        # First they play correctly toward each other until their territories merge.
        for _ in range(200):
            obs = await c.request("field.observe", to, {"agent": honest})
            if groups(obs)[honest] == groups(obs)[prober]:
                break
            await play_truly(c, GAME, honest, solution, seeds[prober])
            await play_truly(c, GAME, prober, solution, seeds[honest])
        assert groups(obs)[honest] == groups(obs)[prober], "the two never met"
        dead = None
        for _ in range(400):  # then the oracle probe: unknown cells as 0, then the complements
            obs = await c.request("field.observe", to, {"agent": prober})
            rev = obs["revision"]
            known = {k for k, _ in obs["known"]}
            tiles = {t["id"]: t for t in obs["tiles"]}
            try:
                revealed = [tiles[t] for t in obs["territory"] if tiles[t]["status"] == "revealed"]
                if not revealed:
                    hidden = [t for t in obs["frontier"] if tiles[t]["status"] == "hidden"]
                    await c.request("field.reveal", to, {"agent": prober, "tile": hidden[0],
                                                         "expected_revision": rev})
                    continue
                t = revealed[0]
                cells = [(t["y0"] + ly + dy) * obs["G"] + t["x0"] + lx + dx
                         for lx, ly, w, h in t["rects"] for dy in range(h) for dx in range(w)]
                probe = [[x, 0] for x in sorted(set(cells) - known)]
                r = await c.request("field.commit", to, {"agent": prober, "cells": probe,
                                                         "expected_revision": rev})
                fix = [[x["id"], 1 - x["v"]] for x in r["rejected"]]
                if fix:
                    await c.request("field.commit", to, {"agent": prober, "cells": fix,
                                                         "expected_revision": r["revision"]})
            except RequestError as e:
                assert e.code == "dead", e
                dead = e
                break
        assert dead is not None, "the probe never died"
        obs = await c.request("field.observe", to, {"agent": prober})
        assert obs["health"]["state"] == "dead" and obs["note"].startswith("dead: ")
        rev = obs["revision"]
        for op, args in (("field.reveal", {"tile": 0}), ("field.commit", {"cells": [[0, 0]]}),
                         ("field.retract", {"cells": [0]})):
            with pytest.raises(RequestError) as err:
                await c.request(op, to, {"agent": prober, "expected_revision": rev, **args})
            assert err.value.code == "dead"
            assert err.value.message.startswith(f"Agent {prober} is out for the day")
        # As the seed's referee, the revision first: a stale write of the dead is stale
        with pytest.raises(RequestError) as err:
            await c.request("field.commit", to, {"agent": prober, "cells": [[0, 0]],
                                                 "expected_revision": rev - 1})
        assert err.value.code == "stale_revision"
        # its group mate plays on, on the shared territory
        before = await c.request("field.observe", to, {"agent": honest})
        assert groups(before)[honest] == groups(before)[prober]
        assert before["health"]["state"] == "healthy"
        for _ in range(3):
            await play_truly(c, GAME, honest, solution, seeds[prober])
        after = await c.request("field.observe", to, {"agent": honest})
        assert after["revision"] == rev + 3
        mate = next(a for a in after["agents"] if a["id"] == honest)
        assert mate["health"]["state"] == "healthy"
        board = await c.request("field.leaderboard", to, {})
        assert [r["dead"] for r in board["users"]] == [1]


async def test_generating_then_ready_and_rules(tmp_path: Path) -> None:
    async with running_server(tmp_path, open_mode=True) as srv, Client.connect(srv.ws_url) as c:
        # Two chunks of 40 take the generator ~1 s: the join below comes well within it
        # (one chunk of 20 takes it ~60 ms once warm, no more than a slow fsync of the start).
        await c.request("field.start", "field:g2", {"canvas": 100, "chunk": 40, "chunks": 2,
                                                   "grow": {"every_s": 600}})
        with pytest.raises(RequestError) as err:
            await c.request("field.join", "field:g2", {"name": "early"})
        assert err.value.code == "generating"
        rules = await ready(c, "g2")
        assert rules["grow"] == {"every_s": 600.0} and rules["fog"] is True
        assert rules["text"].startswith("Rules of a mosaic.")


async def test_texts_count_utf16_code_units_as_the_seed_does(tmp_path: Path) -> None:
    """A name of 80 and an intent of 160 characters count as zod does (an emoji is two);
    the model, harness and user a join keeps are cut at 80 units, never inside a pair."""
    to = f"field:{GAME}"
    owner = TokenStore(tmp_path).create("owner", "boss")  # only the owner names another user
    async with running_server(tmp_path) as srv, Client.connect(srv.ws_url, owner) as c:
        await start(c, GAME, size=20, seed=2)
        for name, accepted in edges(referee.MAX_NAME):
            if accepted:
                assert (await c.request("field.join", to, {"name": name}))["agent"]
            else:
                await _refused(c, "field.join", {"name": name}, "bad_request",
                               "args.name: at most 80 characters")
        kept = await c.request("field.join", to, {"name": "kept", "model": "a" * 79 + EMOJI,
                                                  "harness": EMOJI * 41, "user": "u" * 79 + EMOJI})
        seated = (await srv.state.directory.get(to)).state.state.agents[-1]
        assert (seated.id, seated.model, seated.harness, seated.user) == (
            kept["agent"], "a" * 79, EMOJI * 40, "u" * 79)
        rev = (await c.request("field.observe", to, {"agent": kept["agent"]}))["revision"]
        for intent, accepted in edges(referee.MAX_INTENT):
            commit = {"agent": kept["agent"], "cells": [], "intent": intent,
                      "expected_revision": rev}
            if accepted:
                assert (await c.request("field.commit", to, commit))["accepted"] == []
            else:
                await _refused(c, "field.commit", commit, "bad_request",
                               "args.intent: at most 160 characters")


async def test_ignored_cells_are_the_reply_s_alone(tmp_path: Path) -> None:
    """A batch of 4,096 copies of one cell answers 4,095 duplicates, but its stored record,
    its push and the field's history keep none of them (they were several times the
    request's bytes, read by nobody)."""
    async with running_server(tmp_path, open_mode=True) as srv, \
            Client.connect(srv.ws_url) as c, Client.connect(srv.ws_url) as spectator:
        await start(c, GAME, size=20, seed=3)
        to = f"field:{GAME}"
        agent = (await c.request("field.join", to, {"name": "a"}))["agent"]
        actor = await srv.state.directory.get(to)
        solution = actor.state.truth.solution
        await play_truly(c, GAME, agent, solution)  # reveals the seed tile
        obs = await c.request("field.observe", to, {"agent": agent})
        known = {k for k, _ in obs["known"]}
        tile = next(t for t in obs["tiles"] if t["id"] in obs["territory"])
        cell = next(c for c in tile_cells(tile, obs["G"]) if c not in known)
        rev = obs["revision"]
        async with spectator.subscribe(to, since=rev) as sub:
            commit = await c.request("field.commit", to, {
                "agent": agent, "expected_revision": rev,
                "cells": [[cell, int(solution[cell])]] * referee.MAX_BATCH})
            retract = await c.request("field.retract", to, {
                "agent": agent, "expected_revision": rev + 1,
                "cells": [cell] * referee.MAX_BATCH})
            pushed = []
            with trio.fail_after(10):
                while len(pushed) < 2:
                    pushed += (await sub.__anext__()).data
        duplicates = [{"id": cell, "reason": "duplicate"}] * (referee.MAX_BATCH - 1)
        assert [a["id"] for a in commit["accepted"]] == [cell]
        assert commit["ignored"] == duplicates
        assert retract == {"revision": rev + 2, "retracted": [cell], "ignored": duplicates}
        stored = [e.data for e in await srv.state.directory.store.read(to, after=rev)]
        assert [(e["kind"], e["ignored"]) for e in stored] == [("commit", []), ("retract", [])]
        assert pushed == stored
        assert all(len(json.dumps(e)) < 1000 for e in stored)
        kept = actor.state.history.events[-2:]
        assert [(type(e).__name__, e.ignored) for e in kept] == [("CommitEvent", ()),
                                                                  ("RetractEvent", ())]


async def test_a_summary_held_back_reaches_the_lobby_without_another_message(
        tmp_path: Path) -> None:
    """Play moves the figures faster than the lobby hears them (LOBBY_EVERY); once play
    stops, the last summary still reaches it, with no message sent to the field after."""
    from actors.field import rules

    async with running_server(tmp_path, open_mode=True) as srv, Client.connect(srv.ws_url) as c:
        await start(c, GAME, size=20, seed=3)
        to = f"field:{GAME}"
        agent = (await c.request("field.join", to, {"name": "a"}))["agent"]
        actor = await srv.state.directory.get(to)
        for _ in range(4):  # the join was told at once; these moves come within the window
            await play_truly(c, GAME, agent, actor.state.truth.solution)
        latest = rules.summary(actor.state)

        async def listed() -> dict:
            worlds = (await c.request("lobby.list", args={"kind": "field"}))["worlds"]
            return next(w["summary"] for w in worlds if w["id"] == to)

        assert await listed() != latest
        with trio.fail_after(10):
            while await listed() != latest:
                await trio.sleep(0.2)
        assert rules.summary(actor.state) == latest
