"""The reflection in the model's words: one budgeted call (tried again while the model is
unavailable); anything but `{"text": ...}` leaves the engine's facts standing alone,
labelled with the finite failure."""

from __future__ import annotations

from typing import Any

import pytest

from actors.ecosystem.events import Ended, Phrased, decode, encode
from actors.ecosystem.model_client import ATTEMPTS, ModelFailure, Usage
from actors.ecosystem.phrase import MAX_TEXT, phrase

ENDED = Ended({"total": 0.5, "components": {}}, {"source": "engine", "peaks": []})


class Scripted:
    """A client answering scripted values in turn, the last one from then on (a failure is
    raised); its waits before a call is tried again are recorded."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.waits: list[float] = []

    def complete(self, stage: str, system: str, user: dict[str, Any]) -> tuple[Any, Usage]:
        self.calls.append((stage, user))
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, ModelFailure):
            raise answer
        return answer, Usage(3, 4)

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


def test_the_model_phrases_the_facts_once() -> None:
    client = Scripted({"text": "  The snails held on.  "})
    event = phrase(client, "m", ENDED)
    assert event == Phrased("model", "The snails held on.", "m", None, 1)
    assert client.calls == [("reflection", {"task": "phrase_reflection",
                                            "facts": ENDED.reflection,
                                            "score": ENDED.breakdown})]
    assert decode(encode(event)) == event


@pytest.mark.parametrize("answer, code", [
    ({"text": ""}, "invalid_output"),
    ({"text": "x" * (MAX_TEXT + 1)}, "invalid_output"),
    ({"text": "fine", "extra": 1}, "invalid_output"),
    ({"words": "fine"}, "invalid_output"),
    (ModelFailure("reflection", "transport"), "transport"),
    (ModelFailure("reflection", "invalid_json"), "invalid_json"),
])
def test_anything_else_leaves_the_facts_alone(answer: Any, code: str) -> None:
    event = phrase(Scripted(answer), "m", ENDED)
    assert event == Phrased("engine", None, None, {"stage": "reflection", "code": code}, 1)


def test_an_unavailable_model_is_asked_again() -> None:
    busy = ModelFailure("reflection", "unavailable", 2.0)
    client = Scripted(busy, {"text": "The snails held on."})
    event = phrase(client, "m", ENDED)
    assert event == Phrased("model", "The snails held on.", "m", None, 2)
    assert client.waits == [2.0]
    client = Scripted(busy)
    event = phrase(client, "m", ENDED)
    assert event == Phrased("engine", None, None, {"stage": "reflection", "code": "unavailable"},
                            ATTEMPTS)
    assert len(client.calls) == ATTEMPTS and client.waits == [2.0] * (ATTEMPTS - 1)


@pytest.mark.parametrize("bad", ["\x00", chr(0xD800), chr(0xDC00), "\x1b[31m", "\x07",
                                 "\x08", "\x7f", "\x85", "\u202e", "\u2068"])
def test_text_that_is_not_plain_is_invalid_output(bad: str) -> None:
    """NUL, a lone surrogate (no UTF-8 text holds it), a control character: not kept as the
    model's words (they were, labelled `model`); the engine's facts stand alone."""
    event = phrase(Scripted({"text": f"The pond {bad} thrived."}), "m", ENDED)
    assert event == Phrased("engine", None, None,
                            {"stage": "reflection", "code": "invalid_output"}, 1)


def test_lines_of_plain_text_are_the_models_words() -> None:
    text = "The pike nearly starved.\n\n\tThe snails carried the pond \u2014 \U0001f40c."
    event = phrase(Scripted({"text": text}), "m", ENDED)
    assert event == Phrased("model", text, "m", None, 1)
