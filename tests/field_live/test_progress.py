"""Generation progress: the generator reports each stage from 0 to its end, in order, and
the field's summary and refusals carry it while it runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from actors.field import live, rules
from actors.field.actor import FieldActor
from actors.field.generate import generate_chunks, generate_scatter
from protocol.client import Client, RequestError
from protocol.ops.field import FieldCode
from tests.field_live._live import start
from tests.server.ws_harness import running_server


def test_the_generator_reports_tiles_then_givens_to_the_end() -> None:
    for make in (lambda p: generate_scatter(3, 30, p), lambda p: generate_chunks(3, 200, 1, 40, p)):
        heard: list[tuple[str, int, int]] = []
        field = make(lambda stage, done, planned, heard=heard: heard.append(
            (stage, done, planned)))
        stages = [h[0] for h in heard]
        assert stages[0] == "tiles" and stages[-1] == "givens"
        assert stages == sorted(stages, key=("tiles", "givens").index)  # tiles, then givens
        for stage in ("tiles", "givens"):
            done = [d for s, d, _ in heard if s == stage]
            planned = {p for s, _, p in heard if s == stage}
            assert done == sorted(done) and done[-1] in planned  # monotone, to its end
        assert heard[-1][1] == heard[-1][2] >= len(field.manifest.tiles)
        assert len(heard) <= 2 * (50 + 2) + 10  # about REPORTS a stage, not one per tile


def test_progress_reads_as_a_share_in_the_summary_and_the_refusal() -> None:
    p = live.Progress("givens", 40, 160)
    assert (p.share, p.text()) == (0.625, "givens 40 of 160")
    w = rules.Live("g", generating=True, progress=p)
    assert rules.summary(w) == {"day": None, "state": "generating", "progress": p.to_json()}
    refusal = rules.unready(w)
    assert refusal is not None and refusal.code == FieldCode.GENERATING
    assert refusal.detail["progress"] == {"stage": "givens", "done": 40, "planned": 160,
                                          "share": 0.625}
    assert "givens 40 of 160" in refusal.message
    assert rules.view(w)["progress"]["share"] == 0.625


async def test_the_summary_says_generating_until_the_manifest_is_folded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read from outside (the console, the lobby) while the generated truth is being
    saved, a field is still `generating`, never `none`."""
    seen: list[Any] = []
    save_side = FieldActor.save_side

    async def saving(actor: FieldActor, stream: str, rev: int, data: Any) -> None:
        seen.append(actor.context.directory.summary(actor.actor_id))
        await save_side(actor, stream, rev, data)

    monkeypatch.setattr(FieldActor, "save_side", saving)
    async with running_server(tmp_path, open_mode=True) as srv, \
            Client.connect(srv.ws_url) as c:
        await start(c, "sv", size=14, seed=4)
        assert (await c.request("field.observe", "field:sv", {}))["revision"] == 1
    assert seen and all(s["state"] == "generating" for s in seen), seen


async def _refusal(c: Client, world: str) -> RequestError:
    with pytest.raises(RequestError) as refused:
        await c.request("field.observe", world, {})
    return refused.value


async def test_a_start_whose_generation_fails_says_so_and_may_start_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import actors.field.actor as field_actor

    def broken(seed: int, size: int, progress: Any = None) -> Any:
        raise ValueError("no field today")

    async with running_server(tmp_path, open_mode=True) as srv, \
            Client.connect(srv.ws_url) as c:
        monkeypatch.setattr(field_actor, "generate_scatter", broken)
        started = await c.request("field.start", "field:fails", {"size": 14, "seed": 4})
        assert started["status"] == "generating"
        with trio.fail_after(10):
            while (refused := await _refusal(c, "field:fails")).code == FieldCode.GENERATING:
                await trio.sleep(0.02)
        assert (refused.code, refused.message) == ("unknown_actor", (
            "the field 'fails' could not be generated (the failure is logged); field.start "
            "starts it again"))
        monkeypatch.setattr(field_actor, "generate_scatter", generate_scatter)
        await start(c, "fails", size=14, seed=4)  # again, and this time it is made
        assert srv.state.directory.summary("field:fails")["state"] == "live"
