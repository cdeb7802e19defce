"""Every response carries the security headers (server/headers.py): every HTML page under
web/ (found from the files, not a list), the pages served at their folders, and static
scripts, styles, media and JSON; and no encoding of `..` reaches a file outside web/."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import trio

from server.config import WEB_DIR
from server.headers import NOT_A_PAGE, csp_text, page_policy
from tests.server.csp import directives
from tests.server.ws_harness import running_server

NOT_PAGES = ("/js/client.js", "/css/site.css", "/lab/voice.ogg", "/healthz")
SECRET = "secret-beside-web-7d1c"


def _every_response_header(path: str, h: httpx.Headers) -> dict[str, str]:
    assert h["x-content-type-options"] == "nosniff", path
    assert h["x-frame-options"] == "DENY", path
    assert h["referrer-policy"] == "no-referrer", path
    csp = directives(h["content-security-policy"])
    assert csp["frame-ancestors"] == "'none'", path
    return csp


async def test_every_page_and_static_file_carries_the_security_headers(tmp_path: Path) -> None:
    pages = sorted("/" + str(p.relative_to(WEB_DIR)) for p in WEB_DIR.rglob("*.html"))
    assert {"/admin/index.html", "/lab/arena.html", "/lobby/index.html"} <= set(pages)
    folders = sorted({p.rsplit("/", 1)[0] + "/" for p in pages if p.endswith("/index.html")})
    async with running_server(tmp_path) as srv, httpx.AsyncClient(base_url=srv.url) as http:
        for path in [*pages, *folders, "/"]:
            r = await http.get(path)
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/html"), \
                path
            csp = _every_response_header(path, r.headers)
            assert csp["object-src"] == "'none'" and csp["base-uri"] == "'none'", path
            assert csp == directives(csp_text(page_policy(path))), path
            assert "'unsafe-eval'" not in r.headers["content-security-policy"], path
            assert "script-src" not in csp or csp["script-src"] == "'self'", path
        console = directives((await http.get("/admin/")).headers["content-security-policy"])
        assert console["default-src"] == "'none'" and console["form-action"] == "'none'"
        assert console["style-src"] == "'self'"  # not even inline styles where the token is
        for path in NOT_PAGES:
            r = await http.get(path)
            assert r.status_code == 200, path
            csp = _every_response_header(path, r.headers)
            assert csp == dict(NOT_A_PAGE), path


ICON = '<link rel="icon" href="/favicon.svg" type="image/svg+xml">'


async def test_a_page_links_the_icon_where_its_policy_lets_it_load(tmp_path: Path) -> None:
    """Every page whose policy loads images from its own origin links the site's icon (a
    browser asks /favicon.ico of a page that links none, and logs its 404 as an error); the
    pages that mount organisms or hold the owner's token load no image at all, and link none
    (a link there is refused, an error in the console; Chromium asks them for no icon)."""
    for page in sorted(WEB_DIR.rglob("*.html")):
        path = "/" + str(page.relative_to(WEB_DIR))
        p = page_policy(path)
        loads = p.get("img-src", p["default-src"]) == "'self'"
        assert (ICON in page.read_text()) == loads, path
    async with running_server(tmp_path) as srv, httpx.AsyncClient(base_url=srv.url) as http:
        r = await http.get("/favicon.svg")
        assert r.status_code == 200 and r.headers["content-type"] == "image/svg+xml"
        assert r.text.startswith("<svg ")


async def test_live_answers_are_never_stored(tmp_path: Path) -> None:
    # A cache that kept /healthz or /metrics would show a monitor a server's old state.
    async with running_server(tmp_path) as srv, httpx.AsyncClient(base_url=srv.url) as http:
        for path in ("/healthz", "/metrics"):
            r = await http.get(path)
            assert r.status_code == 200, path
            assert r.headers["cache-control"] == "no-store", path
        assert (await http.get("/healthz")).json()["ok"] is True


async def test_a_not_modified_page_keeps_its_policy(tmp_path: Path) -> None:
    # A browser merges a 304's headers into the page it cached: a 304 that carried the
    # policy of what is not a page (it names no content type) blocked a reloaded page's
    # own stylesheet. It carries no policy, so the cached page's stands.
    async with running_server(tmp_path) as srv, httpx.AsyncClient(base_url=srv.url) as http:
        for path in ("/lab/judge.html", "/css/site.css"):
            first = await http.get(path)
            again = await http.get(path, headers={"If-None-Match": first.headers["etag"]})
            assert again.status_code == 304, path
            assert "content-security-policy" not in again.headers, path
            assert again.headers["x-content-type-options"] == "nosniff", path


async def _raw_get(port: int, target: str) -> tuple[int, str]:
    """GET `target` exactly as written (no client normalises it): status and body."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              "Connection: close\r\n\r\n".encode("latin-1"))
        data = b""
        with trio.fail_after(10):
            while b"\r\n\r\n" not in data or len(data) < _length(data):
                chunk = await stream.receive_some(65536)
                if not chunk:
                    break
                data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body.decode("latin-1")


