"""A model's call waits on a network peer, for seconds: it runs behind the runtime's I/O
threads (`offload(io=True)`), never in the CPU work's worker slot, so a run set up through
a slow model keeps no other world's offloaded work (a lab's validation) waiting."""

from __future__ import annotations

import copy
from pathlib import Path

import trio

from actors.ecosystem.endpoint import ModelEndpoint
from protocol.client import Client
from tests.ecosystem.conftest import FakeModel
from tests.ecosystem.live import SIZE, WAIT, agent_tokens
from tests.ecosystem.model_script import ANSWERS, HAPPY
from tests.lab.live import GOOD, new_lab, settled
from tests.server.ws_harness import running_server

RUNS = 3  # setups waiting on the model at once


async def test_a_lab_validates_while_runs_wait_on_the_model(tmp_path: Path,
                                                            fake_model: FakeModel) -> None:
    (ada,) = agent_tokens(tmp_path, "ada")
    fake_model.script = copy.deepcopy(HAPPY * RUNS)
    fake_model.hold.clear()  # the model thinks until the test ends (30 s at most)
    endpoint = ModelEndpoint(fake_model.url, "fake-model", timeout=60.0)
    try:
        async with running_server(tmp_path, model=endpoint) as srv, \
                Client.connect(srv.ws_url, token=ada) as agent, \
                Client.connect(srv.ws_url, srv.owner_token) as owner:
            for n in range(RUNS):
                info = await agent.request("ecosystem.create", f"ecosystem:slow{n}",
                                           {"answers": ANSWERS, "size": SIZE})
                assert info["status"] == "setting_up"
            with trio.fail_after(WAIT):  # a model call has begun, and waits
                await trio.to_thread.run_sync(fake_model.arrived.acquire)
            lab = await new_lab(owner, "probe")
            offered = await owner.request("lab.birth", lab, {"track": "shader", "code": GOOD})
            assert offered["status"] == "validating"
            status = await settled(owner, lab, offered["id"], timeout=WAIT)
            # validated (off the lab's task, in a worker thread) with no model call answered
            assert (status["status"], fake_model.requests) == ("alive", [])
            for n in range(RUNS):
                view = (await agent.request("ecosystem.view", f"ecosystem:slow{n}", {}))["view"]
                assert view["setting_up"] and not view["created"]
    finally:
        fake_model.hold.set()
