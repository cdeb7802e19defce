"""The `--model-*` command-line options, argparse only (building `petridish`'s parser must
not import attrs, numpy or httpx). `endpoint.endpoint_from_args` turns them into a
`ModelEndpoint`; `petridish serve` can add the same options."""

from __future__ import annotations

import argparse
from pathlib import Path

KEY_ENV = "PETRIDISH_MODEL_KEY"
DEFAULT_TIMEOUT = 30.0


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """`--model-url`, `--model`, `--model-key-file`, `--model-timeout`."""
    group = parser.add_argument_group("model (OpenAI-compatible chat completions)")
    group.add_argument("--model-url", help="endpoint base URL, e.g. http://127.0.0.1:8080/v1 "
                                           "(without it: the deterministic setup)")
    group.add_argument("--model", help="model name sent with every request")
    group.add_argument("--model-key-file", type=Path,
                       help=f"file holding the API key (default: ${KEY_ENV}, else no key)")
    group.add_argument("--model-timeout", type=float, default=DEFAULT_TIMEOUT,
                       help=f"seconds a model call may take in all, from connecting to the "
                            f"answer's last byte (default {DEFAULT_TIMEOUT:g})")
