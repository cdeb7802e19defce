"""A scripted model for the interpreter: a pond's answers, a good reply for each stage of the
pipeline (`HAPPY`, in order) and some bad ones, and `interpret` against the fake model
answering a script (tests/ecosystem/test_interpret.py and the tests of what uses it)."""

from __future__ import annotations

import copy
from typing import Any

from actors.ecosystem.endpoint import ModelEndpoint
from actors.ecosystem.interpret import ModelInterpreter
from actors.ecosystem.model_client import ChatClient
from tests.ecosystem.conftest import FakeModel

KEY = "sk-test-credential-123"
ANSWERS = {"world": "A quiet pond where algae bloom and snails graze",
           "threat": "A hungry pike stalks the snails at dusk",
           "reward": "Keep all three species alive"}


def span(source: str, word: str, slot: str, nth: int = 0) -> dict[str, Any]:
    text = ANSWERS[source]
    start = text.index(word)
    for _ in range(nth):
        start = text.index(word, start + 1)
    return {"slot": slot, "source": source, "start": start, "end": start + len(word)}


MAPPING = {"organisms": [span("world", "algae", "A"), span("world", "snails", "B"),
                         span("threat", "pike", "C")]}
ENVIRONMENT = {
    "environment": {"abundance": "rich", "distribution": "clustered", "hazard": "toxin",
                    "volatility": "stable"},
    "fitness": {"survive": 0.4, "replicate": 0.15, "cooperate": 0.15, "explore": 0.15,
                "adapt": 0.15},
    "founders": {"balance": "balanced", "diversity": "varied", "preyStrategy": "armored",
                 "predatorStrategy": "ambush"},
    "world": {"regeneration": "steady", "pressure": "stability", "volatility": "stable",
              "intensity": "medium", "duration": "persistent"},
}
ROLES = {"species": [{"slot": "A", "role": "producer", "self": "neutral"},
                     {"slot": "B", "role": "grazer", "self": "neutral"},
                     {"slot": "C", "role": "hunter", "self": "territorial"}]}
LINKS = {"interactions": [{"pair": "A-B", "mode": "b_consumes_a"},
                          {"pair": "A-C", "mode": "neutral"},
                          {"pair": "B-C", "mode": "b_consumes_a"}]}
BROKEN_LINKS = {"interactions": [{"pair": "A-B", "mode": "b_consumes_a"},
                                 {"pair": "A-C", "mode": "neutral"},
                                 {"pair": "B-C", "mode": "neutral"}]}
APPROVE = {"verdict": "approve"}
REJECT = {"verdict": "reject", "focus": "B-C"}
COUNCIL = {"choice": {"selected": "steady", "options": [{"label": "steady", "probability": 0.6},
                                                        {"label": "bold", "probability": 0.3}]}}
NONMAXIMAL = {"choice": {"selected": "bold", "options": [{"label": "steady", "probability": 0.6},
                                                         {"label": "bold", "probability": 0.3}]}}
HAPPY = [MAPPING, ENVIRONMENT, ROLES, LINKS, APPROVE, COUNCIL]
HAPPY_TASKS = ["map_organisms", "environment", "roles", "links", "review", "council"]


def interpret(fake: FakeModel, script: list[Any], max_calls: int = 13,
              answers: dict[str, str] = ANSWERS, waits: list[float] | None = None):
    """The pipeline against `fake` answering `script`; the client's waits before a call is
    tried again go to `waits` (nothing sleeps: the actor's and the CLI's sleeps are tested
    through them)."""
    fake.script = copy.deepcopy(script)
    client = ChatClient(ModelEndpoint(fake.url, "fake-model", KEY, timeout=5.0),
                        (waits if waits is not None else []).append)
    try:
        return ModelInterpreter(client, max_calls).interpret(answers)
    finally:
        client.close()
