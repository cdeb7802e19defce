"""The owner's console page (web/admin/) in headless Chromium against a real server process:
the owner types the token in (it never reaches the address), the page lists the worlds and
connections, revokes a token (and a real client holding that token is closed with 1008),
issues a token that then says hello, stops and releases a world; a token let go (forgotten,
or not the owner's, or forgotten while the login waits for its hello's answer or while a
refresh waits for its replies) leaves it "not connected", with no error; at 390x844
nothing overflows sideways, and a refusal shows in view beside
its form until the next success; through a long outage it refreshes one at a time. Everything under the page's own CSP, without a violation."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, WebSocketRoute, expect
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from server.auth import TokenStore
from tests import inflight
from tests.server.server_process import ServerProcess

pytestmark = pytest.mark.browser
WAIT = 20_000  # ms
RECORD = """window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) =>
  window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));"""


@contextmanager
def _client(url: str, token: str | None) -> Iterator[ClientConnection]:
    """A real websocket client after its hello with `token`."""
    with connect(url, open_timeout=10) as ws:
        ws.send(json.dumps({"op": "hello", "protocol": 1, "token": token, "client": "test/1"}))
        reply = json.loads(ws.recv(timeout=10))
        assert reply["ok"], reply
        yield ws


def _call(ws: ClientConnection, op: str, to: str, **args: Any) -> dict[str, Any]:
    ws.send(json.dumps({"id": 1, "op": op, "to": to, "args": args}))
    while (reply := json.loads(ws.recv(timeout=10))).get("id") != 1:
        pass
    return reply


def _open_console(page: Page, url: str, owner: str) -> None:
    page.add_init_script(RECORD)
    page.goto(f"{url}/admin/")
    page.fill("#token", owner)
    page.click("#login button[type=submit]")
    expect(page.locator("#status")).to_have_attribute("data-state", "open", timeout=WAIT)
    expect(page.locator("#console")).to_be_visible(timeout=WAIT)
    assert owner not in page.url
    assert page.evaluate("sessionStorage.getItem('petridish.owner-token')") == owner


def test_the_console_lists_worlds_revokes_a_token_and_its_socket_closes(
        browser: Any, tmp_path: Path) -> None:
    ann = TokenStore(tmp_path / "data").create("agent", "ann")
    with ServerProcess(tmp_path / "data") as server, _client(server.ws_url, ann) as holder:
        assert server.owner_token
        assert _call(holder, "counter.create", "counter:seen")["ok"]
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("dialog", lambda dialog: dialog.accept())
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        _open_console(page, server.http_url, server.owner_token)

        world = page.locator('#worlds tr[data-id="counter:seen"]')
        expect(world).to_contain_text("live", timeout=WAIT)
        expect(world.locator("td").nth(2)).to_have_text("1")  # its revision
        expect(page.locator("#connections tbody")).to_contain_text("ann")
        row = page.locator('#tokens tr[data-name="ann"]')
        expect(row).to_contain_text("agent")
        expect(row.locator("td").nth(3)).to_have_text("1", timeout=WAIT)  # ann's session

        row.locator("button.revoke").click()
        notice = json.loads(holder.recv(timeout=10))
        assert notice["error"]["code"] == "unauthorized"
        with pytest.raises(ConnectionClosed):
            holder.recv(timeout=10)
        assert holder.close_code == 1008
        expect(row).to_have_count(0, timeout=WAIT)
        expect(page.locator("#audit")).to_contain_text("token_revoked")

        page.fill("#new-name", "bob")
        page.click("#create button[type=submit]")
        expect(page.locator("#created-token")).to_contain_text("pdg_", timeout=WAIT)
        expect(page.locator('#tokens tr[data-name="bob"]')).to_be_visible(timeout=WAIT)
        with _client(server.ws_url, page.text_content("#created-token").strip()) as bob:
            world.locator("button.stop").click()
            expect(world).to_have_attribute("data-state", "held", timeout=WAIT)
            assert _call(bob, "counter.get", "counter:seen")["error"]["code"] == "unavailable"
            world.locator("button.release").click()
            expect(world).to_have_count(0, timeout=WAIT)  # released: not loaded until asked
            assert _call(bob, "counter.get", "counter:seen")["result"]["revision"] == 1
        assert page.evaluate("window.__violations") == [] and errors == []
        page.close()


@pytest.mark.parametrize("viewport", [(1280, 800), (390, 844)], ids=["desktop", "phone"])
def test_a_revoked_token_sends_the_console_back_to_the_login_saying_why(
        browser: Any, tmp_path: Path, viewport: tuple[int, int]) -> None:
    """The console's own token revoked (from another owner's session): the page forgets the
    token and shows the login form with the server's reason. It stayed on screen, "closed",
    its tables frozen with their buttons, the reason never shown, the token kept."""
    ops = TokenStore(tmp_path / "data").create("owner", "ops")
    with ServerProcess(tmp_path / "data") as server, \
            _client(server.ws_url, server.owner_token) as owner:
        width, height = viewport
        page = browser.new_page(viewport={"width": width, "height": height})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        _open_console(page, server.http_url, ops)
        expect(page.locator('#tokens tr[data-name="ops"]')).to_be_visible(timeout=WAIT)
        assert _call(owner, "admin.token_revoke", "admin:main", name="ops")["ok"]
        expect(page.locator("#error")).to_have_text(
            "unauthorized: the token this connection said hello with was revoked", timeout=WAIT)
        expect(page.locator("#error")).to_be_in_viewport()
        expect(page.locator("#console")).to_be_hidden()
        expect(page.locator("#status")).to_have_attribute("data-state", "closed")
        expect(page.locator("#login")).to_be_visible()
        assert page.evaluate("sessionStorage.getItem('petridish.owner-token')") is None
        assert page.evaluate("window.__violations") == [] and errors == []
        page.close()


# Before the page's scripts: on <body>, how many frames the page's sockets received and how
# many closed, each counted once the page had handled it (a task after the event), and what
# the status line said after the last close.
SOCKETS = """const Socket = window.WebSocket;
const seen = { messages: 0, closed: 0 };
window.WebSocket = class extends Socket {
  constructor(...args) {
    super(...args);
    this.addEventListener("message", () => setTimeout(() => {
      document.body.dataset.messages = String(seen.messages += 1);
    }));
    this.addEventListener("close", () => setTimeout(() => {
      document.body.dataset.closed = String(seen.closed += 1);
      document.body.dataset.afterClose = document.getElementById("status").textContent;
    }));
  }
};"""


def test_a_token_let_go_leaves_the_console_not_connected(browser: Any, tmp_path: Path) -> None:
    """Forgetting the owner token, or giving one that is not the owner's (the page says whose
    it is), closes the page's client: the status says "not connected", not the closing the
    client reports after."""
    ann = TokenStore(tmp_path / "data").create("agent", "ann")
    with ServerProcess(tmp_path / "data") as server:
        assert server.owner_token
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.add_init_script(SOCKETS)
        _open_console(page, server.http_url, server.owner_token)
        body, status = page.locator("body"), page.locator("#status")
        page.click("#forget")
        expect(body).to_have_attribute("data-closed", "1", timeout=WAIT)
        expect(body).to_have_attribute("data-after-close", "not connected")
        page.fill("#token", ann)
        page.click("#login button[type=submit]")
        expect(page.locator("#error")).to_have_text(
            "this token is for the agent role; the console needs the owner token", timeout=WAIT)
        expect(body).to_have_attribute("data-closed", "2", timeout=WAIT)
        expect(body).to_have_attribute("data-after-close", "not connected")
        expect(status).to_have_attribute("data-state", "closed")
        assert page.evaluate("window.__violations") == [] and errors == []
        page.close()


def _held_replies(page: Page) -> list[Callable[[], None]]:
    """Route `page`'s sockets to the server through Playwright, holding back all the server
    sends on each (its hello's reply first, then any close): per socket, the list gets a call
    that lets what it held through, and from then on passes all on."""
    releases: list[Callable[[], None]] = []

    def route(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        held: list[Callable[[], None]] | None = []

        def deliver(send: Callable[[], None]) -> None:
            if held is None:
                send()
            else:
                held.append(send)

        def release() -> None:
            nonlocal held
            for send in held or ():
                send()
            held = None

        server.on_message(lambda message: deliver(lambda: ws.send(message)))
        server.on_close(lambda code, reason: deliver(lambda: ws.close(code=code, reason=reason)))
        releases.append(release)

    page.route_web_socket("**/ws", route)
    return releases


def _once_opened(page: Page, releases: list[Callable[[], None]]) -> Callable[[], None]:
    """The next socket's release (from `_held_replies`), once the page opened it."""
    for _ in range(WAIT // 50):
        if releases:
            return releases.pop(0)
        page.wait_for_timeout(50)  # Playwright routes the socket as it dispatches events
    raise AssertionError("the page opened no socket")


def test_forget_while_connecting_holds_once_the_hello_is_answered(
        browser: Any, tmp_path: Path) -> None:
    """Forget pressed while a login waits for its hello's reply: once the reply comes, the
    owner's token is not kept, the status stays "not connected", the client is closed and
    the console asks nothing; a refused token's reply shows neither "refused" nor an error."""
    with ServerProcess(tmp_path / "data") as server:
        assert server.owner_token
        page, errors = inflight.watched(browser)
        releases = _held_replies(page)
        page.add_init_script(SOCKETS)  # after the route's: it wraps the routed WebSocket
        page.goto(f"{server.http_url}/admin/")
        inflight.count(page)
        body, status = page.locator("body"), page.locator("#status")

        page.fill("#token", server.owner_token)
        page.click("#login button[type=submit]")
        page.click("#forget")
        _once_opened(page, releases)()
        expect(body).to_have_attribute("data-messages", "1", timeout=WAIT)  # the reply, handled
        assert page.evaluate("sessionStorage.getItem('petridish.owner-token')") is None
        expect(status).to_have_text("not connected")
        expect(status).to_have_attribute("data-state", "closed")
        expect(body).to_have_attribute("data-closed", "1", timeout=WAIT)  # the client let go
        expect(page.locator("#console")).to_be_hidden()
        page.clock.run_for(10_000)  # 5 of the console's ticks
        assert inflight.seen(page)["most"] == {}

        page.fill("#token", "pdg_not-a-token")
        page.click("#login button[type=submit]")
        page.click("#forget")
        _once_opened(page, releases)()
        expect(body).to_have_attribute("data-closed", "2", timeout=WAIT)  # refused and closed
        expect(body).to_have_attribute("data-after-close", "not connected")
        expect(status).to_have_attribute("data-state", "closed")
        expect(page.locator("#error")).to_be_hidden()
        assert inflight.seen(page)["rejections"] == [] and errors == []
        page.close()


def _until(page: Page, js: str) -> None:
    """Poll `js` (a function of no arguments) until it is true: the page's clock is faked and
    its CSP forbids `wait_for_function`'s strings."""
    for _ in range(WAIT // 50):
        if page.evaluate(js):
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"never true: {js}")


def test_a_refresh_let_go_by_forget_says_nothing_after_it(browser: Any, tmp_path: Path) -> None:
    """Forget pressed while a refresh waits for its replies: the client let go fails them, and
    the console says nothing of it (no error), only "not connected"."""
    with ServerProcess(tmp_path / "data") as server:
        assert server.owner_token
        page, errors = inflight.watched(browser, viewport={"width": 390, "height": 844})
        holding = [False]

        def route(ws: WebSocketRoute) -> None:
            upstream = ws.connect_to_server()
            upstream.on_message(lambda message: None if holding[0] else ws.send(message))

        page.route_web_socket("**/ws", route)
        _open_console(page, server.http_url, server.owner_token)
        expect(page.locator("body")).to_have_attribute("data-refreshed", "1", timeout=WAIT)
        inflight.count(page)
        holding[0] = True  # the replies to the next refresh never come
        page.clock.run_for(2_000)  # the console's tick
        _until(page, "() => window.__requests.now['admin.overview'] === 1")
        page.click("#forget")
        _until(page, "() => window.__requests.now['admin.overview'] === 0")
        expect(page.locator("#error")).to_be_hidden()
        expect(page.locator("#status")).to_have_text("not connected")
        assert inflight.seen(page)["rejections"] == [] and errors == []
        page.close()


def test_the_console_fits_a_phone(browser: Any, tmp_path: Path) -> None:
    tokens = TokenStore(tmp_path / "data")
    for name in ("a-rather-long-agent-name-for-a-phone", "bob"):
        tokens.create("agent", name)
    with ServerProcess(tmp_path / "data") as server, \
            _client(server.ws_url, server.owner_token) as holder:
        assert _call(holder, "counter.create", "counter:" + "w" * 60)["ok"]
        page = browser.new_page(viewport={"width": 390, "height": 844})
        _open_console(page, server.http_url, server.owner_token)
        expect(page.locator("#worlds tbody tr")).to_have_count(2, timeout=WAIT)  # and admin
        expect(page.locator("#tokens tbody tr")).to_have_count(2, timeout=WAIT)
        expect(page.locator("#hits")).to_be_attached()
        expect(page.locator("#inflight tbody")).to_have_text("none", timeout=WAIT)
        width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1], f"the page is {width[0]} px wide in a {width[1]} px view"
        stop = page.locator("#worlds tbody tr button.stop").first
        box = stop.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        # a refusal shows beside the form that failed, and the next success clears it
        page.fill("#new-name", "bad name!")
        page.click("#create button[type=submit]")
        expect(page.locator("#error")).to_be_in_viewport(timeout=WAIT)
        page.fill("#new-name", "carol")
        page.click("#create button[type=submit]")
        expect(page.locator('#tokens tr[data-name="carol"]')).to_be_visible(timeout=WAIT)
        expect(page.locator("#error")).to_be_hidden()
        assert page.evaluate("window.__violations") == []
        page.close()


def test_through_a_long_outage_the_console_refreshes_once_at_a_time(
        browser: Any, tmp_path: Path) -> None:
    """The console refreshes every 2 s; with the server away for 70 s (the page's clock run
    on) it waits on one refresh at a time, not one per tick, shows why it has none, and
    once the server is back refreshes again and takes the error away."""
    with ServerProcess(tmp_path / "data") as server:
        assert server.owner_token
        page, errors = inflight.watched(browser, viewport={"width": 1280, "height": 900})
        _open_console(page, server.http_url, server.owner_token)
        expect(page.locator("body")).to_have_attribute("data-refreshed", "1", timeout=WAIT)
        inflight.count(page)
        port = server.port
        server.kill()
        expect(page.locator("#status")).to_have_attribute("data-state", "reconnecting",
                                                          timeout=WAIT)
        page.clock.run_for(70_000)  # 35 ticks; a request waits 30 s for a socket
        inflight.calm(page, errors)
        expect(page.locator("#error")).to_have_text(
            "TimeoutError: admin.overview got no reply within 30000 ms")
        refreshed = int(page.get_attribute("body", "data-refreshed") or 0)
        server.start(port=port)
        expect(page.locator("#status")).to_have_attribute("data-state", "open", timeout=WAIT)
        expect(page.locator("#error")).to_be_hidden(timeout=WAIT)
        assert int(page.get_attribute("body", "data-refreshed") or 0) > refreshed
        inflight.calm(page, errors)
        page.close()
