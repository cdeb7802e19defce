"""A Content-Security-Policy header read as its directives (tests/server/test_headers.py,
tests/lab/test_routes.py)."""

from __future__ import annotations

import re


def directives(csp: str) -> dict[str, str]:
    """A CSP header as directive -> sources."""
    return dict(re.match(r"\s*(\S+)\s*(.*)", part).groups() for part in csp.split(";"))
