"""The static pages and files under web/, served by whatever path no route matches.

A folder asked without its trailing slash is redirected to it (Starlette's StaticFiles,
`html=True`) by a relative `Location`, the path alone: StaticFiles builds an absolute URL
from the client's `Host` and the connection's scheme, so behind a TLS proxy it sent the
browser to `http://`, and to whatever host a request named. Leading slashes are collapsed
(`//lobby` would name the host `lobby`).
"""

from __future__ import annotations

from starlette.responses import RedirectResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope


class Pages(StaticFiles):
    """web/'s files, a folder's page at the folder (see the module doc)."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        """The file (or folder page) at `path`, or the redirect to the folder's slash."""
        response = await super().get_response(path, scope)
        if isinstance(response, RedirectResponse):
            raw = scope.get("raw_path") or scope["path"].encode()
            query = scope.get("query_string", b"")
            target = "/" + raw.decode("latin-1").lstrip("/") + "/"
            response.headers["location"] = target + (f"?{query.decode('latin-1')}"
                                                     if query else "")
        return response
