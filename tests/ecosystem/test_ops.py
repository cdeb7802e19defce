"""Every ecosystem op over a real socket with malformed, oversized, unauthorized and stale
input: each answered with its documented code, and the run unchanged (view and stream)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors.ecosystem.export import parse_export, record_of_export
from actors.ecosystem.replay import replay
from actors.ecosystem.rules import MAX_CONTROLS
from actors.ecosystem.setup import MAX_ANSWER, hash_setup_request
from protocol.client import Client, RequestError
from protocol.ops.ecosystem import OPS
from tests.ecosystem.live import CHANGE, POND, SELF_A, SIZE, agent_tokens
from tests.server.ws_harness import running_server
from tests.utf16 import edges

RUN = "ecosystem:ops"

# (op, args, who sends it, expected code, message or None); "who": owner, other (an agent
# that does not own the run) or spectator (no token). The run is paused at generation 3.
CASES: list[tuple[str, str, dict[str, Any], str, str, str | None]] = [
    # malformed
    ("malformed", "ecosystem.create", {"answers": {"world": 1, "threat": "t", "reward": "r"}},
     "owner", "bad_request", "args.answers.world: expected string"),
    ("malformed", "ecosystem.control", {"action": "rewind"}, "owner", "bad_request", None),
    ("malformed", "ecosystem.patch", {"patch": SELF_A, "expected_graph_version": "1"},
     "owner", "bad_request", "args.expected_graph_version: expected int"),
    ("malformed", "ecosystem.patch", {"patch": {**SELF_A, "pair": "A-B"},
                                      "expected_graph_version": 1},
     "owner", "invalid_patch", "Invalid rule patch"),
    ("malformed", "ecosystem.patch", {"patch": {**SELF_A, "pair": None},  # absent, not null
                                      "expected_graph_version": 1},
     "owner", "bad_request", "args.patch.pair: expected string"),
    ("malformed", "ecosystem.schedule", {"change": {**CHANGE, "duration": "forever"}},
     "owner", "invalid_change", None),
    ("malformed", "ecosystem.schedule", {"change": {**CHANGE, "patch": {**SELF_A, "mode": None}}},
     "owner", "bad_request", "args.change.patch.mode: expected string"),
    ("malformed", "ecosystem.view", {"zz": 1}, "spectator", "bad_request", "args.zz: unknown key"),
    ("malformed", "ecosystem.history", {"generation": True}, "spectator", "bad_request",
     "args.generation: expected int"),
    ("malformed", "ecosystem.export", {"all": True}, "spectator", "bad_request",
     "args.all: unknown key"),
    # oversized
    ("oversized", "ecosystem.create", {"answers": {**POND, "world": "x" * 141}}, "owner",
     "already_exists", None),  # the run exists: checked before the answers
    ("oversized", "ecosystem.create", {"answers": {**POND, "world": "x" * 1025}}, "owner",
     "bad_request", "args.answers.world: at most 1024 characters"),
    ("oversized", "ecosystem.control", {"action": "play", "speed": 31}, "owner", "bad_request",
     "args.speed: must be between 1 and 30"),
    ("oversized", "ecosystem.patch", {"patch": {**SELF_A, "value": "c" * 41},
                                      "expected_graph_version": 1},
     "owner", "bad_request", "args.patch.value: at most 40 characters"),
    ("oversized", "ecosystem.patch", {"patch": SELF_A, "expected_graph_version": 10**6 + 1},
     "owner", "bad_request", None),
    ("oversized", "ecosystem.schedule", {"change": {**CHANGE, "generation": 181}}, "owner",
     "bad_request", "args.change.generation: must be between 0 and 180"),
    ("oversized", "ecosystem.history", {"generation": 0, "count": 182}, "spectator",
     "bad_request", "args.count: must be between 1 and 181"),
    ("oversized", "ecosystem.history", {"generation": 181}, "spectator", "bad_request", None),
    # unauthorized
    ("unauthorized", "ecosystem.create", {"answers": POND}, "spectator", "forbidden", None),
    ("unauthorized", "ecosystem.control", {"action": "play"}, "spectator", "forbidden", None),
    ("unauthorized", "ecosystem.control", {"action": "play"}, "other", "forbidden",
     "only the run's owner may do this"),
    ("unauthorized", "ecosystem.patch", {"patch": SELF_A, "expected_graph_version": 1},
     "other", "forbidden", "only the run's owner may do this"),
    ("unauthorized", "ecosystem.patch", {"patch": SELF_A, "expected_graph_version": 1},
     "spectator", "forbidden", None),
    ("unauthorized", "ecosystem.schedule", {"change": CHANGE}, "other", "forbidden", None),
    ("unauthorized", "ecosystem.schedule", {"change": CHANGE}, "spectator", "forbidden", None),
    # stale
    ("stale", "ecosystem.patch", {"patch": SELF_A, "expected_graph_version": 2}, "owner",
     "stale_graph_version", "the graph is at version 1, not 2"),
    ("stale", "ecosystem.schedule", {"change": {**CHANGE, "generation": 2}}, "owner",
     "invalid_change", ("Invalid scheduled change: change.generation must not precede the "
                        "run's generation 3")),
    ("stale", "ecosystem.history", {"generation": 4}, "spectator", "generation_not_reached",
     "the run is at generation 3"),
]


@pytest.fixture
async def run(tmp_path: Path):
    """A server with a run paused at generation 3, and clients for each caller."""
    ada, bob = agent_tokens(tmp_path, "ada", "bob")
    async with running_server(tmp_path) as running, \
            Client.connect(running.ws_url, token=ada) as owner, \
            Client.connect(running.ws_url, token=bob) as other, \
            Client.connect(running.ws_url) as spectator:
        await owner.request("ecosystem.create", RUN, {"answers": POND, "seed": 2, "size": SIZE})
        for _ in range(3):
            await owner.request("ecosystem.control", RUN, {"action": "step"})
        yield {"owner": owner, "other": other, "spectator": spectator}


async def state_of(client: Client) -> tuple[Any, int]:
    view = (await client.request("ecosystem.view", RUN, {}))["view"]
    view.pop("density")  # a picture of the same state
    return view, (await client.request("ecosystem.export", RUN, {}))["revision"]


async def test_every_op_refuses_bad_input_and_changes_nothing(run) -> None:
    before = await state_of(run["spectator"])
    assert before[0]["generation"] == 3
    kinds = {}
    for kind, op, args, who, code, message in CASES:
        with pytest.raises(RequestError) as refused:
            await run[who].request(op, RUN, args)
        err = refused.value
        assert err.code == code, (kind, op, args, err)
        if message is not None:
            assert err.message == message, (kind, op, args)
        kinds.setdefault(op, set()).add(kind)
        assert await state_of(run["spectator"]) == before, (kind, op, args)
    # Every op was sent malformed, oversized (or at its bound) and stale input, and every
    # write an unauthorized caller's (reads are open to every role).
    writes = {"ecosystem.create", "ecosystem.control", "ecosystem.patch", "ecosystem.schedule"}
    assert set(kinds) == {spec.name for spec in OPS}
    for op in writes:
        assert {"malformed", "oversized", "unauthorized"} <= kinds[op], op


async def test_stale_and_late_writes_of_a_run_that_moved_on(run) -> None:
    owner, spectator = run["owner"], run["spectator"]
    await owner.request("ecosystem.patch", RUN, {"patch": SELF_A, "expected_graph_version": 1})
    before = await state_of(spectator)
    with pytest.raises(RequestError) as pending:  # the first patch lands first
        await owner.request("ecosystem.patch", RUN, {
            "patch": {"kind": "self", "species": "B", "value": "cooperative"},
            "expected_graph_version": 1})
    assert (pending.value.code, pending.value.detail["pending_patch"]) == (
        "stale_graph_version", 0)
    with pytest.raises(RequestError) as again:
        await owner.request("ecosystem.create", RUN, {"answers": POND})
    assert again.value.code == "already_exists"
    for to, op, args in (("ecosystem:nowhere", "ecosystem.view", {}),
                         ("ecosystem:nowhere", "ecosystem.history", {"generation": 0}),
                         ("ecosystem:nowhere", "ecosystem.export", {}),
                         ("ecosystem:nowhere", "ecosystem.patch",
                          {"patch": SELF_A, "expected_graph_version": 1})):
        with pytest.raises(RequestError) as unknown:
            await owner.request(op, to, args)
        assert unknown.value.code == "unknown_actor", op
    assert await state_of(spectator) == before
    with pytest.raises(RequestError) as long_answer:  # a new run: the seed's 140 characters
        await owner.request("ecosystem.create", "ecosystem:long", {
            "answers": {**POND, "threat": "y" * 141}})
    assert (long_answer.value.code, long_answer.value.message, long_answer.value.detail) == (
        "invalid_answers", "Invalid setup answers: threat must be at most 140 characters",
        {"path": "threat"})
    with pytest.raises(RequestError) as nothing_left:  # a refused create leaves nothing
        await spectator.request("ecosystem.view", "ecosystem:long", {})
    assert nothing_left.value.code == "unknown_actor"


async def test_a_waiting_patch_that_changes_nothing_does_not_make_the_next_stale(run) -> None:
    """Seed: "A changed patch increments graph version once; an unchanged patch does not."
    A patch to the value A already has lands first and keeps version 1, so a second patch
    decided against version 1 is accepted and lands; a third, behind that changing one,
    is stale."""
    owner, spectator = run["owner"], run["spectator"]
    graph = (await spectator.request("ecosystem.view", RUN, {}))["view"]["graph"]
    same = {"kind": "self", "species": "A", "value": graph["species"][0]["self"]}
    other = "cooperative" if graph["species"][1]["self"] != "cooperative" else "territorial"
    changed = {"kind": "self", "species": "B", "value": other}
    for k, patch in enumerate((same, changed)):
        accepted = await owner.request("ecosystem.patch", RUN, {
            "patch": patch, "expected_graph_version": 1})
        assert (accepted["decision"], accepted["graph_version"]) == (k, 1)
    with pytest.raises(RequestError) as behind:
        await owner.request("ecosystem.patch", RUN, {"patch": SELF_A, "expected_graph_version": 1})
    assert (behind.value.code, behind.value.detail["pending_patch"]) == (
        "stale_graph_version", 1)
    await owner.request("ecosystem.control", RUN, {"action": "step"})
    frame = (await spectator.request("ecosystem.view", RUN, {}))["view"]["frame"]
    assert frame["graphVersion"] == 2
    assert [(e["decision"], e["outcome"]) for e in frame["events"]] == [
        (0, "unchanged"), (1, "applied")]


async def test_answers_count_utf16_code_units_as_the_seeds_zod(tmp_path: Path) -> None:
    """An answer's 140 characters count as zod does: 70 emoji fill one, and 139 letters
    and an emoji (140 code points) overflow it."""
    ada, = agent_tokens(tmp_path, "ada")
    async with running_server(tmp_path) as running, \
            Client.connect(running.ws_url, token=ada) as owner:
        for i, (threat, accepted) in enumerate(edges(MAX_ANSWER)):
            answers = {**POND, "threat": threat}
            to = f"ecosystem:units{i}"
            if accepted:
                created = await owner.request("ecosystem.create", to, {"answers": answers})
                assert created["answers_hash"] == hash_setup_request(answers)
                continue
            with pytest.raises(RequestError) as long_answer:
                await owner.request("ecosystem.create", to, {"answers": answers})
            assert (long_answer.value.code, long_answer.value.message) == (
                "invalid_answers", "Invalid setup answers: threat must be at most 140 characters")


async def test_a_run_stores_a_bounded_number_of_controls(run) -> None:
    """Controls stop being stored at MAX_CONTROLS but for a pause (and a step), so the
    run's stream stays bounded and its export replays."""
    owner, spectator = run["owner"], run["spectator"]

    async def control(action: str, speed: int | None = None) -> dict[str, Any]:
        args = {"action": action} if speed is None else {"action": action, "speed": speed}
        return await owner.request("ecosystem.control", RUN, args)

    message = f"a run stores at most {MAX_CONTROLS} controls; it may still pause and step"
    for _ in range(MAX_CONTROLS // 2 - 1):  # speed 1: the run barely moves meanwhile
        await control("play", 1)
        await control("pause", 2)
    await control("play", 1)
    await control("play", 2)  # the last one stored: the run plays
    with pytest.raises(RequestError) as faster:
        await control("play", 3)
    assert (faster.value.code, faster.value.message) == ("too_many_controls", message)
    assert not (await control("pause"))["playing"]
    before = await state_of(spectator)
    with pytest.raises(RequestError) as again:
        await control("play")
    assert (again.value.code, again.value.message) == ("too_many_controls", message)
    assert await state_of(spectator) == before
    assert (await control("step"))["generation"] == before[0]["generation"] + 1
    export = await spectator.request("ecosystem.export", RUN, {})
    assert replay(record_of_export(parse_export(export["lines"]))).ok


async def test_a_bad_token_is_unauthorized(tmp_path: Path) -> None:
    async with running_server(tmp_path) as running:
        with pytest.raises(RequestError) as bad:
            async with Client.connect(running.ws_url, token="pdg_not-a-token", reconnect=False):
                pass
    assert bad.value.code == "unauthorized"
