"""The field page in headless Chromium: the daily field drawn, updated live, scrubbed back;
the feed with intents verbatim, the phone layout and touch, growth markers, reached
tiles, replay, game over, tile outlines at high zoom, and a long outage."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import trio
from playwright.sync_api import expect

from protocol.client import Client
from tests import inflight
from tests.bidi import ESCAPES, in_order
from tests.field_live._live import ready, start
from tests.server.server_process import ServerProcess

WAIT = 60_000  # ms: the daily field is generated when the page first asks for it
BG = [238, 240, 236, 255]


def _play(url: str, game: str, step: str, state: dict) -> None:
    """Join and reveal (step "reveal"), or make one correct commit (step "commit")."""

    async def run() -> None:
        to = f"field:{game}"
        # The same anonymous caller for both steps: the second comes back with the key.
        async with Client.connect(url, key=state.get("key")) as c:
            state["key"] = c.key
            await ready(c, game)
            if step == "reveal":
                j = await c.request("field.join", to, {"name": "page-test"})
                obs = await c.request("field.observe", to, {"agent": j["agent"]})
                r = await c.request("field.reveal", to, {"agent": j["agent"], "tile": j["seed_tile"],
                                                         "expected_revision": obs["revision"]})
                known = {k for k, _ in (await c.request("field.observe", to,
                                                        {"agent": j["agent"]}))["known"]}
                tile = next(t for t in obs["tiles"] if t["id"] == j["seed_tile"])
                G = obs["G"]
                cells = [(tile["y0"] + ly + dy) * G + tile["x0"] + lx + dx
                         for lx, ly, w, h in tile["rects"] for dy in range(h) for dx in range(w)]
                state.update(agent=j["agent"], rev=r["revision"], G=G,
                             cell=next(x for x in cells if x not in known),
                             given=r["givens"][0][0])
                return
            for v in (0, 1):
                # a wrong first value is stored too (it counts against health): rev + 1
                r = await c.request("field.commit", to, {
                    "agent": state["agent"], "cells": [[state["cell"], v]],
                    "expected_revision": state["rev"] + (v == 1)})
                if r["accepted"]:
                    state["commit_rev"] = r["revision"]
                    return
        raise AssertionError("neither value was accepted")

    trio.run(run)


def _pixel(page, G: int, cell: int) -> list[int]:
    return page.evaluate(f"window.fieldPage.pixelAt({cell % G}, {cell // G})")


def _shown(page, G: int, cell: int) -> tuple[list[int], float, float]:
    """Once a pan or zoom has settled: the visible canvas pixel at the centre of `cell`,
    and that point on the screen (the page scrolled to bring it into the viewport)."""
    page.wait_for_function("window.fieldPage.view.settled", timeout=WAIT)
    v = page.evaluate("window.fieldPage.view")
    px, py = int((cell % G + 0.5 - v["ox"]) * v["zoom"]), int((cell // G + 0.5 - v["oy"]) * v["zoom"])
    assert 0 <= px < 800 and 0 <= py < 800, (px, py)
    shown = page.evaluate(f"""Array.from(document.querySelector("#board").getContext("2d")
                              .getImageData({px}, {py}, 1, 1).data)""")
    box = page.locator("#board-frame").bounding_box()
    css = box["width"] / 800
    y, height = box["y"] + (py + 0.5) * css, page.viewport_size["height"]
    if not 0 <= y < height:  # a click scrolled its target into view, the cell out of it
        page.evaluate(f"window.scrollBy(0, {y - height / 2})")
        box = page.locator("#board-frame").bounding_box()
    return shown, box["x"] + (px + 0.5) * css, box["y"] + (py + 0.5) * css


def _zoom_and_pan(page, G: int, cell: int) -> None:
    """Wheel zooms about the cursor and a drag pans; after each the canvas is redrawn at
    the new view, where it shows the cell under a point in that cell's colour."""
    colour = _pixel(page, G, cell)
    shown, x, y = _shown(page, G, cell)
    assert shown == colour
    zoom = page.evaluate("window.fieldPage.view.zoom")
    page.mouse.move(x, y)
    page.mouse.wheel(0, -100)
    page.wait_for_function(f"window.fieldPage.view.zoom > {zoom}", timeout=WAIT)
    shown, x2, y2 = _shown(page, G, cell)
    assert shown == colour and abs(x2 - x) <= 2 and abs(y2 - y) <= 2, "the cursor's cell stays"
    dx, dy = (30 if x2 < 400 else -30), (20 if y2 < 400 else -20)
    page.mouse.move(x2, y2)
    page.mouse.down()
    page.mouse.move(x2 + dx, y2 + dy, steps=5)
    page.mouse.up()
    shown, x3, y3 = _shown(page, G, cell)
    assert shown == colour and abs(x3 - x2 - dx) <= 2 and abs(y3 - y2 - dy) <= 2, "it follows"
    # zoomed in further, the tiles' outlines are drawn; a cell's middle keeps its colour
    assert not page.evaluate("window.fieldPage.outlined")
    page.mouse.move(x3, y3)
    for _ in range(4):
        page.mouse.wheel(0, -100)
        page.wait_for_timeout(30)
    page.wait_for_function("window.fieldPage.view.settled && window.fieldPage.outlined",
                           timeout=WAIT)
    assert _shown(page, G, cell)[0] == colour


