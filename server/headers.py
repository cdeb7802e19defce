"""Security headers on what the server sends, from one table (an ASGI middleware).

Every HTTP response gets `EVERY_RESPONSE`; every HTML page also gets `EVERY_PAGE` and the
Content-Security-Policy of the first row of `PAGE_POLICIES` whose path matches (a row
ending in `/` matches a prefix, any other row its path exactly); any other response gets
`NOT_A_PAGE` (nothing loads, nothing frames it). A header the route set itself is kept. To harden another page, add a row; to add a header, add it to a table.

The pages that mount organisms get the strictest policies: an organism is a shader (no
network access of its own) or a panel in a sandboxed `srcdoc` iframe, which inherits the
page's policy on top of the one the page injects, so `default-src 'none'` with only the
page's own script, styles, API calls and (on the judging page) voice track left open
forbids every request an organism could make: images, fonts, stylesheets, frames,
media, prefetches, form posts, navigations of a base URL.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from typing import Any

Policy = Mapping[str, str]  # directive -> its sources


def policy(**directives: str) -> Policy:
    """A CSP from keyword directives (`default_src="'none'"` is `default-src 'none'`)."""
    return {name.replace("_", "-"): value for name, value in directives.items()}


# Every page: nothing framed, no plugins, no base-URL tricks.
_LOCKED = policy(object_src="'none'", base_uri="'none'", frame_ancestors="'none'")

# Other pages: their own origin only. Style attributes are allowed (the field's and the
# lobby's pages colour swatches and place markers with them; a style cannot run script).
SITE = {**policy(default_src="'self'", style_src="'self' 'unsafe-inline'",
                 form_action="'self'"), **_LOCKED}
# Pages that draw shaders: their own script, styles and API/websocket calls only.
SHADERS = {**policy(default_src="'none'", script_src="'self'", style_src="'self'",
                    connect_src="'self'", form_action="'none'"), **_LOCKED}
# The judging page also plays the bundled voice track it analyses.
JUDGING = {**SHADERS, **policy(media_src="'self'")}
# The owner's arena mounts panels: a srcdoc document inherits this policy, and its one
# <style> element is inline (nothing it could load is allowed).
ARENA = {**SHADERS, **policy(style_src="'self' 'unsafe-inline'")}

# The owner's console holds the owner token: its own script, styles and socket only.
CONSOLE = SHADERS
# Whatever is not a page (scripts, styles, JSON, media): opened as a document, it may load
# nothing and be framed by nobody.
NOT_A_PAGE = policy(default_src="'none'", frame_ancestors="'none'")

PAGE_POLICIES: tuple[tuple[str, Policy], ...] = (
    ("/admin/", CONSOLE),
    ("/lab/arena.html", ARENA),
    ("/lab/judge.html", JUDGING),
    ("/lab/", SHADERS),  # the gallery and the lab's landing page
    ("/", SITE),
)
EVERY_RESPONSE: Mapping[str, str] = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",  # for browsers that do not read frame-ancestors
}
EVERY_PAGE: Mapping[str, str] = {
    "cross-origin-opener-policy": "same-origin",
}


def csp_text(p: Policy) -> str:
    """The header value of a policy."""
    return "; ".join(f"{name} {sources}" for name, sources in p.items())


def page_policy(path: str) -> Policy:
    """The policy of the page at `path` (the last row matches everything), read as the
    static files read it: `//admin/` is the console, `/lab/x/..//arena.html` the arena."""
    clean = posixpath.normpath("/" + path.lstrip("/"))  # one leading `/`: normpath keeps two
    path = clean + "/" if path.endswith("/") and clean != "/" else clean
    for prefix, p in PAGE_POLICIES:
        if path == prefix or (prefix.endswith("/") and path.startswith(prefix)):
            return p
    raise AssertionError("PAGE_POLICIES ends with the row for '/'")


def _headers_for(path: str, html: bool | None) -> list[tuple[bytes, bytes]]:
    """The headers to add; `html` None for a 304, whose headers the browser merges into the
    response it cached: it gets no policy of its own (a 304 names no content type, and
    `NOT_A_PAGE` would then replace a cached page's policy)."""
    extra = dict(EVERY_RESPONSE)
    if html:
        extra.update(EVERY_PAGE)
    if html is not None:
        extra["content-security-policy"] = csp_text(page_policy(path) if html else NOT_A_PAGE)
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in extra.items()]


class SecurityHeaders:
    """ASGI middleware adding the tables' headers to every HTTP response of `app`."""

    def __init__(self, app: Callable[..., Any]) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "/")

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                media = next((v for k, v in headers if k.lower() == b"content-type"), b"")
                html = None if message.get("status") == 304 else (
                    media.split(b";")[0].strip().lower() == b"text/html")
                headers += [(k, v) for k, v in _headers_for(path, html) if k not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
