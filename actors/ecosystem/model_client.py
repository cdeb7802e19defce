"""A synchronous client for an OpenAI-compatible chat-completions endpoint, and the call budget.

The URL, model name and key come from configuration (`endpoint.ModelEndpoint`). Every failure is a
`ModelFailure(stage, code)` with a code from a closed set: no provider payload and no
credential ever reaches a diagnostic. The client is blocking (httpx); an actor runs it in
a worker thread.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import httpx

from actors.ecosystem.endpoint import ModelEndpoint

FAILURE_CODES = (
    "budget_exhausted",   # the call budget denied a reservation
    "transport",          # connection refused, timeout, protocol error
    "http_status",        # a non-2xx answer
    "malformed_response",  # not a chat-completions body
    "invalid_json",       # the message content is not a JSON object
    "invalid_output",     # JSON that fails the stage's contract
    "duplicate_identity",  # organism mapping still inconsistent after its correction
    "food_web",           # graph invariant still broken after its correction
    "nonmaximal_choice",  # council selection still not maximal after its correction
    "not_approved",       # fidelity review did not approve (after at most one correction)
    "internal",           # the work raised (a bug, logged by the runtime); set by the run's
                          # actor, never raised as a ModelFailure
)


class ModelFailure(Exception):
    """A failed model stage; carries only a stage name and a closed code."""

    def __init__(self, stage: str, code: str) -> None:
        assert code in FAILURE_CODES, code
        super().__init__(f"{stage}: {code}")
        self.stage = stage
        self.code = code


@attrs.frozen
class Usage:
    """Token usage reported by successful responses."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens,
                     self.completion_tokens + other.completion_tokens)


@attrs.define
class CallBudget:
    """Every provider call reserves one unit first; successful usage is accumulated."""

    limit: int
    reserved: int = 0
    usage: Usage = attrs.field(factory=Usage)

    def reserve(self, stage: str) -> None:
        """Take one call from the budget or fail the stage with `budget_exhausted`."""
        if self.reserved >= self.limit:
            raise ModelFailure(stage, "budget_exhausted")
        self.reserved += 1

    def account(self, usage: Usage) -> None:
        """Add a successful response's usage."""
        self.usage = self.usage + usage


class ChatClient:
    """POST {base_url}/chat/completions; returns the parsed JSON object the model wrote."""

    def __init__(self, endpoint: ModelEndpoint, transport: httpx.BaseTransport | None = None
                 ) -> None:
        self.endpoint = endpoint
        headers = {"Content-Type": "application/json"}
        if endpoint.api_key:
            headers["Authorization"] = f"Bearer {endpoint.api_key}"
        self._http = httpx.Client(base_url=endpoint.base_url.rstrip("/") + "/",
                                  headers=headers, timeout=endpoint.timeout,
                                  transport=transport, trust_env=False)

    def close(self) -> None:
        """Release the connection pool."""
        self._http.close()

    def complete(self, stage: str, system: str, user: dict[str, Any]) -> tuple[Any, Usage]:
        """One chat completion for `stage`; returns (parsed JSON content, usage)."""
        body = {"model": self.endpoint.model, "temperature": 0,
                "response_format": {"type": "json_object"},
                "messages": [{"role": "system", "content": system},
                             {"role": "user", "content": json.dumps(user, ensure_ascii=False)}]}
        try:
            response = self._http.post("chat/completions", json=body)
        except httpx.HTTPError:
            raise ModelFailure(stage, "transport") from None
        if not response.is_success:
            raise ModelFailure(stage, "http_status")
        try:
            payload = response.json()
            content = payload["choices"][0]["message"]["content"]
            usage = payload.get("usage") or {}
            spent = Usage(int(usage.get("prompt_tokens", 0)),
                          int(usage.get("completion_tokens", 0)))
        # OverflowError: a usage count of Infinity, which json reads and int() cannot take.
        except (ValueError, KeyError, IndexError, TypeError, AttributeError, OverflowError):
            raise ModelFailure(stage, "malformed_response") from None
        if not isinstance(content, str):
            raise ModelFailure(stage, "malformed_response")
        try:
            data = json.loads(content)
        except ValueError:
            raise ModelFailure(stage, "invalid_json") from None
        if not isinstance(data, dict):
            raise ModelFailure(stage, "invalid_json")
        return data, spent