def test_field_page_draws_updates_and_scrubs(browser, tmp_path: Path) -> None:
    day = datetime.now(UTC).date()
    with ServerProcess(tmp_path / "data", "--open") as server:
        # wait_for_function evaluates strings, which the page's CSP forbids (server/headers.py)
        page = browser.new_page(viewport={"width": 1280, "height": 800}, bypass_csp=True)
        errors = inflight.errors(page)
        page.goto(f"{server.http_url}/field/")
        # today's field, or the next day's when the test crosses midnight UTC
        expect(page.locator("#game")).to_have_text(re.compile(r"^day-\d{4}-\d{2}-\d{2}$"))
        game = page.locator("#game").inner_text()
        assert game in (f"day-{day.isoformat()}", f"day-{(day + timedelta(1)).isoformat()}")
        expect(page.locator("#status")).to_contain_text("live · revision 1", timeout=WAIT)
        # the daily field was generated when the page asked: its progress bar moved
        assert page.evaluate("window.fieldPage.progressSeen") > 0
        expect(page.locator("#generating")).to_be_hidden()
        state: dict = {}
        _play(server.ws_url, game, "reveal", state)
        board = page.locator("#board")
        expect(board).to_have_attribute("data-revision", str(state["rev"]), timeout=WAIT)
        G, cell = state["G"], state["cell"]
        assert _pixel(page, G, state["given"]) != BG, "the revealed tile is drawn"
        before = _pixel(page, G, cell)
        _play(server.ws_url, game, "commit", state)
        expect(board).to_have_attribute("data-revision", str(state["commit_rev"]), timeout=WAIT)
        after = _pixel(page, G, cell)
        assert after != before, "the committed cell was redrawn"
        expect(page.locator('#agents tr[data-agent="a1"]')).to_contain_text("page-test",
                                                                            timeout=WAIT)
        page.evaluate(f"window.fieldPage.scrub({state['rev']})")
        expect(board).to_have_attribute("data-mode", "history", timeout=WAIT)
        expect(board).to_have_attribute("data-revision", str(state["rev"]), timeout=WAIT)
        assert _pixel(page, G, cell) == before
        page.click("#live")
        expect(board).to_have_attribute("data-revision", str(state["commit_rev"]), timeout=WAIT)
        assert _pixel(page, G, cell) == after
        assert page.locator("a[href='/']").count() >= 1
        _zoom_and_pan(page, G, cell)
        # hues: neighbours differ, and an agent's hue never changes as others join
        hues = page.evaluate("""async () => {
            const { assignHues } = await import("/field/render.js");
            const tiles = [0, 1, 2, 3].map((k) => ({ x0: 20 * k, y0: 0, w: 20, h: 20 }));
            tiles.push({ x0: 900, y0: 900, w: 20, h: 20 });
            const agents = [0, 1, 2, 3, 4].map((k) => ({ seed_tile: k }));
            return [assignHues(agents.slice(0, 4), tiles), assignHues(agents, tiles)];
        }""")
        four, five = hues
        assert five[:4] == four
        gaps = [min(abs(a - b), 360 - abs(a - b)) for i, a in enumerate(four) for b in four[i + 1:]]
        assert min(gaps) >= 30
        # a restart while it shows history: the status says so, then the history it shows
        # again (a quiet field pushes nothing); Live goes back to the live revision
        status, port = page.locator("#status"), server.port
        page.evaluate(f"window.fieldPage.scrub({state['rev']})")
        expect(board).to_have_attribute("data-mode", "history", timeout=WAIT)  # drawn
        expect(board).to_have_attribute("data-revision", str(state["rev"]), timeout=WAIT)
        expect(status).to_have_text(f"history · revision {state['rev']}")
        assert not errors, errors
        errors = inflight.errors(page, console=False)  # the console says each failed reconnect
        server.kill()
        expect(status).to_have_text("reconnecting", timeout=WAIT)
        expect(status).to_have_attribute("data-state", "reconnecting")
        server.start(port=port)
        expect(status).to_have_text(f"history · revision {state['rev']}", timeout=WAIT)
        page.click("#live")
        expect(status).to_have_text(f"live · revision {state['commit_rev']}", timeout=WAIT)
        assert not errors, errors


