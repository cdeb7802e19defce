"""The public judging page and the gallery in headless Chromium against a server
subprocess: an unproven organism reaches a judge only as the one canary of a pair; the
instrumented copy is compiled first and the pristine source once more where it fails; a
stranger's failure is a strike, never an error or a death; a voted pair's programs are
freed; u_audio is nonzero while the voice plays (read back from the page); votes; the
gallery's live cards, lineage and a visitor cross, and its word and retries when it cannot
read the lab; on a phone the votes in reach; through a long outage the landing page reads its counts one at a time; through
an outage the judging page, the gallery and the arena say they are reconnecting, then their
own word again."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests import inflight
from tests.lab.live import (
    INSTRUMENT_FAILS,
    LINK_FAILS,
    NO_WEBGL,
    birth,
    born,
    in_reach,
    new_lab,
    padded,
    page_log,
    stand_still,
    variant,
    wait_js,
    with_owner,
)
from tests.server.server_process import ServerProcess

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ServerProcess(tmp_path_factory.mktemp("public") / "data") as srv:
        yield srv


def proven_lab(server, name: str, canary: str | None,
               title: str | None = None) -> tuple[str, list[str], str | None]:
    """Two proven shaders (titled `title`1 and 2 if given) and, if given, one unproven
    `canary` source."""
    async def setup(c):
        lab = await new_lab(c, name)
        titles = {i: {"title": f"{title}{i}"} for i in (1, 2)} if title else {1: {}, 2: {}}
        proven = [(await birth(c, lab, variant(i), **titles[i]))["id"] for i in (1, 2)]
        for oid in proven:
            await c.request("lab.ok", lab, {"id": oid})
        unproven = (await birth(c, lab, canary))["id"] if canary else None
        return lab, proven, unproven

    return with_owner(server, setup)


def judge(browser, server, lab: str, viewport=None):
    page = browser.new_page(viewport=viewport or {"width": 1280, "height": 900})
    log = page_log(page)
    page.goto(f"{server.http_url}/lab/judge.html?id={lab}")
    return page, log


def test_a_canary_drawn_only_by_the_pristine_retry_is_proven_by_a_judge(browser, server) -> None:
    lab, proven, canary = proven_lab(server, "retry", INSTRUMENT_FAILS)
    page, log = judge(browser, server, lab)
    wait_js(page, "labJudge.phase === 'voting'")
    state = page.evaluate("labJudge")
    pair = state["pairs"][0]
    assert pair["canary"] == canary and {pair["left"], pair["right"]} - {canary} <= set(proven)
    attempts = {a["id"]: a for a in state["attempts"]}
    assert attempts[canary] == {"id": canary, "instrumented": "failed", "pristine": "ok"}
    assert all(attempts[p] == {"id": p, "instrumented": "ok", "pristine": None}
               for p in {pair["left"], pair["right"]} - {canary})
    assert state["reports"] == [{"id": canary, "ok": True, "verdict": "proven"}]
    status = with_owner(server, lambda c: c.request("lab.status", lab, {"id": canary}))
    assert status["render_ok"] and status["status"] == "alive"
    key = page.evaluate("localStorage.getItem('pdg.lab.client_key')")
    assert len(key) == 32
    # the judge votes by keyboard; the vote counts under the key this browser keeps
    page.keyboard.press("ArrowLeft")
    wait_js(page, "labJudge.votes === 1")
    assert with_owner(server, lambda c: c.request("lab.info", lab, {}))["votes"] == 1
    page.reload()
    assert page.evaluate("localStorage.getItem('pdg.lab.client_key')") == key
    assert not log["errors"], log["errors"]
    page.close()


# An init script: counts the programs the page's WebGL2 contexts create and delete.
COUNT_PROGRAMS = """
window.__programs = { created: 0, deleted: 0 };
const gl = WebGL2RenderingContext.prototype;
const create = gl.createProgram, remove = gl.deleteProgram;
gl.createProgram = function () { window.__programs.created++; return create.call(this); };
gl.deleteProgram = function (p) { if (p) window.__programs.deleted++; return remove.call(this, p); };
"""


def test_a_judge_frees_each_pairs_programs_once_it_is_voted(browser, server) -> None:
    """Only the pair on show holds programs (the page freed none: 14 made, 0 deleted after
    6 votes)."""
    lab, _, _ = proven_lab(server, "programs", None)
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    log = page_log(page)
    page.add_init_script(COUNT_PROGRAMS)
    page.goto(f"{server.http_url}/lab/judge.html?id={lab}")
    for votes in range(1, 4):
        wait_js(page, "labJudge.phase === 'voting'")
        page.keyboard.press("ArrowLeft" if votes % 2 else "ArrowRight")
        wait_js(page, f"labJudge.votes === {votes}")
    wait_js(page, "labJudge.phase === 'voting'")
    programs = page.evaluate("window.__programs")
    assert programs["created"] >= 8 and programs["created"] - programs["deleted"] == 2, programs
    assert not log["errors"], log["errors"]
    page.close()


def test_a_judge_never_kills_and_only_reports(browser, server) -> None:
    lab, _, canary = proven_lab(server, "stranger", LINK_FAILS)
    page, log = judge(browser, server, lab)
    report = wait_js(page, "labJudge.reports[0] && labJudge.reports[0].verdict && labJudge.reports[0]")
    assert report == {"id": canary, "ok": False, "verdict": "struck"}
    attempts = next(a for a in page.evaluate("labJudge.attempts") if a["id"] == canary)
    assert attempts == {"id": canary, "instrumented": "failed", "pristine": "failed"}
    status = with_owner(server, lambda c: c.request("lab.status", lab, {"id": canary}))
    assert (status["status"], status["reason"], status["render_ok"]) == ("alive", None, False)
    api = {u.split("?")[0].rsplit("/api/", 1)[1] for u in log["requests"] if "/api/" in u}
    assert api == {"pub/seen"}  # never /api/invalid or /api/ok
    page.close()


def test_a_judge_that_cannot_draw_deals_ever_more_slowly(browser, server) -> None:
    """Without WebGL (as on a page Chromium blocked from it) every pair is lost: the page
    waits before dealing again, twice as long each time, instead of asking for pairs as
    fast as the server answers."""
    lab, _, _ = proven_lab(server, "blocked", None)
    page = browser.new_page()
    log = page_log(page)
    page.add_init_script(NO_WEBGL)
    stand_still(page)
    page.goto(f"{server.http_url}/lab/judge.html?id={lab}")
    for dealt, pause in enumerate((300, 600, 1200), 1):
        wait_js(page, f"labJudge.phase === 'waiting' && labJudge.pause === {pause}")
        assert len(page.evaluate("labJudge.pairs")) == dealt  # none while it waits
        assert page.text_content("#status") == (
            f"the WebGL context was lost: the next pair in {pause / 1000} s")
        page.clock.run_for(pause)
    wait_js(page, "labJudge.pause === 2400")
    # at most 30 s apart; of its two compile attempts a pair, the page keeps the last 100
    while page.evaluate("labJudge.pairs.length") < 55:
        page.clock.run_for(30_000)
        wait_js(page, "labJudge.phase === 'waiting'")
    assert page.evaluate("[labJudge.pause, labJudge.attempts.length]") == [30_000, 100]
    assert not log["errors"], log["errors"]
    page.close()


def test_u_audio_follows_the_voice_while_it_plays(browser, server) -> None:
    lab, _, _ = proven_lab(server, "voice", None)
    page, log = judge(browser, server, lab)
    wait_js(page, "labJudge.phase === 'voting'")
    assert page.evaluate("labJudge.audio()") == [0, 0, 0, 0]  # silent until played
    page.click("#play")
    levels = wait_js(page, "(() => { const a = labJudge.audio(); "
                           "return a.some((x) => x > 0) ? a : null; })()", timeout=20)
    assert all(0 <= x <= 1 for x in levels) and levels[0] > 0, levels
    bands = set()
    for _ in range(40):  # overall, bass, mid, high each move while the voice speaks
        bands |= {i for i, x in enumerate(page.evaluate("labJudge.audio()")) if x > 0}
        page.wait_for_timeout(50)
    assert bands == {0, 1, 2, 3}
    assert "/lab/voice.ogg" in " ".join(log["finished"])
    page.click("#play")  # pause: zero again
    wait_js(page, "labJudge.audio().every((x) => x === 0)")
    page.close()


def test_the_gallery_shows_judged_organisms_live_with_lineage_and_a_visitor_cross(
        browser, server) -> None:
    async def setup(c):
        lab = await new_lab(c, "gallery")
        ids = await born(c, lab, 3)
        for oid in ids:
            await c.request("lab.ok", lab, {"id": oid})
        child = (await born(c, lab, 1))[0]  # a grammar child of proven parents
        await c.request("lab.ok", lab, {"id": child})
        for k in range(8):
            pair = await c.request("lab.public_pair", lab, {"client_key": f"g{k}"})
            await c.request("lab.vote", lab, {"pair": pair["pair"], "client_key": f"g{k}",
                                              "winner": pair["left"]["id"]})
        return lab, (await c.request("lab.gallery", lab, {}))["organisms"]

    lab, shown = with_owner(server, setup)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log = page_log(page)
    page.goto(f"{server.http_url}/lab/gallery.html?id={lab}")
    wait_js(page, "labGallery.phase === 'live'")
    ids = [o["id"] for o in shown]
    assert page.evaluate("labGallery.shown") == ids and ids  # by rating, each compiled
    page.wait_for_timeout(500)
    lit = page.evaluate("""[...document.querySelectorAll('.card canvas')].map((c) => {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 0; i < d.length; i += 4) n += d[i] + d[i + 1] + d[i + 2];
        return n > 0; })""")
    assert lit == [True] * len(ids)  # every card drawn live
    with_parents = next(o for o in shown if o["parents"])
    card = page.locator(f'.card[data-id="{with_parents["id"]}"]')
    card.locator("summary").click()
    wait_js(page, f"document.querySelectorAll('.card[data-id=\"{with_parents['id']}\"] "
                  "li').length >= 2")
    assert with_parents["parents"][0] in card.locator("ol").text_content()
    a, b = ids[0], ids[1]
    page.locator(f'.card[data-id="{a}"] button[data-slot="a"]').click()
    page.locator(f'.card[data-id="{b}"] button[data-slot="b"]').click()
    page.click("#cross")
    crossed = wait_js(page, "labGallery.crosses[0] && labGallery.crosses[0].status")
    entry = page.evaluate("labGallery.crosses[0]")
    assert crossed == "alive", entry

    async def lineage(c):
        return await c.request("lab.lineage", lab, {"id": entry["id"], "depth": 1})

    child = with_owner(server, lineage)["ancestors"][0]
    assert child["parents"] == [a, b] and child["source"] == "cross"
    assert not child["render_ok"]  # born unproven
    assert "born, unproven" in page.text_content("#cross-result")
    assert not log["errors"], log["errors"]
    page.close()


@pytest.mark.parametrize("viewport", [(1280, 800), (390, 844)])
def test_the_gallery_says_why_it_cannot_read_the_lab_and_asks_again(
        browser, server, viewport) -> None:
    """A gallery of a lab not created yet said "connecting…" for good (an uncaught
    rejection): it says why and asks again, 1 s doubling to 30 s apart."""
    name = f"later{viewport[0]}"
    page = browser.new_page(viewport=dict(zip(("width", "height"), viewport, strict=True)))
    log = page_log(page)
    stand_still(page)
    page.goto(f"{server.http_url}/lab/gallery.html?id=lab:{name}")
    status = page.locator("#status")
    for wait in (1, 2, 4):
        wait_js(page, f"labGallery.phase === 'retrying' && labGallery.retry === {wait * 1000}")
        expect(status).to_have_attribute("data-state", "error")
        expect(status).to_have_text(f"unknown_actor: there is no world 'lab:{name}'; "
                                    f"lab.create creates it: trying again in {wait} s")
        if wait < 4:
            page.clock.run_for(wait * 1000)
    proven_lab(server, name, None)
    page.clock.run_for(4000)
    wait_js(page, "labGallery.phase === 'live'")
    expect(status).to_have_text("0 organisms")  # proven, not judged yet
    assert not log["errors"], log["errors"]
    page.close()


@pytest.mark.parametrize("path", ["judge.html", "gallery.html", "index.html"])
def test_the_public_pages_fit_a_phone(browser, server, path) -> None:
    lab, _, _ = proven_lab(server, f"phone-{path.split('.')[0]}", None, "T" + "W" * 78)
    page = browser.new_page(viewport={"width": 390, "height": 844})
    log = page_log(page)
    page.goto(f"{server.http_url}/lab/{path}?id={lab}")
    wait_js(page, "document.getElementById('status').dataset.state === 'live'")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    links = page.evaluate("[...document.querySelectorAll('a[href^=\"/lab/\"]')]"
                          ".map((a) => a.getAttribute('href'))")
    assert links and all(h.endswith(f"?id={lab.replace(':', '%3A')}") for h in links), links
    if path == "judge.html":
        wait_js(page, "labJudge.phase === 'voting'")
        left, right = (page.locator(f"#{s} .stage").bounding_box() for s in ("left", "right"))
        assert left["y"] + left["height"] <= right["y"] and right["width"] <= 390
        in_reach(page, "#votes")
    if path == "index.html":
        padded(page, ".panel", ".panel p")
    if path == "gallery.html":  # two judged parents with 80-letter titles in the cross panel
        async def judged(c):
            pair = await c.request("lab.public_pair", lab, {"client_key": "phone"})
            await c.request("lab.vote", lab, {"pair": pair["pair"], "client_key": "phone",
                                              "winner": pair["left"]["id"]})

        with_owner(server, judged)
        page.reload()
        wait_js(page, "labGallery.phase === 'live' && labGallery.shown.length === 2")
        for card, slot in ((0, "a"), (1, "b")):
            page.locator(".card").nth(card).locator(f'button[data-slot="{slot}"]').click()
        padded(page, ".cross", "#parent-a")
        panel = page.locator(".cross").bounding_box()
        for slot in ("a", "b"):
            box = page.locator(f"#parent-{slot}").bounding_box()
            assert panel["x"] <= box["x"] and box["x"] + box["width"] <= panel["x"] + panel["width"]
    assert not log["errors"], log["errors"]
    page.close()


def test_through_a_long_outage_the_landing_page_reads_its_counts_once_at_a_time(
        browser, tmp_path) -> None:
    """The landing page reads the lab's counts every 3 s; with the server away for 70 s (the
    page's clock run on) it waits on one reading at a time, not one per tick, notes beside
    its status why the counts are not refreshed, the status still saying it reconnects (no
    unhandled rejection; on a phone, nothing wider than the screen), and once the server is
    back on its port reads them again and the note is gone."""
    with ServerProcess(tmp_path / "data") as srv:
        lab = with_owner(srv, lambda c: new_lab(c, "outage"))
        page, errors = inflight.watched(browser, viewport={"width": 390, "height": 844})
        page.goto(f"{srv.http_url}/lab/?id={lab}")
        status = page.locator("#status")
        expect(page.locator("#counts")).to_have_text(
            "0 organisms · 0 proven · 0 dead · 0 votes", timeout=30_000)
        inflight.count(page)
        port = srv.port
        srv.kill()
        expect(status).to_have_attribute("data-state", "reconnecting", timeout=30_000)
        page.clock.run_for(70_000)  # 23 ticks; a reading waits 30 s for a socket
        seen = inflight.calm(page, errors)
        expect(page.locator("#status .note")).to_have_text(
            "counts not refreshed: lab.info got no reply within 30000 ms")
        expect(status).to_have_attribute("data-state", "reconnecting")
        assert page.evaluate("document.getElementById('status').firstChild.data") == \
            "reconnecting"
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        done = seen["done"]["lab.info"]
        srv.start(port=port)
        expect(status).to_have_text(lab, timeout=30_000)
        wait_js(page, f"window.__requests.done['lab.info'] > {done}")
        inflight.calm(page, errors)
        expect(status).to_have_text(lab)
        page.close()


# Each page's own word on an empty lab: its path (the arena's with the owner's token), state
# and text.
WAITING = {
    "judge": ("/lab/judge.html?id={lab}", "waiting",
              "nothing to judge yet: fewer than two proven shaders"),
    "gallery": ("/lab/gallery.html?id={lab}", "live", "0 organisms"),
    "arena": ("/lab/arena.html?id={lab}#token={token}", "waiting",
              "waiting for births: fewer than two live organisms"),
}


# The judging page in `make test`; the gallery and the arena, which follow the connection
# through the same `statusLine`, behind `-m deep` (20-30 s each: `make test`'s budget).
@pytest.mark.parametrize("name", [pytest.param(name, marks=[] if name == "judge" else
                                               pytest.mark.deep) for name in WAITING])
def test_through_an_outage_a_lab_page_says_it_reconnects_then_its_own_word(
        browser, tmp_path, name: str) -> None:
    """With the server killed under it, the page's status follows the connection
    (reconnecting), not what the page last said; with the server back on its port, the
    page's own word is back (the shared `statusLine`, web/js/page.js)."""
    path, state, said = WAITING[name]
    with ServerProcess(tmp_path / "data") as srv:
        lab = with_owner(srv, lambda c: new_lab(c, "outage"))
        page, errors = inflight.watched(browser)
        page.goto(srv.http_url + path.format(lab=lab, token=srv.owner_token))
        expect(page.locator("#status")).to_have_text(said, timeout=30_000)
        inflight.through_an_outage(page, errors, srv, state, said)
        page.close()