def _length(data: bytes) -> int:
    """The length of the whole response whose head is in `data` (by its Content-Length)."""
    head, _, _ = data.partition(b"\r\n\r\n")
    found = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    return len(head) + 4 + (int(found.group(1)) if found else 0)


ESCAPES = [
    "/../secret.txt", "/js/../../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E/secret.txt",
    "/.%2e/secret.txt", "/%2e./secret.txt", "/js/%2e%2e/%2e%2e/secret.txt",
    "/js/..%2f..%2fsecret.txt", "/js/%2e%2e%2f%2e%2e%2fsecret.txt", "/%2e%2e%2fsecret.txt",
    "/%252e%252e/secret.txt", "/js/%252e%252e%252f%252e%252e%252fsecret.txt",
    "/%25252e%25252e/secret.txt", "/..%5csecret.txt", "/js/..%5c..%5csecret.txt",
    "/js\\..\\..\\secret.txt", "/%5c..%5csecret.txt", "/%c0%ae%c0%ae/secret.txt",
    "/%c0%af../secret.txt", "/..%00/secret.txt", "//secret.txt", "/%2fsecret.txt",
    f"/{'%2e%2e/' * 8}secret.txt", "/js/./../../secret.txt", "/js%2f..%2f..%2fsecret.txt",
]


async def test_no_encoding_of_dot_dot_leaves_the_web_folder(tmp_path: Path) -> None:
    web = tmp_path / "site" / "web"
    (web / "js").mkdir(parents=True)
    (web / "lobby").mkdir()
    (web / "js" / "a.js").write_text("export const a = 1;\n")
    (web / "lobby" / "index.html").write_text("<!doctype html><title>lobby</title>\n")
    (web.parent / "secret.txt").write_text(SECRET)
    (tmp_path / "secret.txt").write_text(SECRET)
    async with running_server(tmp_path / "data", web_dir=web) as srv:
        status, body = await _raw_get(srv.port, "/js/a.js")
        assert (status, body) == (200, "export const a = 1;\n")  # the raw client works
        for target in ESCAPES:
            status, body = await _raw_get(srv.port, target)
            assert SECRET not in body, f"{target} reached a file outside web/"
            assert status in (400, 404), (target, status)


async def test_a_page_reached_by_another_spelling_of_its_path_keeps_its_policy(
        tmp_path: Path) -> None:
    # A browser sends `//admin/` as written (and `/%2F` decodes to `//`); the static files
    # serve the console there, so the console's policy must come with it, not the site's.
    spellings = {"//admin/": "/admin/", "/%2Fadmin/index.html": "/admin/",
                 "//lab/arena.html": "/lab/arena.html", "/lab//judge.html": "/lab/judge.html",
                 "/lab/.//x/../arena.html": "/lab/arena.html"}
    async with running_server(tmp_path) as srv, httpx.AsyncClient() as http:
        for target, page in spellings.items():
            r = await http.get(srv.url + target)
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/html"), \
                target
            assert r.headers["content-security-policy"] == csp_text(page_policy(page)), target


async def test_a_folder_without_its_slash_is_redirected_by_its_path_alone(
        tmp_path: Path) -> None:
    """Not to a URL built from the client's Host and the connection's scheme (http:// behind
    a TLS proxy; any host a request names), and `//lobby` does not name a host."""
    async with running_server(tmp_path) as srv, httpx.AsyncClient() as http:
        for target, location in {"/lobby": "/lobby/", "//lobby": "/lobby/",
                                 "/lobby?x=1": "/lobby/?x=1"}.items():
            r = await http.get(srv.url + target, headers={"host": "evil.example"})
            assert (r.status_code, r.headers["location"]) == (307, location), target
            page = await http.get(srv.url + location)
            assert page.status_code == 200 and page.headers["content-type"].startswith(
                "text/html"), target