def test_field_page_opens_the_game_the_lobby_links_to(browser, tmp_path: Path) -> None:
    """The lobby links `/field/?id=field:NAME`; the page must open NAME, not the daily field."""
    with ServerProcess(tmp_path / "data", "--open") as server:
        page = browser.new_page()
        page.goto(f"{server.http_url}/field/?id=field:lobby-link_1")
        expect(page.locator("#game")).to_have_text("lobby-link_1")
        page.goto(f"{server.http_url}/field/?game=by-game")
        expect(page.locator("#game")).to_have_text("by-game")


# Ids that name no field: never started, a day long past that nobody opened, another
# kind's world; the sentence the page shows after "No such field:".
NO_FIELD = {
    "?id=field:nosuchgame": "there is no world 'field:nosuchgame'",
    "?game=nosuch": "there is no world 'field:nosuch'",
    "?id=field:day-2000-01-01": "there is no world 'field:day-2000-01-01'",
    "?id=puzzle:x": "puzzle:x is not a field",
}


def test_field_page_says_there_is_no_such_field(browser, tmp_path: Path) -> None:
    """An id that names no field says so, with the lobby's link, instead of "connecting…"
    for ever."""
    with ServerProcess(tmp_path / "data", "--open") as server:
        for size in ({"width": 1280, "height": 800}, {"width": 390, "height": 844}):
            page = browser.new_page(viewport=size)
            errors = inflight.errors(page)
            for query, why in NO_FIELD.items():
                page.goto(f"{server.http_url}/field/{query}")
                expect(page.locator("#status")).to_have_text("no such field", timeout=WAIT)
                expect(page.locator("#status")).to_have_attribute("data-state", "error")
                missing = page.locator("#missing")
                expect(missing).to_be_visible()
                expect(page.locator("#missing-why")).to_have_text(re.compile(f"^{re.escape(why)}"))
                assert missing.locator("a").get_attribute("href") == "/"
            assert not errors, errors
            page.close()


def _grow_and_play(url: str, state: dict) -> None:
    """Start a small growing field (it grows every 3 s and ends once a growth finds no
    room), join, reveal and commit with intents."""

    async def run() -> None:
        to = "field:grows"
        async with Client.connect(url) as c:
            await c.request("field.start", to, {"canvas": 200, "chunks": 1, "chunk": 40,
                                                "grow": {"every_s": 3.0}, "seed": 4})
            await ready(c, "grows")
            j = await c.request("field.join", to, {"name": LONG_NAME, "model": RTL_MODEL})
            obs = await c.request("field.observe", to, {"agent": j["agent"]})
            r = await c.request("field.reveal", to, {
                "agent": j["agent"], "tile": j["seed_tile"], "expected_revision": obs["revision"],
                "intent": "reveal: my seed tile first"})
            obs = await c.request("field.observe", to, {"agent": j["agent"]})
            known = {k for k, _ in obs["known"]}
            tile = next(t for t in obs["tiles"] if t["id"] == j["seed_tile"])
            G = obs["G"]
            cell = next((tile["y0"] + ly + dy) * G + tile["x0"] + lx + dx
                        for lx, ly, w, h in tile["rects"] for dy in range(h) for dx in range(w)
                        if (tile["y0"] + ly + dy) * G + tile["x0"] + lx + dx not in known)
            await c.request("field.commit", to, {
                "agent": j["agent"], "cells": [[cell, 0]], "expected_revision": r["revision"],
                "intent": INTENT})
            state.update(seed=j["seed_tile"], G=G, tiles=obs["tiles"])

    trio.run(run)


INTENT = 'one cell, <b>as typed</b> & "verbatim"'
LONG_NAME = "feeder" + "r" * 74  # the longest name, one word: it wraps, the figures stay
RTL_MODEL = "\u202eledom"  # a right-to-left override: it must not reverse the text around it


