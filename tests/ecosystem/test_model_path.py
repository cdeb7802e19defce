"""The model path through a live server: `ecosystem.create` answers `setting_up`, the
model's interpretation runs off the run's task against the scripted chat-completions
server, and the setup event (or the blocked setup) follows; at the end the model phrases
the reflection. Every bad answer ends in the labelled fallback or the seed's correction,
within the call budget, and no key or provider payload reaches a reply, a push or a log."""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.ecosystem.endpoint import ModelEndpoint
from actors.ecosystem.export import parse_export, record_of_export
from actors.ecosystem.interpret import MAX_CALLS
from actors.ecosystem.keywords import deterministic_setup
from actors.ecosystem.model_client import ATTEMPTS
from actors.ecosystem.replay import replay
from protocol.client import Client, RequestError
from tests.ecosystem.conftest import FakeModel
from tests.ecosystem.live import SIZE, TOP, WAIT, agent_tokens
from tests.ecosystem.model_script import (
    ANSWERS,
    COUNCIL,
    HAPPY,
    HAPPY_TASKS,
    LINKS,
    NONMAXIMAL,
    REJECT,
    ROLES,
)
from tests.server.ws_harness import running_server

KEY = "sk-live-credential-789"
SECRETS = (KEY, "PROVIDER-SECRET-PAYLOAD", "Bearer")


