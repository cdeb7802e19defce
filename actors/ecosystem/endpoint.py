"""Where a model lives: an OpenAI-compatible chat-completions endpoint, as one settings value.

`ModelEndpoint(base_url, model, api_key, timeout)` is what `petridish ecosystem setup` builds
from its options (`model_options.add_model_options`) and what `petridish serve` will hand the run worlds (and can hand the
lab's breeder: `ModelBreeder(e.base_url, e.model, api_key=e.api_key, timeout=e.timeout)`);
it depends on nothing else in this package. The key comes from a file (`--model-key-file`)
or the environment variable `PETRIDISH_MODEL_KEY`; it is kept out of `repr`, and no message
built here quotes it or the key file's contents.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import attrs

from actors.ecosystem.model_options import DEFAULT_TIMEOUT, KEY_ENV

MAX_KEY_FILE = 4096  # bytes; a key file is one line


class EndpointError(ValueError):
    """Model options that cannot make an endpoint; the message never quotes a key."""


@attrs.frozen
class ModelEndpoint:
    """One chat-completions endpoint: `{base_url}/chat/completions` with `model`; the key
    (None for endpoints that take none) is hidden from repr."""

    base_url: str
    model: str
    api_key: str | None = attrs.field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT

    def __attrs_post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise EndpointError("--model-url must be an http(s) URL such as "
                                "http://127.0.0.1:8080/v1")
        if not self.model.strip():
            raise EndpointError("--model must name the model")
        if not self.timeout > 0:
            raise EndpointError("--model-timeout must be positive")

    @property
    def chat_url(self) -> str:
        """The POST target."""
        return self.base_url.rstrip("/") + "/chat/completions"


def read_key(key_file: Path | None, environ: Mapping[str, str]) -> str | None:
    """The key from `key_file` (first line, stripped), else `$PETRIDISH_MODEL_KEY`, else None."""
    if key_file is None:
        return environ.get(KEY_ENV) or None
    try:
        with key_file.open("rb") as handle:
            raw = handle.read(MAX_KEY_FILE + 1)
    except OSError as err:
        raise EndpointError(f"--model-key-file {key_file}: cannot be read "
                            f"({err.strerror or type(err).__name__})") from None
    if len(raw) > MAX_KEY_FILE:
        raise EndpointError(f"--model-key-file {key_file}: longer than {MAX_KEY_FILE} bytes")
    try:
        lines = raw.decode("utf-8").strip().splitlines()
    except UnicodeDecodeError:
        raise EndpointError(f"--model-key-file {key_file}: not UTF-8 text") from None
    if not lines:
        raise EndpointError(f"--model-key-file {key_file}: is empty")
    return lines[0].strip()


def endpoint_from_args(args: argparse.Namespace, environ: Mapping[str, str]
                       ) -> ModelEndpoint | None:
    """The endpoint the options name, or None when `--model-url` is absent."""
    if args.model_url is None:
        if args.model is not None or args.model_key_file is not None:
            raise EndpointError("--model and --model-key-file need --model-url")
        return None
    if args.model is None:
        raise EndpointError("--model-url needs --model")
    return ModelEndpoint(args.model_url, args.model, read_key(args.model_key_file, environ),
                         args.model_timeout)
