"""The model path from the command line: `petridish ecosystem setup --model-url URL
--model NAME --model-key-file FILE` against the scripted chat-completions server.

Every case ends accepted, in the seed's correction, blocked or in the labelled fallback
with its finite stage and code, within the call budget, and neither the key nor a raw
provider payload reaches stdout, stderr or any log record (httpx's included).
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from actors.ecosystem.endpoint import EndpointError, ModelEndpoint, endpoint_from_args
from actors.ecosystem.interpret import MAX_CALLS
from actors.ecosystem.keywords import deterministic_setup
from actors.ecosystem.model_client import ATTEMPTS
from actors.ecosystem.model_options import KEY_ENV, add_model_options
from server.cli import main
from tests.ecosystem.conftest import FakeModel
from tests.ecosystem.model_script import (
    ANSWERS,
    APPROVE,
    COUNCIL,
    HAPPY,
    LINKS,
    NONMAXIMAL,
    REJECT,
    ROLES,
)

KEY = "sk-cli-credential-456"
PAYLOAD = "PROVIDER-SECRET-PAYLOAD"


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "key"
    path.write_text(KEY + "\n")
    return path


def setup(fake: FakeModel, script: list[Any], capsys, caplog, *options: str
          ) -> tuple[int, dict[str, Any] | None, str]:
    """Run the CLI; returns (exit code, parsed stdout, everything else it emitted)."""
    fake.script = copy.deepcopy(script)
    caplog.set_level(logging.DEBUG)
    code = main(["ecosystem", "setup", "--answers", json.dumps(ANSWERS),
                 "--model-url", fake.url, "--model", "fake-model", *options])
    out, err = capsys.readouterr()
    emitted = out + err + caplog.text + "".join(repr(r.args) for r in caplog.records)
    assert KEY not in emitted and PAYLOAD not in emitted and "Bearer" not in emitted
    assert len(fake.requests) <= MAX_CALLS
    return code, (json.loads(out) if out else None), emitted


def assert_fallback(result: dict[str, Any], stage: str, code: str) -> None:
    assert (result["status"], result["source"]) == ("fallback", "deterministic_fallback")
    assert (result["failure"]["stage"], result["failure"]["code"]) == (stage, code)
    assert result["config"] == deterministic_setup(ANSWERS)["config"]


def test_accepted_through_the_model_with_the_key_from_a_file(fake_model, key_file, capsys,
                                                             caplog) -> None:
    code, result, _ = setup(fake_model, HAPPY, capsys, caplog, "--model-key-file", str(key_file))
    assert code == 0 and (result["status"], result["source"]) == ("accepted", "model")
    assert result["calls"] == 6 == len(fake_model.requests)
    assert {r["auth"] for r in fake_model.requests} == {f"Bearer {KEY}"}
    assert {r["body"]["model"] for r in fake_model.requests} == {"fake-model"}
    assert any(r.name.startswith("httpx") for r in caplog.records)  # logs were captured


def test_the_key_from_the_environment(fake_model, capsys, caplog, monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    code, result, _ = setup(fake_model, HAPPY, capsys, caplog)
    assert code == 0 and result["status"] == "accepted"
    assert {r["auth"] for r in fake_model.requests} == {f"Bearer {KEY}"}


def test_a_timeout_falls_back_labelled(fake_model, key_file, capsys, caplog) -> None:
    code, result, _ = setup(fake_model, [2.0], capsys, caplog, "--model-key-file",
                            str(key_file), "--model-timeout", "0.2")
    assert code == 0
    assert_fallback(result, "mapping", "transport")
    assert result["calls"] == 1


def test_invalid_json_and_provider_errors_fall_back_without_the_payload(
        fake_model, key_file, capsys, caplog) -> None:
    code, result, _ = setup(fake_model, [HAPPY[0], "{not json " + PAYLOAD], capsys, caplog,
                            "--model-key-file", str(key_file))
    assert code == 0
    assert_fallback(result, "environment", "invalid_json")
    code, result, _ = setup(fake_model, [404], capsys, caplog, "--model-key-file", str(key_file))
    assert_fallback(result, "mapping", "http_status")
    # 502 at every try (Retry-After 0: the command line sleeps on the process's clock)
    code, result, _ = setup(fake_model, [(502, 0)] * ATTEMPTS, capsys, caplog,
                            "--model-key-file", str(key_file))
    assert_fallback(result, "mapping", "unavailable")
    assert result["calls"] == ATTEMPTS


def test_a_busy_model_is_asked_again(fake_model, capsys, caplog) -> None:
    code, result, _ = setup(fake_model, [(429, 0), *HAPPY], capsys, caplog)
    assert code == 0 and (result["status"], result["source"]) == ("accepted", "model")
    assert result["calls"] == 7 == len(fake_model.requests)


def test_a_nonmaximal_council_choice_gets_the_seeds_one_correction(fake_model, key_file,
                                                                   capsys, caplog) -> None:
    code, result, _ = setup(fake_model, HAPPY[:5] + [NONMAXIMAL, COUNCIL], capsys, caplog,
                            "--model-key-file", str(key_file))
    assert code == 0 and result["status"] == "accepted" and result["calls"] == 7
    assert result["graph"]["council"] == COUNCIL["choice"]
    fake_model.requests.clear()
    code, result, _ = setup(fake_model, HAPPY[:5] + [NONMAXIMAL, NONMAXIMAL], capsys, caplog,
                            "--model-key-file", str(key_file))
    assert_fallback(result, "council_correction", "nonmaximal_choice")
    assert result["calls"] == 7


def test_a_persistent_reject_stays_blocked(fake_model, key_file, capsys, caplog) -> None:
    again = {"verdict": "reject", "focus": "C"}
    code, result, _ = setup(fake_model, HAPPY[:4] + [REJECT, ROLES, LINKS, again, APPROVE],
                            capsys, caplog, "--model-key-file", str(key_file))
    assert code == 3 and result["status"] == "blocked" and result["config"] is None
    assert result["review_focus"] == "C" and result["calls"] == 8 == len(fake_model.requests)
    assert result["failure"]["code"] == "not_approved"


def test_every_call_reserves_the_budget(fake_model, key_file, capsys, caplog) -> None:
    """Thirteen calls with every correction; the fourteenth is never sent."""
    duplicate = copy.deepcopy(HAPPY[0])
    duplicate["organisms"][2] = {**duplicate["organisms"][1], "slot": "C"}
    broken = {"interactions": [{"pair": "A-B", "mode": "b_consumes_a"},
                               {"pair": "A-C", "mode": "neutral"},
                               {"pair": "B-C", "mode": "neutral"}]}
    script = [duplicate, HAPPY[0], HAPPY[1], ROLES, broken, LINKS, REJECT, ROLES, broken,
              LINKS, APPROVE, NONMAXIMAL, COUNCIL, APPROVE]
    code, result, _ = setup(fake_model, script, capsys, caplog, "--model-key-file",
                            str(key_file))
    assert code == 0 and result["status"] == "accepted"
    assert result["calls"] == 13 == len(fake_model.requests)


def test_bad_model_options_are_refused_without_the_key(tmp_path: Path, capsys) -> None:
    base = ["ecosystem", "setup", "--answers", json.dumps(ANSWERS)]
    cases = {
        ("--model-url", "ftp://x/v1", "--model", "m"):
            "--model-url must be an http(s) URL such as http://127.0.0.1:8080/v1",
        ("--model-url", "http://127.0.0.1:9/v1"): "--model-url needs --model",
        ("--model", "m"): "--model and --model-key-file need --model-url",
        ("--model-url", "http://127.0.0.1:9/v1", "--model", "m", "--model-key-file",
         str(tmp_path / "absent")):
            f"--model-key-file {tmp_path / 'absent'}: cannot be read (No such file or directory)",
    }
    for options, message in cases.items():  # bad options exit 2, as `serve` does
        assert main(base + list(options)) == 2
        assert capsys.readouterr() == ("", message + "\n")
    empty = tmp_path / "empty"
    empty.write_text("\n\n")
    assert main(base + ["--model-url", "http://127.0.0.1:9/v1", "--model", "m",
                        "--model-key-file", str(empty)]) == 2
    assert capsys.readouterr().err == f"--model-key-file {empty}: is empty\n"
    assert main(["ecosystem", "setup", "--answers", "notjson"]) == 2
    assert capsys.readouterr().err == "--answers is not JSON: Expecting value\n"


def test_the_endpoint_value_hides_its_key() -> None:
    endpoint = ModelEndpoint("http://127.0.0.1:8080/v1/", "m", KEY, 5.0)
    assert KEY not in repr(endpoint) and KEY not in str(endpoint)
    assert endpoint.chat_url == "http://127.0.0.1:8080/v1/chat/completions"
    parser = argparse.ArgumentParser()
    add_model_options(parser)
    assert endpoint_from_args(parser.parse_args([]), {KEY_ENV: KEY}) is None
    args = parser.parse_args(["--model-url", "http://127.0.0.1:8080/v1", "--model", "m"])
    assert endpoint_from_args(args, {KEY_ENV: KEY}).api_key == KEY
    assert endpoint_from_args(args, {}).api_key is None
    with pytest.raises(EndpointError, match=r"^--model-timeout must be positive$"):
        ModelEndpoint("http://127.0.0.1:8080/v1", "m", timeout=0.0)


def test_serve_takes_the_model_options_and_refuses_bad_ones(tmp_path: Path, capsys) -> None:
    """`petridish serve` builds the server's one ModelEndpoint from the same options; bad
    ones exit 2 before anything starts, never quoting the key file's contents."""
    key = tmp_path / "key"
    key.write_text(KEY + "\n")
    assert main(["serve", "--data", str(tmp_path), "--model-url", "http://127.0.0.1:9/v1"]) == 2
    assert capsys.readouterr().err == "petridish: --model-url needs --model\n"
    assert main(["serve", "--data", str(tmp_path), "--model-url", "ftp://x", "--model", "m",
                 "--model-key-file", str(key)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("petridish: --model-url must be an http(s) URL") and KEY not in err
    assert main(["serve", "--data", str(tmp_path), "--model", "m"]) == 2
    assert capsys.readouterr().err == "petridish: --model and --model-key-file need --model-url\n"
    assert not (tmp_path / "owner.token").exists()  # nothing started
