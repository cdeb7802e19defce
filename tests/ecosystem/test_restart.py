"""`petridish serve --model-url URL --model NAME --model-key-file FILE` in a subprocess: a run
set up through the (scripted) model plays at the top speed with patches and a scheduled
change; the server is SIGKILLed mid-run and restarted; the run resumes at the generation
it had reached, the spectator (reconnecting on its own) sees every generation once and
in order, and the final digests equal an uninterrupted batch run of the same decisions."""

from __future__ import annotations

import copy
from pathlib import Path

import trio

from protocol.client import Client
from tests.ecosystem.conftest import FakeModel
from tests.ecosystem.live import SIZE, TOP, WAIT, agent_tokens, patch, uninterrupted
from tests.ecosystem.model_script import ANSWERS, HAPPY
from tests.server.server_process import ServerProcess

KEY = "sk-restart-credential-321"
RUN = "ecosystem:kept"


async def test_sigkill_mid_run_resumes_where_it_was(tmp_path: Path,
                                                    fake_model: FakeModel) -> None:
    key_file = tmp_path / "model.key"
    key_file.write_text(KEY + "\n")
    data = tmp_path / "data"
    (ada,) = agent_tokens(data, "ada")
    fake_model.script = copy.deepcopy(HAPPY)
    server = ServerProcess(data, "--model-url", fake_model.url, "--model", "fake-model",
                           "--model-key-file", str(key_file), "--model-timeout", "5").start()
    seen: list[int] = []
    killed_at, patches = -1, 0
    try:
        async with Client.connect(server.ws_url, token=ada) as owner, \
                Client.connect(server.ws_url) as spectator:
            info = await owner.request("ecosystem.create", RUN, {"answers": ANSWERS, "seed": 9,
                                                                  "size": SIZE})
            assert info["status"] == "setting_up"
            with trio.fail_after(2 * WAIT):
                async with spectator.subscribe(RUN) as pushes:
                    async for push in pushes:
                        if push.kind == "snapshot":
                            if push.data["created"] and not seen:
                                seen.append(push.data["frame"]["generation"])
                            continue
                        for event in push.data:
                            if event["type"] == "setup":
                                assert event["source"] == "model" and event["calls"] == 6
                                await owner.request("ecosystem.control", RUN,
                                                    {"action": "play", "speed": TOP})
                            elif event["type"] == "generation":
                                seen.append(event["frame"]["generation"])
                        if any(e["type"] == "end" for e in push.data):
                            break
                        g = seen[-1] if seen else 0
                        if g >= 10 and patches == 0:
                            await patch(owner, RUN, {"kind": "self", "species": "B",
                                                     "value": "cooperative"})
                            patches += 1
                        elif g >= 20 and killed_at < 0:
                            await owner.request("ecosystem.schedule", RUN, {"change": {
                                "generation": g + 30, "activation": "immediate",
                                "duration": "medium", "transition": "pulse",
                                "patch": {"kind": "environment", "field": "regeneration",
                                          "value": "pulsed"}}})
                            killed_at = g
                            server.kill()  # mid-run, while it plays: no shutdown code runs
                            server.start(port=server.port)  # the clients reconnect by themselves
                        elif g >= 120 and killed_at >= 0 and patches == 1:
                            await patch(owner, RUN, {"kind": "self", "species": "C",
                                                     "value": "cooperative"})
                            patches += 1
            assert spectator.connections == 2  # one reconnect, resumed with `since`
            # Resumed where it was: every generation once and in order across the kill,
            # and nobody pressed play again.
            assert seen == list(range(181)) and killed_at >= 20
            view = (await spectator.request("ecosystem.view", RUN, {}))["view"]
            assert [d["via"] for d in view["decisions"]] == ["patch", "schedule", "patch"]
            assert view["decisions"][1]["generation"] >= killed_at  # made durable, then killed
            controls = [line for line in (await spectator.request(
                "ecosystem.export", RUN, {}))["lines"].splitlines() if '"type":"control"' in line]
            assert len(controls) == 1
            live, batch = await uninterrupted(spectator, RUN)
            assert live == batch and len(live) == 181
    finally:
        server.kill()
    assert KEY not in "".join(server.output)
