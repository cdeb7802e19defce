"""The lobby page in headless Chromium shows worlds created over the protocol, live.

The server runs as a subprocess; a Python client (protocol/client.py) creates and
changes worlds while the page, a spectator speaking through web/js/client.js, watches.
"""

from __future__ import annotations

import re
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import trio
from playwright.sync_api import expect

from protocol.client import Client, RequestError
from tests import inflight
from tests.server.server_process import ServerProcess
from tests.server.sync_client import ask_all

WAIT = 15_000  # ms: generous, the CI machine may be busy; a pass is usually instant


def _daily() -> str:
    """A pattern of today's field id (featured first, always), or the next day's: a check
    made across midnight UTC (the ids were fixed at import, and failed a run that did)."""
    day = datetime.now(UTC).date()
    return "|".join(re.escape(f"field:day-{d.isoformat()}") for d in (day, day + timedelta(1)))


def _watch(url: str, topic: str, subscribed: threading.Event, leave: threading.Event) -> None:
    """Stay subscribed to `topic` (in a thread with its own event loop) until `leave` is set."""

    async def run() -> None:
        async with Client.connect(url) as c, c.subscribe(topic):
            subscribed.set()
            while not leave.is_set():
                await trio.sleep(0.05)

    trio.run(run)


def test_lobby_page_shows_worlds_live(browser, tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data") as server:
        token = server.owner_token
        assert token is not None
        ask_all(server.ws_url, token, ("lobby.create", None, {"kind": "counter", "name": "early"}))

        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors = inflight.errors(page)
        page.goto(f"{server.http_url}/")
        expect(page.locator("#status")).to_have_text("live · spectator", timeout=WAIT)
        # Created before the page opened: it arrives in the first snapshot.
        early = page.locator('tr[data-id="counter:early"]')
        expect(early.locator(".kind")).to_have_text("counter", timeout=WAIT)
        expect(early.locator(".revision")).to_have_text("1", timeout=WAIT)

        # Created while the page watches: it arrives as a pushed event.
        ask_all(server.ws_url, token,
                  ("lobby.create", None, {"kind": "counter", "name": "live-one"}),
                  ("counter.add", "counter:live-one", {"amount": 5}),
                  ("counter.add", "counter:live-one", {"amount": 6}))
        row = page.locator('tr[data-id="counter:live-one"]')
        expect(row.locator(".id")).to_have_text("counter:live-one", timeout=WAIT)
        expect(row.locator(".revision")).to_have_text("3", timeout=WAIT)
        expect(row.locator(".subscribers")).to_have_text("0", timeout=WAIT)
        subscribed, leave = threading.Event(), threading.Event()
        watcher = threading.Thread(target=_watch, args=(server.ws_url, "counter:live-one",
                                                        subscribed, leave))
        watcher.start()
        try:
            assert subscribed.wait(30)
            expect(row.locator(".subscribers")).to_have_text("1", timeout=WAIT)
        finally:
            leave.set()
            watcher.join(30)
        expect(row.locator(".subscribers")).to_have_text("0", timeout=WAIT)
        expect(page.locator("#count")).to_have_text("2 worlds", timeout=WAIT)
        expect(page.locator("#empty")).to_be_hidden(timeout=WAIT)
        assert page.locator("#worlds tbody tr").evaluate_all(
            "rows => rows.map(r => r.dataset.id)") == ["counter:early", "counter:live-one"]
        result = page.evaluate(CLIENT_JS_REQUESTS, token)
        assert result == {
            "role": "spectator",
            "worlds": ["counter:early", "counter:live-one"],
            "refused": ["RequestError", "forbidden", "agent"],
            "revisions": [4, 5, 6, 7, 8],
            "unknown": "unknown_op",
            "missing": "unknown_actor",
            "pushed": result["pushed"],
            "amounts": [1, 2, 3, 4, 5],
        }
        # A snapshot at subscribe time, then events up to revision 8, each revision once.
        assert result["pushed"][0] == ["snapshot", 3]
        assert [rev for _, rev in result["pushed"]] == sorted({rev for _, rev in result["pushed"]})
        assert result["pushed"][-1] == ["events", 8]
        assert errors == []


# A second web/js/client.js client in the page, and 20 requests of it while its socket is
# down (each waits for a socket until its timeout): how they ended, and the waiters left.
OPEN_PROBE = """async () => {
  const { Client } = await import("/js/client.js");
  window.probe = await Client.connect();
}"""
ASK_WHILE_AWAY = """async () => {
  while (window.probe._ws) await new Promise((wake) => setTimeout(wake, 20));
  const asked = await Promise.allSettled(Array.from({ length: 20 }, () =>
    window.probe.request("lobby.list", "lobby:main", {}, { timeout: 50 })));
  return [asked.map((r) => r.reason?.name), window.probe._waiters.length];
}"""


# web/js/client.js on its own: requests matched by id (five at once), refusals as
# RequestError with the server's code and detail, subscribe with `ready` and pushes.
CLIENT_JS_REQUESTS = """async (token) => {
  const { Client, RequestError } = await import("/js/client.js");
  const spectator = await Client.connect();
  const listed = await spectator.request("lobby.list", "lobby:main", {});
  let refused = null;
  try {
    await spectator.request("lobby.create", null, { kind: "counter", name: "nope" });
  } catch (err) {
    refused = [err instanceof RequestError ? "RequestError" : err.name, err.code,
               err.detail.required];
  }
  const missing = spectator.subscribe("counter:missing", () => {});
  let missingCode = null;
  try { await missing.ready; } catch (err) { missingCode = err.code; }
  const pushes = [];
  const sub = spectator.subscribe("counter:live-one", (push) => pushes.push(push));
  await sub.ready;
  const owner = await Client.connect(undefined, { token });
  const results = await Promise.all([1, 2, 3, 4, 5].map(
    (amount) => owner.request("counter.add", "counter:live-one", { amount })));
  while (pushes.length === 0 || pushes.at(-1).rev < 8) {
    await new Promise((wake) => setTimeout(wake, 20));
  }
  let unknown = null;
  try { await owner.request("counter.nope", "counter:live-one"); } catch (err) { unknown = err.code; }
  spectator.close();
  owner.close();
  return {
    role: spectator.role,
    worlds: listed.worlds.map((w) => w.id),
    refused,
    revisions: results.map((r) => r.revision).sort((a, b) => a - b),
    unknown,
    missing: missingCode,
    pushed: pushes.map((p) => [p.kind, p.rev]),
    amounts: pushes.filter((p) => p.kind === "events").flatMap((p) => p.data.map((e) => e.amount))
      .sort(),
  };
}"""


def test_lobby_page_reconnects_and_resumes_after_a_server_restart(browser, tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data") as server:
        token = server.owner_token
        assert token is not None
        ask_all(server.ws_url, token, ("lobby.create", None, {"kind": "counter", "name": "one"}))
        page = browser.new_page()
        page.goto(f"{server.http_url}/")
        expect(page.locator('tr[data-id="counter:one"] .revision')).to_have_text("1", timeout=WAIT)

        page.evaluate("window.sameDocument = true")
        page.evaluate(OPEN_PROBE)
        port = server.port
        server.kill()
        expect(page.locator("#status")).to_have_text("reconnecting", timeout=WAIT)
        # requests made while the server is away time out, and leave nothing behind them
        assert page.evaluate(ASK_WHILE_AWAY) == [["TimeoutError"] * 20, 0]
        server.start(port=port)  # same data, same address: the page's client comes back
        expect(page.locator("#status")).to_have_text("live · spectator", timeout=WAIT)
        ask_all(server.ws_url, token, ("lobby.create", None, {"kind": "counter", "name": "two"}))
        expect(page.locator('tr[data-id="counter:two"] .revision')).to_have_text("1", timeout=WAIT)
        expect(page.locator("#count")).to_have_text("2 worlds", timeout=WAIT)
        assert page.evaluate("window.sameDocument") is True  # reconnected, not reloaded


def test_lobby_page_lists_what_exists_across_idleness_and_restarts(browser, tmp_path: Path
                                                                   ) -> None:
    """A field unloaded for idleness and one from before a restart stay listed, with
    their revision, agents and state; a name that was only requested never is; today's
    field comes first, and every row links to its page."""
    from actors.runtime import RuntimeConfig
    from tests.field_live._live import start
    from tests.lobby.thread_server import ThreadServer

    data = tmp_path / "data"
    quick = RuntimeConfig(idle_timeout=1.0)

    async def play(url: str, game: str) -> int:
        async with Client.connect(url) as c:
            await start(c, game, size=20, seed=2)
            joined = await c.request("field.join", f"field:{game}", {"name": "p"})
            try:
                await c.request("field.observe", "field:only-requested", {})
            except RequestError as e:
                assert e.code == "unknown_actor"
            return joined["revision"]

    with ThreadServer(data, open_mode=True, runtime=quick) as first:
        before_rev = trio.run(play, first.ws_url, "before")
    with ThreadServer(data, open_mode=True, runtime=quick) as server:
        idle_rev = trio.run(play, server.ws_url, "idle")
        deadline = time.monotonic() + 30
        while server.run(lambda r: r.state.directory.alive("field:idle")) is not None:
            assert time.monotonic() < deadline, "field:idle never unloaded"
            time.sleep(0.2)
        page = browser.new_page()
        errors = inflight.errors(page)
        page.goto(f"{server.http_url}/")
        expect(page.locator('tr[data-id="field:idle"] .loaded')).to_have_text("unloaded",
                                                                             timeout=WAIT)
        for game, rev in (("idle", idle_rev), ("before", before_rev)):
            row = page.locator(f'tr[data-id="field:{game}"]')
            expect(row.locator(".revision")).to_have_text(str(rev), timeout=WAIT)
            expect(row.locator(".agents")).to_have_text("1", timeout=WAIT)
            expect(row.locator(".state")).to_have_text("live", timeout=WAIT)
            assert row.locator("a").get_attribute("href") == f"/field/?id=field%3A{game}"
        ids = page.locator("#worlds tbody tr").evaluate_all("rows => rows.map(r => r.dataset.id)")
        assert ids == ["field:before", "field:idle"]  # never field:only-requested
        assert page.locator("#worlds tbody tr a").count() == 2  # every row links to its page
        # today's field, linked first, before anyone opened it
        expect(page.locator("#today-link")).to_have_attribute(
            "href", re.compile(rf"^/field/\?id=({_daily().replace(':', '%3A')})$"))
        expect(page.locator("#today-state")).to_have_text("starts when opened")
        expect(page.locator("#empty")).to_be_hidden()
        # once opened, it is a world like any other, listed first
        page.goto(f"{server.http_url}/field/")
        expect(page.locator("#status")).to_contain_text("live · revision", timeout=60_000)
        page.goto(f"{server.http_url}/")
        expect(page.locator("#worlds tbody tr").first).to_have_attribute(
            "data-id", re.compile(f"^({_daily()})$"), timeout=WAIT)
        expect(page.locator("#today-state")).to_contain_text("live", timeout=WAIT)
        assert errors == []


def test_lobby_empty_state_tells_how_worlds_are_made(browser, tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data") as server:
        page = browser.new_page()
        page.goto(f"{server.http_url}/")
        expect(page.locator("#status")).to_have_text("live · spectator", timeout=WAIT)
        expect(page.locator("#today-state")).to_have_text("starts when opened", timeout=WAIT)
        assert page.locator("#worlds tbody tr").count() == 0
        expect(page.locator("#empty")).to_be_visible()
        expect(page.locator("#empty")).to_contain_text("field.start")
        expect(page.locator("#empty")).to_contain_text("lobby.create")


def test_lobby_page_shows_a_page_of_worlds_and_more_on_request(browser, tmp_path: Path) -> None:
    """Past one page of worlds the page shows the first (live) and asks for the next with
    "More"; at phone size (390x844) it fits the screen's width. "More" asked while the
    server is away says why it failed, still once the server is back, until it succeeds."""
    from protocol.ops.lobby import PAGE

    with ServerProcess(tmp_path / "data") as server:
        token = server.owner_token
        assert token is not None
        names = [f"w{i:03}" for i in range(PAGE + 3)]
        ask_all(server.ws_url, token, *(("lobby.create", None, {"kind": "counter", "name": n})
                                          for n in names))
        page, errors = inflight.watched(browser, viewport={"width": 390, "height": 844})
        page.goto(f"{server.http_url}/")
        rows = page.locator("#worlds tbody tr")
        expect(page.locator("#count")).to_have_text(f"{PAGE} of {PAGE + 3} worlds", timeout=WAIT)
        expect(rows).to_have_count(PAGE)
        more = page.locator("#more")
        expect(more).to_be_visible()
        box = more.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        status, port = page.locator("#status"), server.port
        server.kill()
        expect(status).to_have_text("reconnecting", timeout=WAIT)
        more.click()
        page.clock.run_for(31_000)  # the request waits 30 s for a socket
        failed = "cannot list more: lobby.list got no reply within 30000 ms"
        said = page.evaluate("window.__statuses")  # reconnect attempts take turns at it
        assert failed in said, said
        server.start(port=port)
        expect(status).to_have_attribute("data-state", "error", timeout=WAIT)
        expect(page.locator("#count")).to_have_text(f"{PAGE} of {PAGE + 3} worlds",
                                                    timeout=WAIT)  # the snapshot again
        expect(status).to_have_text(failed)
        more.click()
        try:
            expect(page.locator("#count")).to_have_text(f"{PAGE + 3} worlds", timeout=WAIT)
        except AssertionError as missing:  # say why: the page shows a refused request there
            status = page.locator("#status").text_content()
            raise AssertionError(f"{missing}\nthe page's status: {status}") from None
        expect(more).to_be_hidden()
        ids = rows.evaluate_all("rows => rows.map(r => r.dataset.id)")
        assert ids == [f"counter:{n}" for n in names]
        # The first page stays live: a change there still shows.
        ask_all(server.ws_url, token, ("counter.add", "counter:w000", {"amount": 2}))
        expect(page.locator('tr[data-id="counter:w000"] .revision')).to_have_text("2",
                                                                                 timeout=WAIT)
        expect(rows).to_have_count(PAGE + 3)
        expect(status).to_have_text("live · spectator")
        assert errors == [] and page.evaluate("window.__rejections") == []


def test_on_a_phone_a_long_world_name_wraps_and_its_figures_stay(browser,
                                                                 tmp_path: Path) -> None:
    """A world's name is its creator's (80 characters, one word): it wraps in its cell
    instead of pushing the state and revision columns out of the panel, also beside the
    widest kind badge (ecosystem)."""
    name = "w" * 80
    pond = {"world": "A quiet pond where algae bloom", "threat": "A pike", "reward": "Keep all"}
    with ServerProcess(tmp_path / "data") as server:
        ask_all(server.ws_url, server.owner_token,
                  ("lobby.create", None, {"kind": "counter", "name": name}),
                  ("ecosystem.create", f"ecosystem:{name}", {"answers": pond, "size": 16}))
        page = browser.new_page(viewport={"width": 390, "height": 844})
        errors = inflight.errors(page)
        page.goto(f"{server.http_url}/")
        for kind in ("counter", "ecosystem"):
            expect(page.locator(f'tr[data-id="{kind}:{name}"]')).to_be_visible(timeout=WAIT)
        panel = page.locator(".panel", has=page.locator("#worlds")).bounding_box()
        for box in (c.bounding_box() for c in page.locator("#worlds .revision").all()):
            assert box is not None and box["x"] + box["width"] <= panel["x"] + panel["width"] + 0.5
        assert errors == []


def test_the_world_page_follows_a_stop_and_an_outage_then_says_its_own_word(
        browser, tmp_path: Path) -> None:
    """The generic world page's status (the shared `statusLine`, web/js/page.js): a world an
    admin stopped shows the server's refusal while the page subscribes again, and the page's
    own word once it is released; through an outage it says it reconnects, then its own word."""
    with ServerProcess(tmp_path / "data") as server:
        token = server.owner_token
        assert token is not None
        ask_all(server.ws_url, token, ("lobby.create", None, {"kind": "counter", "name": "one"}))
        page, errors = inflight.watched(browser)
        page.goto(f"{server.http_url}/lobby/world.html?id=counter:one")
        status = page.locator("#status")
        expect(status).to_have_text("live · spectator", timeout=WAIT)
        stop = ("admin.stop", "admin:main", {"id": "counter:one"})
        ask_all(server.ws_url, token, stop)
        expect(status).to_have_text(
            "unavailable: counter:one was stopped by the owner; trying again", timeout=WAIT)
        expect(status).to_have_attribute("data-state", "error")
        ask_all(server.ws_url, token, ("admin.release", *stop[1:]))
        expect(status).to_have_text("live · spectator", timeout=WAIT)
        expect(status).to_have_attribute("data-state", "open")
        inflight.through_an_outage(page, errors, server, "open", "live · spectator")
        page.close()
