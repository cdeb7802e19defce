"""The reflection in a model's words: one budgeted call over the engine's facts.

A finished run's reflection (`reflect.reflection`) is made of engine-derived facts; with a
model configured, the run's actor asks it once to phrase them for people (off the actor's
task; tried again, as every model call is, while the endpoint is unavailable: its budget
is that one call's ATTEMPTS). The request carries the facts and the score breakdown only;
the reply must be `{"text": "..."}`, a nonempty string of at most `MAX_TEXT` characters,
plain text in lines (`protocol.jsontext.plain_text`: no NUL, lone surrogate or control
character but tab, LF and CR). The result is a `Phrased` event labelled `model`, or, on
any failure, labelled `engine` with the finite `{stage, code}` of the failure: the facts
then stand alone. No provider text reaches a diagnostic; the phrased text itself is the
content asked for, shown with its label.
"""

from __future__ import annotations

from typing import Any

from actors.ecosystem.events import Ended, Phrased
from actors.ecosystem.model_client import ATTEMPTS, CallBudget, Client, ModelFailure
from protocol.jsontext import plain_text

STAGE = "reflection"
MAX_CALLS = ATTEMPTS  # one call, tried again while unavailable
MAX_TEXT = 1200
SYSTEM = ("Phrase this finished ecosystem run's reflection for its player in at most 120 "
          "words, using only the facts given (peaks, crashes, extinctions, which decisions "
          "took effect and what followed them, the score by fitness weight); invent nothing. "
          "Reply with JSON {\"text\": \"...\"}.")


def request(ended: Ended) -> dict[str, Any]:
    """The user message: the engine's facts and the score breakdown."""
    return {"facts": ended.reflection, "score": ended.breakdown}


def parse(data: Any) -> str:
    """The text of a reply, or `invalid_output`."""
    if not isinstance(data, dict) or set(data) != {"text"}:
        raise ModelFailure(STAGE, "invalid_output")
    text = data["text"]
    if (not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT
            or not plain_text(text, lines=True)):
        raise ModelFailure(STAGE, "invalid_output")
    return text.strip()


def phrase(client: Client, model: str, ended: Ended) -> Phrased:
    """The `Phrased` event for a finished run: the model's words, or the labelled failure."""
    budget = CallBudget(MAX_CALLS)
    try:
        data = budget.call(client, STAGE, SYSTEM, {"task": "phrase_reflection",
                                                   **request(ended)})
        return Phrased("model", parse(data), model, None, budget.reserved)
    except ModelFailure as failure:
        return unphrased(failure.code, budget.reserved)


def unphrased(code: str, calls: int = 0) -> Phrased:
    """The engine's facts stand alone: the model could not phrase them (`code`)."""
    return Phrased("engine", None, None, {"stage": STAGE, "code": code}, calls)
