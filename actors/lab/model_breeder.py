"""Births through a model: OpenAI-compatible chat completions over httpx (synchronous).

The birth prompt is the track's contract followed by the aesthetic directive, labelled
as the thing the result is judged on. The reply must be one fenced block, optionally
preceded by a `TITLE:` line of at most four words; the caller then puts the code through
`validate` like any other birth's (so a validator that raises is never the model's
error). The caller runs this off the actor task (it blocks).
The exchange is `actors.chat_completions.answer`'s: `timeout` seconds in all, a bounded
body, no redirect, strict JSON; a model error is told by its closed code only.
"""

from __future__ import annotations

import re

import attrs

from actors import chat_completions
from actors.chat_completions import ChatError
from actors.lab.contract import contract_text
from protocol.jsontext import NOT_PLAIN, plain_text
from protocol.ops.lab import MAX_TITLE
from protocol.text import utf16_len

MAX_TITLE_WORDS = 4
_LANGUAGES = {"shader": ("glsl", ""), "panel": ("html", "")}
_FENCE = re.compile(r"```([\w+-]*)[ \t]*\n(.*?)\n?```", re.DOTALL)


@attrs.frozen
class Birth:
    """A model birth. `reason` is None when the reply has the format (its code is yet to
    be validated); otherwise `code` holds the raw reply (empty after a model error).
    `retry_after`: the seconds an `unavailable` endpoint's Retry-After named, else None."""

    prompt: str
    code: str
    title: str | None
    reason: str | None
    retry_after: float | None = None


def birth_prompt(track: str, directive: str) -> str:
    """Contract first, then the directive, labelled as what the result is judged on."""
    return (
        contract_text(track) + "\nAesthetic directive (this is what your result is judged "
        "on):\n" + directive.strip() + "\n"
    )


def parse_reply(track: str, reply: str) -> tuple[str, str | None] | str:
    """(code, title) from a model reply, or the reason the reply breaks the format."""
    text = reply.replace("\r\n", "\n").strip()
    title = None
    first, _, rest = text.partition("\n")
    if first.strip().startswith("TITLE:"):
        title = first.strip()[len("TITLE:") :].strip()
        if not title:
            return "empty title"
        if len(title.split()) > MAX_TITLE_WORDS:
            return "title over four words"
        if utf16_len(title) > MAX_TITLE:  # (as an owner's title is bounded)
            return f"title over {MAX_TITLE} characters"
        if not plain_text(title):  # (a JSON escape in the reply can make one)
            return f"title is {NOT_PLAIN}"
        text = rest.strip()
    blocks = _FENCE.findall(text)
    if not blocks or text.count("```") != 2:
        return "expected exactly one fenced block"
    lang, code = blocks[0]
    if lang.lower() not in _LANGUAGES[track]:
        return f"fenced block is {lang!r}, expected {_LANGUAGES[track][0]!r}"
    if _FENCE.sub("", text).strip():
        return "text outside the fenced block"
    return code, title


class ModelBreeder:
    """A client for one chat-completions endpoint (`base_url` + `/chat/completions`)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        temperature: float = 1.0,
    ):
        self._client = chat_completions.client(timeout, api_key)
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._model = model
        self._timeout = timeout
        self._temperature = temperature

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def complete(self, prompt: str) -> str:
        """The assistant text for one user prompt; raises `ChatError` (a closed code)."""
        body = {"model": self._model, "temperature": self._temperature,
                "messages": [{"role": "user", "content": prompt}]}
        return chat_completions.answer(self._client, self._url, body, self._timeout)[0]

    def breed(self, track: str, directive: str) -> Birth:
        """One birth: prompt, reply, format check (the caller validates the code)."""
        prompt = birth_prompt(track, directive)
        try:
            reply = self.complete(prompt)
        except ChatError as error:
            return Birth(prompt, "", None, f"model error: {error.code}", error.retry_after)
        parsed = parse_reply(track, reply)
        if isinstance(parsed, str):
            return Birth(prompt, reply, None, parsed)
        code, title = parsed
        return Birth(prompt, code, title, None)
