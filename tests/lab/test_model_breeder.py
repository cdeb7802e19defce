"""The model breeder against a fake chat-completions server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from actors.lab.births import (
    MAX_REJECTED_CODE,
    MAX_REJECTED_REASON,
    Candidate,
    birth_events,
)
from actors.lab.contract import contract_text
from actors.lab.model_breeder import ModelBreeder, birth_prompt, parse_reply
from actors.lab.organism import organism_id
from actors.lab.validation import validate
from protocol.ops.lab import MAX_CODE

SHADER = """void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    fragColor = vec4(uv, 0.5 + 0.5 * sin(u_time), 1.0);
}"""
DIRECTIVE = "Calm tidal greens that breathe slowly"


class FakeModel:
    """Serves queued replies; records every request body."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, object]] = []
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                fake.requests.append(
                    {
                        "path": self.path,
                        "json": json.loads(body),
                        "auth": self.headers.get("Authorization"),
                    }
                )
                status, payload = fake.replies.pop(0)
                data = (
                    payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                )
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def say(self, content: str, status: int = 200) -> None:
        self.replies.append(
            (status, {"choices": [{"message": {"role": "assistant", "content": content}}]})
        )


@pytest.fixture
def fake():
    f = FakeModel()
    yield f
    f.server.shutdown()
    f.server.server_close()


@pytest.fixture
def breeder(fake):
    b = ModelBreeder(fake.url, "local-model", api_key="k-test", timeout=10)
    yield b
    b.close()


def test_prompt_is_contract_then_labelled_directive(fake, breeder) -> None:
    fake.say(f"TITLE: Tidal Breath\n```glsl\n{SHADER}\n```")
    birth = breeder.breed("shader", DIRECTIVE)
    sent = fake.requests[0]
    assert sent["path"] == "/v1/chat/completions" and sent["auth"] == "Bearer k-test"
    assert sent["json"]["model"] == "local-model"
    [message] = sent["json"]["messages"]
    assert message["role"] == "user" and message["content"] == birth.prompt
    assert birth.prompt.startswith(contract_text("shader"))
    label = "Aesthetic directive (this is what your result is judged on):\n"
    assert birth.prompt.index(label) > len(contract_text("shader")) - 1
    assert birth.prompt.endswith(label + DIRECTIVE + "\n")
    assert (birth.code, birth.title, birth.reason) == (SHADER, "Tidal Breath", None)


def test_the_code_is_left_for_the_caller_to_validate(fake, breeder) -> None:
    fake.say("```glsl\nuniform float u_beat;\n" + SHADER + "\n```")
    birth = breeder.breed("shader", DIRECTIVE)
    assert birth.reason is None and "u_beat" in birth.code and birth.title is None
    assert validate("shader", birth.code) == "extra uniform"


def test_a_rejected_reply_keeps_only_its_head_and_the_id_of_the_whole(fake, breeder) -> None:
    # A model answering junk is rejected again and again: each record keeps the head of
    # the reply (not the 48,000 characters an owner may send) and the whole reply's id.
    fake.say("x" * 300_000)  # not the format: kept (as the rejection's code) cut short
    fake.say("```glsl\n" + SHADER + "//" * 150_000 + "\n```")  # the format, too long
    fake.say("```" + "g" * 100_000 + "\n" + SHADER + "\n```")  # a fence's language quoted
    for reason in ("expected exactly one fenced block", "too long", "fenced block is 'ggg"):
        birth = breeder.breed("shader", DIRECTIVE)
        candidate = Candidate("shader", birth.code, source="model")
        [rejected] = birth_events({}, candidate, birth.reason or validate("shader", birth.code), 0)
        assert rejected.reason.startswith(reason) and len(rejected.code) == MAX_REJECTED_CODE
        assert len(rejected.reason) <= MAX_REJECTED_REASON < MAX_REJECTED_CODE < MAX_CODE // 10
        assert rejected.id == organism_id("shader", birth.code)
        assert birth.code.startswith(rejected.code)


def test_panel_birth(fake, breeder) -> None:
    panel = (
        "<style>\n.pd{width:520px;height:400px;background:#111;color:#eee}\n</style>\n"
        '<div class="pd"><p>Culture Dish 7</p></div>'
    )
    fake.say(f"TITLE: Dark Ledger\n\n```html\n{panel}\n```\n")
    birth = breeder.breed("panel", DIRECTIVE)
    assert (birth.code, birth.title, birth.reason) == (panel, "Dark Ledger", None)
    assert "Culture Dish 7" in fake.requests[0]["json"]["messages"][0]["content"]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("Here you go!\n```glsl\n" + SHADER + "\n```", "text outside the fenced block"),
        (SHADER, "expected exactly one fenced block"),
        (
            "```glsl\n" + SHADER + "\n```\n```glsl\n" + SHADER + "\n```",
            "expected exactly one fenced block",
        ),
        ("TITLE: A Very Long Five Word\n```glsl\n" + SHADER + "\n```", "title over four words"),
        ("TITLE: " + "x" * 81 + "\n```glsl\n" + SHADER + "\n```", "title over 80 characters"),
        *[("TITLE: glow " + bad + " dusk\n```glsl\n" + SHADER + "\n```",
           "title is not plain text (a NUL, a lone surrogate or a control character)")
          for bad in ("\ud800", "\x00", "\x1b[31m", "\x07", "\t", "\x7f", "\x85", "\u202e")],
        ("TITLE:\n```glsl\n" + SHADER + "\n```", "empty title"),
        ("```html\n" + SHADER + "\n```", "fenced block is 'html', expected 'glsl'"),
    ],
)
def test_reply_format_is_enforced(reply: str, reason: str) -> None:
    assert parse_reply("shader", reply) == reason


def test_untagged_block_and_four_word_title_are_accepted() -> None:
    assert parse_reply("shader", "TITLE: One Two Three Four\n```\n" + SHADER + "\n```") == (
        SHADER,
        "One Two Three Four",
    )
    crlf = ("TITLE: Dusk\n```glsl\n" + SHADER + "\n```").replace("\n", "\r\n")
    assert parse_reply("shader", crlf) == (SHADER, "Dusk")


def test_model_errors_become_rejections(fake, breeder) -> None:
    fake.replies.append((500, {"error": "overloaded"}))
    fake.replies.append((200, {"choices": []}))
    fake.replies.append((200, "not json"))
    for _ in range(3):
        birth = breeder.breed("shader", DIRECTIVE)
        assert birth.reason.startswith("model error: ") and birth.code == ""


def test_birth_prompt_rejects_unknown_track() -> None:
    with pytest.raises(ValueError, match=r"^unknown track 'audio'"):
        birth_prompt("audio", DIRECTIVE)
