"""Test glue for the live lab: sources with known fates, births through the protocol (waiting
out the validation that runs off the lab's task), a lab's stored stream, and polling a
page under its own CSP (Playwright's wait_for_function evaluates strings, which the
pages' script-src 'self' forbids; page.evaluate goes through the DevTools protocol)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import trio

from actors.lab.events import Born, encode
from actors.lab.organism import organism_id
from protocol.client import Client

GOOD = """void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    fragColor = vec4(uv, 0.5 + 0.5 * sin(u_time), 1.0);
}
"""
# Passes validate (glslang links one stage), fails the browser's link: the fragment
# shader reads a varying the arena's vertex shader never writes.
LINK_FAILS = """in vec2 v_uv;
void main() {
    float t = u_time * 0.5;
    vec2 p = v_uv * 2.0 - 1.0;
    fragColor = vec4(0.5 + 0.5 * sin(t + p.x * 3.0), 0.5 + 0.5 * cos(t + p.y * 2.0), 0.6, 1.0);
}
"""
# Two nested 64-step loops: the validator's cost limit (4096) exactly, seconds per frame
# on a software renderer.
HEAVY = """void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float a = 0.0;
    for (int i = 0; i < 64; i++) {
        for (int j = 0; j < 64; j++) {
            float k = float(i * j) * 0.013 + u_time;
            a += sin(k + uv.x * 7.0) * cos(uv.y * float(j) + a * 0.001);
            a += pow(abs(sin(k * 1.7 + a)), 1.3) * exp(-abs(cos(k + uv.y))) - tan(k * 0.01);
        }
    }
    fragColor = vec4(0.5 + 0.5 * sin(a), 0.5 + 0.5 * cos(a * 0.7), 0.5, 1.0);
}
"""
# Compiles as it is; the judging page's instrumented copy (its main renamed to
# pd_organism_main) collides with this global, so only the pristine retry draws it.
INSTRUMENT_FAILS = """float pd_organism_main = 0.25;
void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    fragColor = vec4(uv.x, pd_organism_main + 0.5 * sin(u_time), uv.y, 1.0);
}
"""
# A panel the validator refuses (an image and a CSS url), as if it got past validation:
# written straight into a store to check the arena's frame makes no request.
BEACON_PANEL = """<div class="pd-beacon"><style>.pd-beacon{color:#eee;background:url(BEACON/css)}
.pd-beacon p{font:16px sans-serif}</style><p>beacon</p>
<img src="BEACON/img" alt=""><link rel="stylesheet" href="BEACON/link"></div>"""
# An init script: no WebGL2 context, as for a page Chromium blocked from WebGL after its
# contexts were lost again and again (every pair is lost).
NO_WEBGL = """
const getContext = HTMLCanvasElement.prototype.getContext;
HTMLCanvasElement.prototype.getContext = function (kind, ...rest) {
  return kind === "webgl2" ? null : getContext.call(this, kind, ...rest);
};
"""


def variant(i: int) -> str:
    """A distinct valid shader per `i`."""
    return GOOD.replace("0.5 + 0.5", f"0.{i:03d} + 0.5")


async def settled(c: Client, lab: str, oid: str, timeout: float = 30.0,
                  client_key: str = "") -> dict[str, Any]:
    """`lab.status` of `oid` once its validation is over (a visitor names the client key
    it crossed `oid` under)."""
    args = {"id": oid, **({"client_key": client_key} if client_key else {})}
    with trio.fail_after(timeout):
        while True:
            status = await c.request("lab.status", lab, args)
            if status["status"] != "validating":
                return status
            await trio.sleep(0.02)


async def birth(c: Client, lab: str, code: str | None = None, track: str = "shader",
                **extra: Any) -> dict[str, Any]:
    """Offer a candidate (the owner's code, or a grammar child) and wait for its outcome:
    the `lab.status` of the child (`alive`) or of the rejection (a duplicate's is the
    offer's reply, `rejected`)."""
    args = {"track": track, **extra, **({"code": code} if code is not None else {})}
    offered = await c.request("lab.birth", lab, args)
    if offered["status"] == "rejected":
        return {**offered, "render_ok": False, "track": track}
    return await settled(c, lab, offered["id"])


async def born(c: Client, lab: str, n: int, track: str = "shader") -> list[str]:
    """`n` new grammar children (a draw that repeats an organism is drawn again)."""
    ids: list[str] = []
    with trio.fail_after(60):
        while len(ids) < n:
            status = await birth(c, lab, track=track)
            if status["status"] == "alive":
                ids.append(status["id"])
    return ids


async def new_lab(c: Client, name: str, **args: Any) -> str:
    """Create `lab:name` without a birth loop (unless `backlog` says otherwise)."""
    await c.request("lab.create", f"lab:{name}", {"backlog": 0, **args})
    return f"lab:{name}"


async def stored(directory: Any, actor_id: str) -> list[dict[str, Any]]:
    """The lab's stored events as JSON, oldest first."""
    return [e.data for e in await directory.store.read(actor_id)]


def born_record(code: str, track: str, t: int = 1) -> dict[str, Any]:
    """The stored JSON of an organism born without validation (for a store written before
    the server starts)."""
    oid = organism_id(track, code)
    return encode(Born(oid, track, code, "planted", (), None, "owner", "", None, None, t))


def plant(data_dir: Path, actor_id: str, records: list[dict[str, Any]]) -> None:
    """Append `records` to a data directory's store before a server opens it."""
    from server.storage import SqliteEventStore

    async def write() -> None:
        async with SqliteEventStore.in_directory(data_dir) as store:
            await store.append(actor_id, await store.revision(actor_id), records)

    trio.run(write)


def with_owner(server: Any, work: Any) -> Any:
    """Run `await work(client)` with an owner client of a server subprocess."""
    async def main() -> Any:
        async with Client.connect(server.ws_url, server.owner_token) as c:
            return await work(c)

    return trio.run(main)


def wait_js(page: Any, expression: str, timeout: float = 60.0) -> Any:
    """Poll `expression` in `page` until it is truthy; its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = page.evaluate(expression)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{expression} stayed falsy for {timeout} s; the page said "
                                 f"{page.text_content('#status')!r}")
        time.sleep(0.05)


def stand_still(page: Any) -> None:
    """Give `page` a clock that stands still: no timer of it fires unless the test moves the
    clock on (`page.clock.run_for`). Before the page is opened."""
    start = datetime(2030, 1, 1, tzinfo=UTC)
    page.clock.install(time=start)
    page.clock.pause_at(start + timedelta(seconds=1))


def in_reach(page: Any, selector: str) -> None:
    """`selector` is on screen with the page unscrolled (on a phone the votes were below
    the fold: every vote needed a scroll)."""
    box = page.locator(selector).bounding_box()
    height = page.viewport_size["height"]
    assert page.evaluate("scrollY") == 0 and 0 <= box["y"] and box["y"] + box["height"] <= height


def padded(page: Any, outer: str, inner: str) -> None:
    """`inner`'s text keeps clear of `outer`'s border (a lab `.panel` had no padding)."""
    o, i = page.locator(outer).bounding_box(), page.locator(inner).first.bounding_box()
    assert i["x"] - o["x"] >= 12 and o["x"] + o["width"] - (i["x"] + i["width"]) >= 12


def page_log(page: Any) -> dict[str, list[Any]]:
    """Collect the page's requests (asked, finished, failed with why), console errors and
    uncaught exceptions."""
    log: dict[str, list[Any]] = {"requests": [], "finished": [], "failed": [], "errors": []}
    page.on("request", lambda r: log["requests"].append(r.url))
    page.on("requestfinished", lambda r: log["finished"].append(r.url))
    page.on("requestfailed", lambda r: log["failed"].append((r.url, r.failure)))
    page.on("pageerror", lambda e: log["errors"].append(str(e)))
    page.on("console", lambda m: m.type == "error" and log["errors"].append(m.text))
    return log


def dumps(value: Any) -> str:
    """Compact JSON (for readable assertion messages)."""
    return json.dumps(value, sort_keys=True)[:2000]


class ChatServer:
    """A chat-completions server on loopback speaking the real wire format: each request's
    first message (the prompt) goes to `answer`, which gives the reply's content, or an
    HTTP status to fail with, or (status, Retry-After) to fail with and name that header;
    `prompts` keeps them, in order. `url` is its API root."""

    def __init__(self, answer: Callable[[str], str | int | tuple[int, str]]) -> None:
        self.prompts: list[str] = []
        chat = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                chat.prompts.append(body["messages"][0]["content"])
                content = answer(chat.prompts[-1])
                if isinstance(content, int | tuple):
                    status, retry = content if isinstance(content, tuple) else (content, None)
                    self.send_response(status)
                    if retry is not None:
                        self.send_header("Retry-After", retry)
                    self.end_headers()
                    return
                data = json.dumps({"choices": [{"message": {"role": "assistant",
                                                            "content": content}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        """Stop serving and free the port."""
        self.server.shutdown()
        self.server.server_close()
