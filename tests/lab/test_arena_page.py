"""The owner's arena in headless Chromium against a server subprocess: it proves shaders
after 300 ms of drawing and kills one that fails to link with its first log line stored;
a lost WebGL context deals a fresh pair and blames neither; panels mount in sandboxed
frames with the injected CSP, and a beacon panel (planted past validation) makes no
request; a proven organism's line says so; a change of track deals that track at once;
the page fits a desktop and a 390 x 844 phone, its votes in reach."""

from __future__ import annotations

import http.server
import threading

import pytest
from playwright.sync_api import expect

from actors.lab.events import Created, encode
from actors.lab.organism import organism_id
from tests.lab.live import (
    BEACON_PANEL,
    LINK_FAILS,
    NO_WEBGL,
    birth,
    born,
    born_record,
    in_reach,
    new_lab,
    page_log,
    plant,
    stand_still,
    variant,
    wait_js,
    with_owner,
)
from tests.server.server_process import ServerProcess

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the module, with lab:beacon planted before it starts."""
    data = tmp_path_factory.mktemp("arena") / "data"
    beacon = _Beacon()
    panel = BEACON_PANEL.replace("BEACON", beacon.url)
    plant(data, "lab:beacon", [encode(Created(1, 0)), born_record(panel, "panel")])
    with ServerProcess(data) as srv:
        srv.beacon = beacon
        srv.beacon_id = organism_id("panel", panel)
        yield srv
    beacon.close()


class _Beacon:
    """A loopback HTTP server counting every request it gets."""

    def __init__(self) -> None:
        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()


def arena(browser, server, lab: str, *, track: str = "shader", viewport=None, init=None,
          still: bool = False):
    page = browser.new_page(viewport=viewport or {"width": 1280, "height": 900})
    log = page_log(page)
    if init:
        page.add_init_script(init)
    if still:
        stand_still(page)
    page.goto(f"{server.http_url}/lab/arena.html?id={lab}&track={track}"
              f"#token={server.owner_token}")
    return page, log


def test_the_arena_proves_shaders_and_kills_one_that_fails_to_link(browser, server) -> None:
    async def setup(c):
        lab = await new_lab(c, "shaders")
        good = [(await birth(c, lab, variant(i)))["id"] for i in (1, 2, 3)]
        bad = await birth(c, lab, LINK_FAILS)
        assert bad["status"] == "alive"  # it passed validate: only the browser's link fails
        return lab, good, bad["id"]

    lab, good, bad = with_owner(server, setup)
    page, log = arena(browser, server, lab, init=SOCKETS)
    for _ in range(3):  # three pairs, skipped once judged
        wait_js(page, "labArena.phase === 'voting'")
        page.keyboard.press("s")
        wait_js(page, "labArena.phase !== 'voting'")
    verdicts = page.evaluate("labArena.verdicts")
    by_id = {v["id"]: v for v in verdicts}
    assert set(by_id) == {*good, bad}
    for oid in good:
        assert by_id[oid]["verdict"] == "ok" and by_id[oid]["ms"] >= 300, by_id[oid]
    assert by_id[bad]["verdict"] == "invalid" and by_id[bad]["posted"]

    async def check(c):
        return {o: await c.request("lab.status", lab, {"id": o}) for o in [*good, bad]}

    status = with_owner(server, check)
    assert all(status[o]["render_ok"] and status[o]["status"] == "alive" for o in good)
    assert status[bad]["status"] == "dead" and not status[bad]["render_ok"]
    error = status[bad]["reason"]
    assert error == by_id[bad]["log"] and "v_uv" in error and "\n" not in error
    assert page.locator(f'#left[data-id="{good[0]}"], #right[data-id="{good[0]}"]').count() <= 1
    assert not log["errors"], log["errors"]
    # ratings and lineage on show, the owner's vote by keyboard
    wait_js(page, "labArena.phase === 'voting'")
    page.evaluate("window.__sockets[0].close()")  # a drop while it waits for the vote
    wait_js(page, "window.__sockets.length === 2")  # reconnecting
    expect(page.locator("#status")).to_have_text("vote: ← left · → right · s skip")
    assert "ordinal" in page.text_content("#left .rating")
    wait_js(page, "document.querySelector('#left .lineage li') !== null")
    left = page.get_attribute("#left", "data-id")
    page.keyboard.press("ArrowLeft")
    vote = wait_js(page, "labArena.votes[0]")
    assert vote["winner"] == left and vote["judged"] >= 1
    assert with_owner(server, lambda c: c.request("lab.info", lab, {}))["votes"] == 1
    page.close()


# Keep the page's websockets, to drop one.
SOCKETS = """
window.__sockets = [];
window.WebSocket = class extends WebSocket {
  constructor(...args) { super(...args); window.__sockets.push(this); }
};
"""


# Lose the WebGL context of the first canvas that draws, once: a driver reset as the
# page sees it.
LOSE_ONCE = """
const draw = WebGL2RenderingContext.prototype.drawArrays;
WebGL2RenderingContext.prototype.drawArrays = function (...args) {
  draw.apply(this, args);
  if (!window.__lost) {
    window.__lost = true;
    this.getExtension("WEBGL_lose_context").loseContext();
  }
};
"""


def test_a_lost_context_deals_a_fresh_pair_and_blames_neither(browser, server) -> None:
    async def setup(c):
        lab = await new_lab(c, "lost")
        await born(c, lab, 2)
        return lab

    lab = with_owner(server, setup)
    page, log = arena(browser, server, lab, init=LOSE_ONCE)
    wait_js(page, "labArena.losses >= 1 && labArena.pairs.length >= 2")
    wait_js(page, "labArena.phase === 'voting'")
    arena_state = page.evaluate("labArena")
    first = arena_state["pairs"][0]
    assert not [v for v in arena_state["verdicts"] if v["pair"] == first]  # no verdict
    assert {v["pair"] for v in arena_state["verdicts"]} == {arena_state["pairs"][-1]}
    assert all(v["verdict"] == "ok" for v in arena_state["verdicts"])  # nobody was blamed
    statuses = with_owner(server, lambda c: c.request("lab.backlog", lab, {}))
    assert statuses["total"] == 0  # both proven by the fresh pair, neither killed
    assert not log["errors"], log["errors"]
    page.close()


def test_an_arena_that_cannot_draw_deals_ever_more_slowly(browser, server) -> None:
    """Without WebGL every pair is lost: the arena waits before dealing again, twice as
    long each time, instead of asking for pairs as fast as the server answers."""
    async def setup(c):
        lab = await new_lab(c, "blocked")
        await born(c, lab, 2)
        return lab

    lab = with_owner(server, setup)
    page, log = arena(browser, server, lab, init=NO_WEBGL, still=True)
    for dealt, pause in enumerate((300, 600), 1):
        wait_js(page, f"labArena.phase === 'waiting' && labArena.pause === {pause}")
        assert len(page.evaluate("labArena.pairs")) == dealt  # none while it waits
        page.clock.run_for(pause)
    wait_js(page, "labArena.pause === 1200")
    assert not page.evaluate("labArena.verdicts")  # a loss blames nobody
    assert not log["errors"], log["errors"]
    page.close()


def test_panels_mount_sandboxed_with_the_csp_and_a_beacon_makes_no_request(
        browser, server) -> None:
    async def setup(c):
        await born(c, "lab:beacon", 2, "panel")

    with_owner(server, setup)
    page, log = arena(browser, server, "lab:beacon", track="panel")
    seen = set()
    for _ in range(4):
        wait_js(page, "labArena.phase === 'voting'")
        seen |= {v["id"] for v in page.evaluate("labArena.verdicts")}
        if server.beacon_id in seen:
            break
        page.keyboard.press("s")
    assert server.beacon_id in seen
    side = "left" if page.get_attribute("#left", "data-id") == server.beacon_id else "right"
    frame = page.locator(f"#{side} iframe")
    assert frame.get_attribute("sandbox") == ""
    srcdoc = frame.get_attribute("srcdoc")
    assert ('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "style-src 'unsafe-inline'\">") in srcdoc
    assert srcdoc.index("Content-Security-Policy") < srcdoc.index("pd-beacon")
    box = frame.bounding_box()
    assert (round(box["width"]), round(box["height"])) == (520, 400)
    inner = next(f for f in page.frames if f.parent_frame is not None
                 and "beacon" in (f.evaluate("document.body.textContent") or ""))
    assert inner.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(11, 15, 13)"
    page.wait_for_timeout(1000)  # time for an image, a stylesheet, a background to load
    assert server.beacon.hits == []  # nothing reached the beacon
    assert not [u for u in log["finished"] if server.beacon.url in u]
    # what the browser tried was blocked by the policy, not lost by chance
    assert all(why == "csp" for u, why in log["failed"]
               if server.beacon.url in u), log["failed"]
    assert not [u for u in log["requests"] if server.beacon.url in u
                and u not in {f for f, _ in log["failed"]}]
    status = with_owner(server, lambda c: c.request("lab.status", "lab:beacon",
                                                    {"id": server.beacon_id}))
    assert status["render_ok"]  # a panel is reported render_ok at once
    page.close()


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800},
                                      {"width": 390, "height": 844}], ids=["desktop", "phone"])
def test_the_arena_fits_the_screen(browser, server, viewport) -> None:
    async def setup(c):
        lab = await new_lab(c, f"fit{viewport['width']}")
        await born(c, lab, 2, "panel")
        return lab

    page, log = arena(browser, server, with_owner(server, setup), track="panel",
                      viewport=viewport)
    wait_js(page, "labArena.phase === 'voting'")
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    left, right = (page.locator(f"#{s} .stage").bounding_box() for s in ("left", "right"))
    if viewport["width"] >= 900:
        assert left["x"] + left["width"] <= right["x"] and left["y"] == right["y"]
    else:
        assert left["y"] + left["height"] <= right["y"]  # stacked
        assert right["x"] + right["width"] <= viewport["width"]
    frames = page.locator(".stage iframe")
    for i in range(frames.count()):  # the 520 x 400 frame scaled into its stage
        b = frames.nth(i).bounding_box()
        assert b["x"] + b["width"] <= viewport["width"] + 0.5
    for button in ("left", "skip", "right"):
        assert page.locator(f'#votes button[data-choice="{button}"]').is_visible()
    in_reach(page, "#votes")
    assert not log["errors"], log["errors"]
    page.close()


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800},
                                      {"width": 390, "height": 844}], ids=["desktop", "phone"])
def test_the_arena_says_what_it_proved_and_deals_the_track_chosen(browser, server,
                                                                  viewport) -> None:
    """A proven organism's line said "unproven" still; a change of track did nothing until
    the pair on show was voted or skipped."""
    async def setup(c):
        lab = await new_lab(c, f"tracks{viewport['width']}")
        return lab, await born(c, lab, 2), await born(c, lab, 2, "panel")

    lab, shaders, panels = with_owner(server, setup)
    page, log = arena(browser, server, lab, viewport=viewport)
    wait_js(page, "labArena.phase === 'voting'")
    for side in ("left", "right"):
        assert page.get_attribute(f"#{side}", "data-id") in shaders
        assert page.text_content(f"#{side} .rating").startswith("proven · ordinal ")
    page.select_option("#track", "panel")
    wait_js(page, "labArena.phase === 'voting' && labArena.pairs.length === 2", timeout=20)
    assert {page.get_attribute(f"#{side}", "data-id") for side in ("left", "right")} == \
        set(panels)
    assert page.evaluate("labArena.votes") == []
    assert not log["errors"], log["errors"]
    page.close()


def test_the_arena_is_the_owners(browser, server) -> None:
    made = with_owner(server, lambda c: c.request(
        "admin.token_create", "admin:main", {"name": "arena-agent", "role": "agent"}))
    page = browser.new_page()
    login, status = page.locator("#login"), page.locator("#status")
    page.goto(f"{server.http_url}/lab/arena.html?id=lab:nowhere#token={made['token']}")
    expect(status).to_contain_text("not the owner's")
    expect(login).to_be_visible()  # the agent's token dropped: the form asks again
    assert page.get_attribute("header a[href^='/lab/']", "href") == "/lab/?id=lab%3Anowhere"
    page.reload()
    expect(status).to_have_attribute("data-state", "login")
    page.fill("#token", "pdg_wrong")
    page.click("#login button")
    expect(status).to_contain_text("refused")
    expect(login).to_be_visible()
    page.fill("#token", server.owner_token)
    page.click("#login button")
    expect(page.locator("#bar")).to_be_visible()  # the owner's arena deals
    expect(login).to_be_hidden()
    page.close()


# Record the uniforms the page sets, and start its clock 16 s back so u_time wraps 4 s
# into a stage's run (a slow frame rate still draws on both sides of the wrap).
UNIFORMS = """
window.__uniforms = { time: [], res: [], audio: [] };
const real = performance.now.bind(performance);
performance.now = () => real() - 16000;
const proto = WebGL2RenderingContext.prototype;
const f1 = proto.uniform1f, f2 = proto.uniform2f, f4 = proto.uniform4f;
proto.uniform1f = function (loc, x) { window.__uniforms.time.push(x); return f1.call(this, loc, x); };
proto.uniform2f = function (loc, x, y) {
  const c = this.canvas, box = c.getBoundingClientRect();
  window.__uniforms.res.push([x, y, c.width, c.height, box.width * devicePixelRatio,
                              box.height * devicePixelRatio]);
  return f2.call(this, loc, x, y);
};
proto.uniform4f = function (loc, ...a) { window.__uniforms.audio.push(a); return f4.call(this, loc, ...a); };
"""


def test_the_arena_binds_u_time_wrapped_u_res_measured_and_u_audio_zero(browser, server) -> None:
    async def setup(c):
        lab = await new_lab(c, "uniforms")
        await born(c, lab, 2)
        return lab

    lab = with_owner(server, setup)
    context = browser.new_context(viewport={"width": 1000, "height": 800},
                                  device_scale_factor=2)
    page = context.new_page()
    page.add_init_script(UNIFORMS)
    page.goto(f"{server.http_url}/lab/arena.html?id={lab}#token={server.owner_token}")
    wait_js(page, "labArena.phase === 'voting'")
    # Both stages' u_time, interleaved: one falls by most of the loop once it wraps.
    wait_js(page, "window.__uniforms.time.some((t, i, all) => i && all[i - 1] - t > 10)")
    u = page.evaluate("window.__uniforms")
    assert all(0 <= t < 20 for t in u["time"])  # seconds, wrapped to the 20-second loop
    assert max(u["time"]) > 16  # drawn before the wrap too (it began at 16 s)
    for x, y, w, h, bw, bh in u["res"]:  # the backing store, from the live element
        assert (x, y) == (w, h) and abs(w - bw) <= 1 and abs(h - bh) <= 1
    assert u["res"][-1][0] > 600  # twice the CSS size on this 2x screen
    assert u["audio"] and all(a == [0, 0, 0, 0] for a in u["audio"])  # the owner hears nothing
    context.close()


def test_the_arena_says_what_the_lab_made_of_its_verdict(browser, server) -> None:
    """An organism killed (from another tab) while the arena proved it: the lab's answer
    to the ok leaves it dead, and the line said "proven" from the verdict posted."""
    async def setup(c):
        lab = await new_lab(c, "killed")
        await born(c, lab, 1, "panel")
        return lab

    lab = with_owner(server, setup)
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    log = page_log(page)
    page.goto(f"{server.http_url}/lab/arena.html?id={lab}&gate#token={server.owner_token}")
    wait_js(page, "labArena.phase === 'idle'")
    [organism] = page.evaluate("labArena.backlog('panel', 10)")["organisms"]
    with_owner(server, lambda c: c.request("lab.invalid", lab, {"id": organism["id"],
                                                                 "log": "killed elsewhere"}))
    judged = page.evaluate("o => labArena.judge(o)", organism)
    assert (judged["verdict"], judged["posted"]) == ("ok", True)
    assert page.text_content("#left .rating").startswith("dead · ")
    assert not log["errors"], log["errors"]
    page.close()
