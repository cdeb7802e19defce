"""The birth loop through the server's model endpoint (`petridish serve --model-url`:
`ServerConfig.model`, handed to every actor as `ActorContext.model`): the prompt is the contract then the labelled directive, the reply goes through
`validate`, a failure is logged as a rejection, and a model that errs is waited out, not
stored."""

from __future__ import annotations

from pathlib import Path

import trio

from actors.ecosystem.endpoint import ModelEndpoint
from actors.lab import actor as lab_actor
from actors.lab.breed import generate
from actors.lab.contract import contract_text
from actors.lab.validation import NOT_TEXT
from protocol.client import Client
from tests.lab.live import ChatServer, new_lab, stored, variant
from tests.server.ws_harness import running_server


class FakeModel(ChatServer):
    """A chat-completions server: the first `errors` requests fail with 500, then shaders
    (every second one breaking the contract, the first `first` if given) and panels, by
    the prompt's track."""

    def __init__(self, errors: int = 0, first: str | None = None) -> None:
        self.shaders = 0
        panels = iter(code for _, code in generate("panel", 7, 50))

        def answer(prompt: str) -> str | int:
            n = len(self.prompts)
            if n <= errors:
                return 500
            if prompt.startswith(contract_text("shader")):
                self.shaders += 1
                code = variant(n) if self.shaders % 2 else "uniform float u_x;\n" + variant(n)
                code = first if self.shaders == 1 and first else code
                return f"TITLE: Tide {n}\n```glsl\n{code}\n```"
            return f"```html\n{next(panels)}\n```"

        super().__init__(answer)


async def _bred(tmp_path: Path, fake: FakeModel, seconds: float) -> list[dict]:
    """The stored events of a lab whose birth loop breeds through `fake` until four
    organisms wait to be judged (within `seconds`)."""
    try:
        endpoint = ModelEndpoint(fake.url, "fake-model", timeout=10.0)
        async with running_server(tmp_path, model=endpoint) as srv, \
                Client.connect(srv.ws_url, srv.owner_token) as owner:
            lab = await new_lab(owner, "model", backlog=2)
            with trio.fail_after(seconds):
                while (await owner.request("lab.backlog", lab, {}))["total"] < 4:
                    await trio.sleep(0.1)
            return await stored(srv.state.directory, lab)
    finally:
        fake.close()


async def test_the_birth_loop_breeds_through_the_model(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(lab_actor, "MODEL_BACKOFF_MS", (100, 400))
    fake = FakeModel(errors=2)
    events = await _bred(tmp_path, fake, 60)
    directives = {e["directive"]["id"]: e["directive"] for e in events
                  if e["type"] == "directive_added"}
    assert {d["track"] for d in directives.values()} == {"shader", "panel"}  # explored first
    assert {d["origin"] for d in directives.values()} == {"explore"}
    births = [e for e in events if e["type"] == "born"]
    assert {e["source"] for e in births} == {"model"} and len(births) >= 4
    for e in births:
        d = directives[e["directive"]]
        assert e["prompt"] == (contract_text(e["track"]) + "\nAesthetic directive (this is what "
                               f"your result is judged on):\n{d['text']}\n")
        assert e["genome"] is None and e["parents"] == []
    assert all(e["prompt"] in fake.prompts for e in births)
    rejected = [e for e in events if e["type"] == "rejected"]
    assert rejected and {e["reason"] for e in rejected} == {"extra uniform"}
    assert all(e["source"] == "model" for e in rejected)
    # the two failed requests were waited out and never stored
    assert len(fake.prompts) == 2 + len(births) + len(rejected)


async def test_a_reply_that_is_not_text_is_a_rejection_not_the_models_error(
        tmp_path: Path, monkeypatch) -> None:
    # A lone surrogate (a JSON escape in the reply) is code the compile step could not
    # encode (it raised, and the candidate was abandoned): now a rejection like any other
    # (which the loop waits out like every barren model birth, here briefly).
    monkeypatch.setattr(lab_actor, "MODEL_BACKOFF_MS", (100, 400))
    events = await _bred(tmp_path, FakeModel(first=variant(0) + "// \ud800\n"), 30)
    rejected = [e for e in events if e["type"] == "rejected"]
    assert {e["reason"] for e in rejected} == {"extra uniform", NOT_TEXT}
    assert any(e["code"].endswith("// \\ud800\n") for e in rejected)  # kept as text
