"""A synchronous client for an OpenAI-compatible chat-completions endpoint, and the call budget.

The URL, model name and key come from configuration (`endpoint.ModelEndpoint`). Every failure is a
`ModelFailure(stage, code)` with a code from a closed set: no provider payload and no
credential ever reaches a diagnostic. The client is blocking (httpx, through
`actors.chat_completions`, which bounds each call's time and size); an actor runs it in a
worker thread.

A call the endpoint answers 429 or 5xx, or whose connection it breaks (`unavailable`), is
made again, at most ATTEMPTS times in all, each attempt reserved from the budget: after
the seconds its Retry-After named (`chat_completions.retry_after` caps them), else after
BACKOFF, doubled at each further attempt. The client waits through the `sleep` it is
given: an actor's worker thread sleeps on trio's clock, the command line on the process's
(`chat_completions.pause`); this module reads no clock.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs

from actors import chat_completions
from actors.chat_completions import ChatError
from actors.ecosystem.endpoint import ModelEndpoint

FAILURE_CODES = (
    "budget_exhausted",   # the call budget denied a reservation
    "transport",          # connection refused, a wait or the whole call past the timeout
    "unavailable",        # 429 or 5xx, or the connection broken, at each try (ATTEMPTS, or
                          # as many as the budget had left)
    "http_status",        # any other non-2xx answer (a redirect too: none is followed)
    "malformed_response",  # not a strict-JSON chat-completions body within MAX_ANSWER bytes
    "invalid_json",       # the message content is not a JSON object (strict JSON)
    "invalid_output",     # JSON that fails the stage's contract
    "duplicate_identity",  # organism mapping still inconsistent after its correction
    "food_web",           # graph invariant still broken after its correction
    "nonmaximal_choice",  # council selection still not maximal after its correction
    "not_approved",       # fidelity review did not approve (after at most one correction)
    "internal",           # the work raised (a bug, logged by the runtime); set by the run's
                          # actor, never raised as a ModelFailure
)


ATTEMPTS = 3  # tries of one call the endpoint answers `unavailable`
BACKOFF = 0.5  # seconds before the second try when Retry-After names none; doubled after


class ModelFailure(Exception):
    """A failed model stage; carries only a stage name, a closed code and, for
    `unavailable`, the endpoint's Retry-After in seconds (None when it named none)."""

    def __init__(self, stage: str, code: str, retry_after: float | None = None) -> None:
        assert code in FAILURE_CODES, code
        super().__init__(f"{stage}: {code}")
        self.stage = stage
        self.code = code
        self.retry_after = retry_after


class Client(Protocol):
    """What a budgeted call needs from a model client (`ChatClient`)."""

    def complete(self, stage: str, system: str, user: dict[str, Any]) -> tuple[Any, Usage]:
        """One call; returns the parsed JSON content and its usage."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait `seconds` before a call is tried again."""
        ...


def retry_wait(attempt: int, retry_after: float | None) -> float:
    """Seconds to wait after failed attempt `attempt` (0-based) before the next: the
    endpoint's `retry_after`, which its parser capped (`chat_completions.retry_after`)."""
    if retry_after is not None:
        return retry_after
    return BACKOFF * 2 ** attempt


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

    def call(self, client: Client, stage: str, system: str, user: dict[str, Any]) -> Any:
        """One provider call for `stage`: each attempt reserved first, an `unavailable` one
        tried again (see the module's docstring) while attempts and the budget last; the
        successful response's usage is accounted. Returns the parsed JSON content."""
        attempt = 0
        while True:
            self.reserve(stage)
            try:
                data, usage = client.complete(stage, system, user)
            except ModelFailure as failure:
                attempt += 1
                if (failure.code != "unavailable" or attempt == ATTEMPTS
                        or self.reserved >= self.limit):
                    raise
                client.sleep(retry_wait(attempt - 1, failure.retry_after))
            else:
                self.account(usage)
                return data


class ChatClient:
    """POST {base_url}/chat/completions; returns the parsed JSON object the model wrote.

    Each call is `chat_completions.answer`'s: `endpoint.timeout` seconds in all, at most
    `MAX_ANSWER` bytes, no redirect followed, strict JSON. `sleep(seconds)` is how it waits
    before a call is tried again."""

    def __init__(self, endpoint: ModelEndpoint, sleep: Callable[[float], None]) -> None:
        self.endpoint = endpoint
        self.sleep = sleep
        self._http = chat_completions.client(endpoint.timeout, endpoint.api_key)

    def close(self) -> None:
        """Release the HTTP client."""
        self._http.close()

    def complete(self, stage: str, system: str, user: dict[str, Any]) -> tuple[Any, Usage]:
        """One chat completion for `stage`; returns (parsed JSON content, usage)."""
        body = {"model": self.endpoint.model, "temperature": 0,
                "response_format": {"type": "json_object"},
                "messages": [{"role": "system", "content": system},
                             {"role": "user", "content": json.dumps(user, ensure_ascii=False)}]}
        try:
            content, usage = chat_completions.answer(self._http, self.endpoint.chat_url, body,
                                                     self.endpoint.timeout)
        except ChatError as error:
            raise ModelFailure(stage, error.code, error.retry_after) from None
        spent = _usage(usage)
        if spent is None:
            raise ModelFailure(stage, "malformed_response")
        try:
            data = chat_completions.loads(content)
        except ValueError:
            raise ModelFailure(stage, "invalid_json") from None
        if not isinstance(data, dict):
            raise ModelFailure(stage, "invalid_json")
        return data, spent


def _usage(usage: Mapping[str, Any]) -> Usage | None:
    """The counts of an answer's usage (an absent one is 0); None unless each is a
    nonnegative integer (a string, a fraction, a negative or true is not a count)."""
    counts = [usage.get(key, 0) for key in ("prompt_tokens", "completion_tokens")]
    if all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
        return Usage(*counts)
    return None
