"""A run live over real sockets: created, played at the top speed to generation 180 with
two patches and a scheduled change while a spectator watches every generation arrive in
order; stale evidence and other callers refused; the export replays without a model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from protocol.client import Client, RequestError
from server.cli import main
from tests.ecosystem.live import (
    POND,
    SIZE,
    TOP,
    WAIT,
    agent_tokens,
    patch,
    planes,
    uninterrupted,
)
from tests.server.ws_harness import running_server

RUN = "ecosystem:pond"


async def refused(client: Client, op: str, args: dict[str, Any], to: str = RUN) -> RequestError:
    try:
        await client.request(op, to, args)
    except RequestError as err:
        return err
    raise AssertionError(f"{op} {args} was accepted")


async def test_a_run_plays_to_180_with_patches_and_a_schedule_watched_live(
        tmp_path: Path, capsys) -> None:
    ada, bob = agent_tokens(tmp_path, "ada", "bob")
    async with running_server(tmp_path) as running, \
            Client.connect(running.ws_url, token=ada) as owner, \
            Client.connect(running.ws_url, token=bob) as other, \
            Client.connect(running.ws_url) as spectator:
        info = await owner.request("ecosystem.create", RUN, {"answers": POND, "seed": 7,
                                                              "size": SIZE})
        assert (info["status"], info["source"], info["generation"]) == (
            "ready", "deterministic_fallback", 0)
        seen: list[int] = []
        snapshots: list[dict[str, Any]] = []
        decisions: list[dict[str, Any]] = []
        pushed: list[dict[str, Any]] = []  # each decision event pushed
        ended: dict[str, Any] | None = None
        with trio.fail_after(WAIT):
            async with spectator.subscribe(RUN) as pushes:
                async for push in pushes:
                    if push.kind == "snapshot":
                        snapshots.append(push.data)
                        if not seen:
                            seen.append(push.data["frame"]["generation"])
                            await owner.request("ecosystem.control", RUN,
                                                {"action": "play", "speed": TOP})
                        continue
                    for event in push.data:
                        if event["type"] == "generation":
                            seen.append(event["frame"]["generation"])
                        elif event["type"] == "end":
                            ended = event
                        elif event["type"] in ("patch", "schedule"):
                            pushed.append(event)
                    if ended is not None:
                        break
                    g = seen[-1]
                    if g >= 20 and not decisions:
                        decisions.append(await patch(owner, RUN, {
                            "kind": "self", "species": "A", "value": "cooperative"}))
                    elif g >= 40 and len(decisions) == 1:
                        # Paused to schedule two generations ahead: the spectator's view
                        # lags the run's timer, which would be past g + 2 already.
                        paused = await owner.request("ecosystem.control", RUN,
                                                     {"action": "pause"})
                        decisions.append(await owner.request("ecosystem.schedule", RUN, {
                            "change": {"generation": paused["generation"] + 2,
                                       "activation": "immediate",
                                       "duration": "short", "transition": "ramp",
                                       "patch": {"kind": "environment", "field": "pressure",
                                                 "value": "toxin_wave"}}}))
                        await owner.request("ecosystem.control", RUN,
                                            {"action": "play", "speed": TOP})
                    elif g >= 70 and len(decisions) == 2:
                        stale = await refused(owner, "ecosystem.patch", {
                            "patch": {"kind": "self", "species": "B", "value": "cooperative"},
                            "expected_graph_version": 1})
                        assert stale.code == "stale_graph_version"
                        assert stale.detail["expected_graph_version"] == 1
                        for caller in (other, spectator):
                            err = await refused(caller, "ecosystem.patch", {
                                "patch": {"kind": "self", "species": "B",
                                          "value": "cooperative"},
                                "expected_graph_version": stale.detail["graph_version"]})
                            assert err.code == "forbidden"
                        decisions.append(await patch(owner, RUN, {
                            "kind": "self", "species": "C", "value": "cooperative"}))
        # Every generation, once and in order: 0 in the first snapshot, then the events.
        assert seen == list(range(181))
        assert [d["decision"] for d in decisions] == [0, 1, 2]
        # As stored (what an older process reads back): the decision, no derived field (the
        # page works out from_generation from the view's vocabulary).
        assert [(sorted(e), e["decision"]["generation"]) for e in pushed] == [
            (["decision", "type"], d["generation"]) for d in decisions]
        assert decisions[0]["generation"] >= 20 and decisions[2]["generation"] >= 70
        # Density snapshots: the latest frame's fields, quantised, one byte per cell.
        later = [s for s in snapshots if s["frame"]["generation"] > 0]
        assert later and all(s["density"]["generation"] == s["frame"]["generation"]
                             for s in snapshots)
        assert {len(b) for b in planes(later[-1]["density"]).values()} == {SIZE * SIZE}
        view = (await spectator.request("ecosystem.view", RUN, {}))["view"]
        assert (view["generation"], view["playing"], view["end"]["reflection"]["source"]) == (
            180, False, "engine")
        assert view["phrasing"] is None  # no model: the engine's facts are the reflection
        outcomes = [(o["decision"], o["outcome"]) for g in range(181) for o in
                    (await spectator.request("ecosystem.history", RUN,
                                             {"generation": g}))["frames"][0]["events"]
                    if "decision" in o]
        assert outcomes == [(0, "applied"), (1, "applied"), (1, "reverted"), (2, "applied")]
        assert view["graph_version"] == 5 and ended["breakdown"]["total"] == \
            view["frame"]["score"]["total"]
        live, batch = await uninterrupted(spectator, RUN)
        assert live == batch and len(live) == 181
        for caller in (owner, other):
            assert (await refused(caller, "ecosystem.control", {"action": "play"})).code in (
                "run_ended", "forbidden")
        export = await spectator.request("ecosystem.export", RUN, {})
    lines = export["lines"].splitlines()
    assert len(lines) == export["events"] and json.loads(lines[0])["type"] == "setup"
    path = tmp_path / "pond.jsonl"
    path.write_text(export["lines"])
    assert main(["ecosystem", "replay", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == {"ok": True, "digests": 181}