def test_field_page_feed_phone_touch_growth_and_game_over(browser, tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", "--open") as server:
        state: dict = {}
        _grow_and_play(server.ws_url, state)
        phone = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True,
                                    is_mobile=True, device_scale_factor=2,
                                    bypass_csp=True)  # for wait_for_function, as above
        page = phone.new_page()
        errors = inflight.errors(page)
        page.goto(f"{server.http_url}/field/?id=field:grows")
        expect(page.locator("#status")).to_contain_text("revision", timeout=WAIT)
        # the feed: who did what, the intent verbatim (as text, not markup)
        expect(page.locator("#feed .intent").first).to_have_text(INTENT, timeout=WAIT)
        expect(page.locator("#feed")).to_contain_text("revealed tile")
        assert page.locator("#feed b").count() == 0
        # the phone layout: the board fills the width, the side column comes below it
        board = page.locator("#board-frame").bounding_box()
        side = page.locator("aside.side").bounding_box()
        assert board["width"] >= 350, board
        assert side["y"] >= board["y"] + board["height"] - 1, (board, side)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert page.evaluate("""[...document.querySelectorAll("#feed li")].every(
            (li) => li.scrollWidth <= li.clientWidth)"""), "a long name wraps, not cut off"
        expect(page.locator("#agents tbody")).to_contain_text(LONG_NAME)
        # anyone's name or model is a direction isolate: in a table cell, and in a feed line
        assert page.locator("#agents tbody bdi").all_text_contents() == [LONG_NAME, RTL_MODEL]
        joined = page.locator("#feed li", has_text="joined").first.text_content()
        assert f"\u2068{LONG_NAME}\u2069" in joined and f"(\u2068{RTL_MODEL}\u2069)" in joined
        for figure in ("#agents tbody td:last-child", "#board-users tbody td:last-child"):
            box = page.locator(figure).first.bounding_box()
            assert box is not None and box["x"] + box["width"] <= 390, (figure, box)
        # a touch drag pans the board
        page.wait_for_function("window.fieldPage.view.settled", timeout=WAIT)
        before = page.evaluate("window.fieldPage.view")
        cdp = phone.new_cdp_session(page)
        x, y = board["x"] + board["width"] / 2, board["y"] + board["height"] / 2
        cdp.send("Input.dispatchTouchEvent", {"type": "touchStart",
                                              "touchPoints": [{"x": x, "y": y}]})
        for k in range(1, 7):
            cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [
                {"x": x + 10 * k, "y": y + 6 * k}]})
        cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
        page.wait_for_function("window.fieldPage.view.settled", timeout=WAIT)
        after = page.evaluate("window.fieldPage.view")
        assert after["ox"] < before["ox"] and after["oy"] < before["oy"], (before, after)
        assert after["zoom"] == before["zoom"]
        # hidden tiles an agent reached are drawn apart from unreached ones
        G, seed = state["G"], state["seed"]
        reached = [t["id"] for t in state["tiles"] if t["status"] == "hidden"
                   and page.evaluate(f"window.fieldPage.reachedOf({t['id']})") == 1]
        assert reached, "the seed tile's neighbours are reached"
        t = next(t for t in state["tiles"] if t["id"] == reached[0])
        lx, ly, _, _ = t["rects"][0]
        r_px = page.evaluate(f"window.fieldPage.pixelAt({t['x0'] + lx}, {t['y0'] + ly})")
        # growth: markers on the slider; then no room, and the page says the game is over
        expect(page.locator(".grow-marker").first).to_be_attached(timeout=WAIT)
        expect(page.locator("#over")).to_be_visible(timeout=WAIT)
        expect(page.locator("#status")).to_contain_text("game over", timeout=WAIT)
        unreached = page.evaluate("""() => {
            const m = window.fieldPage; const out = [];
            for (let t = 0; t < 2000; t++) if (m.reachedOf(t) === 0) { out.push(t); break; }
            return out; }""")
        assert unreached, "a grown ring has tiles nobody reached"
        assert r_px[:3] == [186, 194, 188]
        # history: scrubbing says so; the play button replays back to live
        marker = int(page.locator(".grow-marker").first.get_attribute("data-rev"))
        page.evaluate(f"window.fieldPage.scrub({marker - 1})")
        expect(page.locator("#status")).to_contain_text("history", timeout=WAIT)
        expect(page.locator("#board")).to_have_attribute("data-mode", "history", timeout=WAIT)
        page.click("#play")
        page.wait_for_function("window.fieldPage.replaying", timeout=WAIT)
        expect(page.locator("#board")).to_have_attribute("data-mode", "live", timeout=WAIT)
        assert not page.evaluate("window.fieldPage.replaying")
        del seed, G
        assert not errors, errors