class Watch:
    """Everything a test's clients received, to check no secret is in any of it."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def keep(self, value: Any) -> Any:
        self.texts.append(json.dumps(value))
        return value

    def assert_clean(self, caplog: pytest.LogCaptureFixture) -> None:
        emitted = "".join(self.texts) + caplog.text + "".join(
            repr(r.args) for r in caplog.records)
        for secret in SECRETS:
            assert secret not in emitted


@pytest.fixture
def model_timeout() -> float:
    """The endpoint's timeout: longer than any wait of the test, so that only a stall the
    script asks for (a test that overrides it) runs into it, however slow the machine."""
    return WAIT


@pytest.fixture
async def served(tmp_path: Path, fake_model: FakeModel, caplog: pytest.LogCaptureFixture,
                 model_timeout: float):
    caplog.set_level(logging.DEBUG)
    (ada,) = agent_tokens(tmp_path, "ada")
    endpoint = ModelEndpoint(fake_model.url, "fake-model", KEY, timeout=model_timeout)
    async with running_server(tmp_path, model=endpoint) as running, \
            Client.connect(running.ws_url, token=ada) as owner, \
            Client.connect(running.ws_url) as spectator:
        yield owner, spectator


async def set_up(owner: Client, spectator: Client, fake: FakeModel, watch: Watch, run: str,
                 script: list[Any]) -> dict[str, Any]:
    """Create `run` through the model answering `script`; the setup event, or the view
    of a blocked setup. The model answers only once the spectator follows the run, so the
    setup cannot end unseen before the subscription (its snapshot would then be all)."""
    fake.script, fake.requests[:] = copy.deepcopy(script), []
    fake.hold.clear()
    to = f"ecosystem:{run}"
    info = watch.keep(await owner.request("ecosystem.create", to, {"answers": ANSWERS,
                                                                    "size": SIZE}))
    assert (info["status"], info["generation"]) == ("setting_up", -1)
    with trio.fail_after(WAIT):
        async with spectator.subscribe(to) as pushes:
            fake.hold.set()
            async for push in pushes:
                watch.keep(push.data)
                if push.kind == "snapshot" and push.data["created"] is False \
                        and push.data["blocked"]:
                    return push.data
                if push.kind == "events":
                    return next(e for e in push.data if e["type"] == "setup")
    raise AssertionError("no setup")


async def test_create_through_the_model_is_set_up_off_the_task(served, fake_model, caplog) -> None:
    owner, spectator = served
    watch = Watch()
    to = "ecosystem:held"
    fake_model.hold.clear()  # the model thinks: the run is setting up meanwhile
    fake_model.script = copy.deepcopy(HAPPY)
    info = watch.keep(await owner.request("ecosystem.create", to, {"answers": ANSWERS,
                                                                    "seed": 4, "size": SIZE}))
    assert info == {"status": "setting_up", "generation": -1, "seed": 4,
                    "answers_hash": info["answers_hash"], "source": None, "config_hash": None,
                    "graph_version": None, "failure": None}
    view = watch.keep((await spectator.request("ecosystem.view", to, {}))["view"])
    assert view == {"created": False, "setting_up": True, "owner": "ada", "answers": ANSWERS,
                    "blocked": None}
    for op, args, code in (("ecosystem.control", {"action": "play"}, "setting_up"),
                           ("ecosystem.history", {"generation": 0}, "setting_up"),
                           ("ecosystem.create", {"answers": ANSWERS}, "already_exists")):
        with pytest.raises(RequestError) as refused:
            await owner.request(op, to, args)
        assert refused.value.code == code, op
    fake_model.hold.set()
    with trio.fail_after(WAIT):
        while not (view := (await spectator.request("ecosystem.view", to, {}))["view"])[
                "created"]:
            await trio.sleep(0.05)
    setup = watch.keep(view)["setup"]
    assert (setup["source"], setup["calls"], setup["failure"]) == ("model", 6, None)
    assert [s["name"] for s in view["graph"]["species"]] == ["algae", "snails", "pike"]
    assert view["graph"]["council"]["selected"] == "steady"
    assert setup["named_intent"]["organisms"][2]["name"] == "pike"
    assert len(fake_model.requests) == 6
    assert {r["auth"] for r in fake_model.requests} == {f"Bearer {KEY}"}
    watch.assert_clean(caplog)


async def test_bad_model_answers_end_labelled_within_the_budget(served, fake_model,
                                                                caplog) -> None:
    owner, spectator = served
    watch = Watch()
    fallback = deterministic_setup(ANSWERS)
    again = {"verdict": "reselect", "focus": "C"}
    surrogate, control = copy.deepcopy(COUNCIL), copy.deepcopy(COUNCIL)
    surrogate["choice"]["options"][1]["label"] = "b\ud800old"  # its config hash raised: the
    control["choice"]["focus"] = "the \x1b[2J pike"  # actor crashed, the create was lost
    cases = [  # name, script, (status, stage, code) or the accepted calls
        ("invalid-json", HAPPY[:2] + ["{not json"], ("fallback", "roles", "invalid_json")),
        ("http-error", [404], ("fallback", "mapping", "http_status")),
        ("second-nonmaximal", HAPPY[:5] + [NONMAXIMAL, NONMAXIMAL],
         ("fallback", "council_correction", "nonmaximal_choice")),
        ("nonmaximal-corrected", HAPPY[:5] + [NONMAXIMAL, COUNCIL], 7),
        ("surrogate-label", HAPPY[:5] + [surrogate], ("fallback", "council", "invalid_output")),
        ("control-focus", HAPPY[:5] + [control], ("fallback", "council", "invalid_output")),
        ("persistent-reject", HAPPY[:4] + [REJECT, ROLES, LINKS, again],
         ("blocked", "fidelity", "not_approved")),
    ]
    for name, script, expected in cases:
        result = await set_up(owner, spectator, fake_model, watch, name, script)
        assert len(fake_model.requests) <= MAX_CALLS, name
        if isinstance(expected, int):  # the seed's correction: accepted, both calls spent
            assert (result["source"], result["calls"], result["failure"]) == (
                "model", expected, None), name
            assert fake_model.tasks()[-2:] == ["council", "council"]
            continue
        status, stage, code = expected
        if status == "blocked":
            blocked = result["blocked"]
            assert (blocked["failure"]["stage"], blocked["failure"]["code"]) == (stage, code)
            assert blocked["review_focus"] == "C" and blocked["calls"] == 8
            assert blocked["named_intent"]["organisms"][0]["name"] == "algae"
            for ask, op, args in ((spectator, "ecosystem.history", {"generation": 0}),
                                  (owner, "ecosystem.control", {"action": "step"})):
                with pytest.raises(RequestError) as unset:  # nothing was stored
                    await ask.request(op, f"ecosystem:{name}", args)
                assert (unset.value.code, unset.value.detail) == ("setup_blocked",
                                                                  {"review_focus": "C"})
            continue
        assert (result["source"], result["failure"]["stage"], result["failure"]["code"]) == (
            "deterministic_fallback", stage, code), name
        assert (result["config"], result["graph"]) == (fallback["config"], fallback["graph"])
    watch.assert_clean(caplog)


@pytest.mark.parametrize("model_timeout", [0.5])
async def test_a_model_past_the_timeout_ends_labelled(served, fake_model, caplog) -> None:
    """The first call stalls until the test ends: the endpoint's timeout ends it, and the
    run is set up by the labelled fallback after that one call."""
    owner, spectator = served
    watch = Watch()
    setup = await set_up(owner, spectator, fake_model, watch, "timeout", [float(WAIT)])
    assert (setup["source"], setup["failure"]["stage"], setup["failure"]["code"]) == (
        "deterministic_fallback", "mapping", "transport")
    assert setup["calls"] == 1 == len(fake_model.requests)
    fallback = deterministic_setup(ANSWERS)
    assert (setup["config"], setup["graph"]) == (fallback["config"], fallback["graph"])
    watch.assert_clean(caplog)


async def test_a_busy_model_is_asked_again_on_the_runs_clock(served, fake_model, caplog) -> None:
    """429, then the answers: the run is set up through the model, the wait before the
    second try slept on trio's clock by the run's worker thread. 429 at every try: the
    labelled fallback, after ATTEMPTS calls."""
    owner, spectator = served
    watch = Watch()
    setup = await set_up(owner, spectator, fake_model, watch, "busy", [429, *HAPPY])
    assert (setup["source"], setup["calls"], setup["failure"]) == ("model", 7, None)
    assert fake_model.tasks() == ["map_organisms", *HAPPY_TASKS]
    setup = await set_up(owner, spectator, fake_model, watch, "busy-forever",
                         [(429, 0)] * ATTEMPTS + HAPPY)
    assert (setup["source"], setup["failure"]["stage"], setup["failure"]["code"]) == (
        "deterministic_fallback", "mapping", "unavailable")
    assert setup["calls"] == ATTEMPTS == len(fake_model.requests)
    watch.assert_clean(caplog)


async def test_the_model_phrases_the_reflection_at_the_end(served, fake_model, caplog) -> None:
    owner, spectator = served
    watch = Watch()
    text = "The pike nearly starved twice; the snails carried the pond."
    setup = await set_up(owner, spectator, fake_model, watch, "phrased",
                         HAPPY + [{"text": text}])
    assert setup["source"] == "model"
    to = "ecosystem:phrased"
    await owner.request("ecosystem.control", to, {"action": "play", "speed": TOP})
    with trio.fail_after(WAIT):
        async with spectator.subscribe(to) as pushes:
            async for push in pushes:
                watch.keep(push.data)
                if push.kind == "events" and any(e["type"] == "phrased" for e in push.data):
                    break
    view = watch.keep((await spectator.request("ecosystem.view", to, {}))["view"])
    assert view["end"]["reflection"]["source"] == "engine"  # the facts stay the engine's
    assert view["phrasing"] == {"source": "model", "text": text, "model": "fake-model",
                                "failure": None, "calls": 1}
    request = fake_model.requests[-1]["task"]
    assert request["task"] == "phrase_reflection"
    assert request["facts"] == view["end"]["reflection"] and "answers" not in request
    watch.assert_clean(caplog)
    # The model's run replays from its export with no model: every frame's digest.
    export = await spectator.request("ecosystem.export", to, {})
    report = replay(record_of_export(parse_export(export["lines"])))
    assert report.ok and report.checked == 181, report