def _join(url: str, game: str, names: tuple[str, ...]) -> list[str]:
    """Start a small `field:game` and join one agent per name (each its own caller)."""

    async def run() -> list[str]:
        to = f"field:{game}"
        async with Client.connect(url) as c:
            await start(c, game, size=20, seed=1)
        agents = []
        for name in names:
            async with Client.connect(url) as c:
                agents.append((await c.request("field.join", to, {"name": name}))["agent"])
        return agents

    return trio.run(run)


def test_no_name_reorders_the_line_it_is_shown_in(browser, tmp_path: Path) -> None:
    """A name's direction isolate holds whatever is in the name: with a PDI, a paragraph
    separator or an LRI in it, the rest of its feed line and of its table row are shown in
    order after it. The generic world page writes such characters as JSON escapes."""
    with ServerProcess(tmp_path / "data", "--open") as server:
        agents = _join(server.ws_url, "names", ESCAPES)
        page = browser.new_page(viewport={"width": 1600, "height": 900})
        errors = inflight.errors(page)
        page.goto(f"{server.http_url}/field/?id=field:names")
        expect(page.locator("#feed li", has_text="joined")).to_have_count(3, timeout=WAIT)
        expect(page.locator("#agents tbody tr")).to_have_count(3)
        assert in_order(page, "#feed li.feed-join", "joined, seated on tile") == [True] * 3
        for agent in agents:
            assert in_order(page, f'#agents tr[data-agent="{agent}"] td', agent) == [None, True,
                                                                                     None, None]
        world = browser.new_page()
        world_errors = inflight.errors(world)
        world.goto(f"{server.http_url}/lobby/world.html?id=field:names")
        expect(world.locator("#view")).to_contain_text('"pdi\\u2069\\u202eoverride"',
                                                       timeout=WAIT)
        shown = world.locator("#view").text_content()
        assert '"para\\u2029\\u202eoverride"' in shown and "\\u2066lri" in shown
        assert not set(shown) & set("\u2066\u2069\u2029\u202e"), "no raw control is shown"
        assert not errors and not world_errors, (errors, world_errors)


def _until(page, js: str, timeout: float = WAIT / 1000) -> None:
    """Poll `js` (a function of no arguments) until it is true; the page's clock may be
    faked, so the waiting is done here."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(js):
        assert time.monotonic() < deadline, f"never true: {js}"
        time.sleep(0.1)


def test_through_a_long_outage_the_page_asks_once_and_resumes(browser, tmp_path: Path) -> None:
    """The figures are read every 2 s; with the server away for 70 s (the page's clock run
    on) the page waits on one reading at a time, not one per tick, each failure is noted
    beside the status, which still says it reconnects (no unhandled rejection), and once
    the server is back it reads again and the note is gone."""
    with ServerProcess(tmp_path / "data", "--open") as server:
        _join(server.ws_url, "outage", ("a",))
        page, errors = inflight.watched(browser)
        page.goto(f"{server.http_url}/field/?id=field:outage")
        status = page.locator("#status")
        expect(status).to_contain_text("live · revision", timeout=WAIT)
        inflight.count(page)
        page.clock.run_for(2_000)
        _until(page, "() => window.__requests.done['field.leaderboard'] >= 1")
        port = server.port
        server.kill()
        expect(status).to_contain_text("reconnecting", timeout=WAIT)
        page.clock.run_for(70_000)  # 35 ticks; a request waits 30 s for a socket
        seen = inflight.calm(page, errors)
        expect(page.locator("#status .note")).to_have_text(
            "figures not refreshed: field.observe got no reply within 30000 ms")
        expect(status).to_have_attribute("data-state", "reconnecting")
        assert page.evaluate("document.getElementById('status').firstChild.data") == \
            "reconnecting"
        done = seen["done"].get("field.leaderboard", 0)
        server.start(port=port)
        expect(status).to_contain_text("live · revision", timeout=WAIT)
        _until(page, f"() => window.__requests.done['field.leaderboard'] > {done}")
        inflight.calm(page, errors)
        expect(page.locator("#status .note")).to_have_count(0, timeout=WAIT)
