"""The ecosystem page in headless Chromium, against `petridish serve` in a subprocess: the
form shows the server's refusal, a run's charts grow, its fields and food web draw, a
patch from the page changes the food web, the scrubber shows generation 50 of the finished
run, nothing scrolls sideways at 390 x 844, and the source label, named intent and
contract conflicts of a model setup are shown."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from protocol.client import RequestError
from tests import inflight
from tests.bidi import ESCAPES, in_order
from tests.ecosystem.conftest import FakeModel
from tests.ecosystem.model_script import ANSWERS, HAPPY, REJECT, ROLES, span
from tests.server.server_process import ServerProcess
from tests.server.sync_client import ask_all

WAIT = 60_000  # ms
POND = ("A quiet pond where algae bloom and snails graze", "A hungry pike stalks the snails",
        "Keep all three alive")
SPECIES = {"A": (47, 125, 91), "B": (59, 111, 182), "C": (176, 96, 44)}  # the page's colours


def fill_form(page: Page, world: str, threat: str, reward: str) -> None:
    page.fill("#world", world)
    page.fill("#threat", threat)
    page.fill("#reward", reward)


def pond_form(browser: Browser, server: ServerProcess, width: int, height: int,
              name: str) -> tuple[Page, list[str]]:
    """A page on the setup form filled with the pond, run `name` on a 16 x 16 grid; the
    page errors it will raise."""
    page = browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{server.http_url}/ecosystem/")
    fill_form(page, *POND)
    page.fill("#run-name", name)
    page.select_option("#size", "16")
    return page, errors


def ink(page: Page, canvas: str) -> int:
    """Pixels of `canvas` drawn in a species' colour (the lines, not the grid or labels)."""
    return page.evaluate("""([sel, colours]) => {
        const c = document.querySelector(sel);
        const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) {
            if (d[i + 3] < 200) continue;
            if (colours.some(([r, g, b]) => Math.abs(d[i] - r) + Math.abs(d[i + 1] - g)
                                            + Math.abs(d[i + 2] - b) < 40)) n += 1;
        }
        return n;
    }""", [canvas, list(SPECIES.values())])


def painted(page: Page, plane: str) -> int:
    """Cells of a heatmap plane drawn away from the background."""
    return page.evaluate("""(plane) => {
        const c = document.querySelector(`#heatmaps canvas[data-plane="${plane}"]`);
        const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - 241) + Math.abs(d[i + 2] - 239) > 6) n += 1;
        return n;
    }""", plane)


def fits(page: Page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_the_page_plays_patches_and_replays_a_run(browser, tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", "--open") as server:
        # wait_for_function evaluates strings, which the page's CSP forbids (server/headers.py)
        page = browser.new_page(viewport={"width": 1280, "height": 900}, bypass_csp=True)
        errors = inflight.errors(page)
        page.goto(f"{server.http_url}/ecosystem/")
        fill_form(page, "x" * 141, *POND[1:])
        expect(page.locator('.count[data-for="world"]')).to_have_text("141/140")
        page.click("#create")
        expect(page.locator('[data-error="world"]')).to_have_text(
            "Invalid setup answers: world must be at most 140 characters", timeout=WAIT)
        expect(page.locator("#live")).to_be_hidden()
        fill_form(page, *POND)
        page.fill("#run-name", "pagerun")
        page.fill("#seed", "7")
        page.select_option("#size", "16")
        page.click("#create")
        expect(page.locator('[data-error="world"]')).to_be_empty()
        page.wait_for_function("window.ecosystemPage.generation === 0", timeout=WAIT)
        expect(page.locator("#source-label")).to_have_text("deterministic fallback (keyword setup)")
        # The food web of the rule graph: three species and the resource; the pike eats
        # the snails, the snails the algae; algae and snails feed on the resource.
        web = page.locator("#foodweb")
        expect(web).to_have_attribute("data-version", "1")
        assert web.locator(".node").count() == 4
        eats = {(e.get_attribute("data-from"), e.get_attribute("data-to"))
                for e in web.locator('.edge[data-kind="eats"]').all()}
        assert eats == {("C", "B"), ("B", "A"), ("A", "R"), ("B", "R")}
        assert web.locator('.edge[data-pair="A-C"]').count() == 0  # neutral
        for plane in ("A", "B", "C", "resource"):
            assert painted(page, plane) > 0, plane
        # A patch from the page lands at the next generation and changes the food web.
        page.select_option("#patch-kind", "pair")
        page.select_option("#patch-target", "A-C")
        page.select_option("#patch-value", "avoidance")
        page.click("#patch")
        expect(page.locator('[data-error="patch"]')).to_have_text(
            "decision 0 accepted: it lands at generation 1", timeout=WAIT)
        page.click("#step")
        expect(web).to_have_attribute("data-version", "2", timeout=WAIT)
        expect(web.locator('.edge[data-pair="A-C"][data-kind="avoidance"]')).to_have_count(1)
        expect(page.locator("#happenings")).to_contain_text(
            "generation 1: decision 0 (patch, immediate) (trigger immediate) applied")
        # Played at the top speed, the charts grow as generations arrive.
        page.fill("#speed", "30")
        page.dispatch_event("#speed", "input")
        page.click("#play")
        page.wait_for_function("window.ecosystemPage.generation >= 20", timeout=WAIT)
        seen = page.evaluate("window.ecosystemPage.generation")
        before = ink(page, "#chart-biomass")
        page.wait_for_function(f"window.ecosystemPage.generation >= {seen + 10}", timeout=WAIT)
        page.wait_for_function(f"document.querySelector('#chart-biomass').dataset.generation"
                               f" >= {seen + 10}", timeout=WAIT)
        assert ink(page, "#chart-biomass") > before
        assert ink(page, "#chart-population") > 0
        expect(page.locator("#heatmaps")).not_to_have_attribute("data-generation", "0")
        # The end: the score breakdown and the engine's reflection.
        page.wait_for_function("window.ecosystemPage.generation === 180", timeout=WAIT)
        expect(page.locator("#end")).to_be_visible(timeout=WAIT)
        assert page.locator("#breakdown tbody tr").count() == 5
        expect(page.locator("#reflection-label")).to_have_text("the engine's facts")
        expect(page.locator("#facts")).to_contain_text("decision 0 (patch, accepted at 0)")
        expect(page.locator("#controls")).to_be_hidden()
        # The scrubber shows generation 50 of the finished run: its frame, fields and graph.
        page.locator("#scrubber").fill("50")
        expect(page.locator("#frame-figures")).to_contain_text("generation 50 ·", timeout=WAIT)
        expect(page.locator("#heatmaps")).to_have_attribute("data-generation", "50")
        expect(page.locator("#scrub-value")).to_have_text("50")
        expect(page.locator("#timeline line[data-shown]")).to_have_attribute("data-shown", "50")
        expect(web).to_have_attribute("data-version", "2")
        for plane in ("A", "B", "resource"):
            assert painted(page, plane) > 0, plane
        page.click("#to-live")
        expect(page.locator("#frame-figures")).to_contain_text("generation 180 ·", timeout=WAIT)
        # The lobby links the run to this page.
        page.goto(f"{server.http_url}/")
        expect(page.locator('a[href="/ecosystem/?id=ecosystem%3Apagerun"]')).to_have_count(
            1, timeout=WAIT)
        assert not errors, errors
        # On a phone: the form and the finished run fit the width.
        phone = browser.new_page(viewport={"width": 390, "height": 844}, bypass_csp=True)
        phone_errors = inflight.errors(phone)
        phone.goto(f"{server.http_url}/ecosystem/")
        expect(phone.locator("#setup-form")).to_be_visible()
        assert fits(phone)
        phone.goto(f"{server.http_url}/ecosystem/?id=ecosystem:pagerun")
        phone.wait_for_function("window.ecosystemPage.generation === 180", timeout=WAIT)
        expect(phone.locator("#end")).to_be_visible(timeout=WAIT)
        expect(phone.locator("#controls")).to_be_hidden()  # ended
        assert fits(phone)
        assert not errors and not phone_errors, (errors, phone_errors)


def test_no_answer_reorders_the_answers_after_it(browser, tmp_path: Path) -> None:
    """The run's answers are anyone's text, shown on one line: each is a direction isolate
    that what is in it cannot get out of, so the answers after it read in order."""
    with ServerProcess(tmp_path / "data", "--open") as server:
        # one column, the answers on one line (in_order reads a line)
        page = browser.new_page(viewport={"width": 1000, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{server.http_url}/ecosystem/")
        fill_form(page, *(f"{word} {escape}" for word, escape in zip(
            ("algae", "pike", "snails"), ESCAPES, strict=True)))
        page.fill("#run-name", "names")
        page.select_option("#size", "16")
        page.click("#create")
        expect(page.locator("#answers")).to_contain_text("reward:", timeout=WAIT)
        assert in_order(page, "#answers", "· threat:") == [True]
        assert in_order(page, "#answers", "· reward:") == [True]
        assert not errors, errors


def test_the_page_keeps_its_run_across_a_reload_a_stop_and_a_restart(browser,
                                                                       tmp_path: Path) -> None:
    """On a phone: a reload keeps the owner's controls (the anonymous key is kept); a run an
    admin stops says so in the status (the shared line's refusal, which no repaint replaces)
    and comes back when released, saying the run's word at once (not the refusal until a
    repaint); a refused scrub says so beside the refusal and returns to live; after a server
    restart the status is the run's again."""
    with ServerProcess(tmp_path / "data", "--open") as server:
        page, errors = pond_form(browser, server, 390, 844, "kept")
        page.click("#create")
        status, generation = page.locator("#status"), page.locator("#generation")
        expect(status).to_have_text("paused", timeout=WAIT)
        page.reload()
        expect(status).to_have_text("paused", timeout=WAIT)
        expect(page.locator("#controls")).to_be_visible()
        page.click("#step")
        expect(generation).to_have_text("1", timeout=WAIT)
        stop = ("admin.stop", "admin:main", {"id": "ecosystem:kept"})
        ask_all(server.ws_url, server.owner_token, stop)
        expect(status).to_contain_text("trying again", timeout=WAIT)
        page.evaluate("""() => new Promise((done) => {
            dispatchEvent(new Event("resize"));  // a repaint while the run is away
            requestAnimationFrame(() => requestAnimationFrame(done));
        })""")
        expect(status).to_contain_text("unavailable: ecosystem:kept was stopped by the owner")
        page.locator("#scrubber").fill("0")
        expect(status.locator(".note")).to_contain_text("generation 0 not shown", timeout=WAIT)
        expect(status).to_contain_text("trying again")
        expect(page.locator("#scrub-value")).to_have_text("—")
        expect(page.locator("#frame-figures")).to_contain_text("generation 1 ·")
        assert fits(page)
        # No repaint from now until the run is back: the status says the run's word anyway.
        page.evaluate("""() => {
            window.__paint = requestAnimationFrame;
            window.requestAnimationFrame = (f) => (window.__held ??= []).push(f);
        }""")
        ask_all(server.ws_url, server.owner_token, ("admin.release", *stop[1:]))
        expect(status).to_have_text("paused", timeout=WAIT)
        expect(status).to_have_attribute("data-state", "open")
        page.evaluate("""() => {
            window.requestAnimationFrame = window.__paint;
            for (const f of window.__held ?? []) f(performance.now());
        }""")
        page.click("#step")
        expect(generation).to_have_text("2", timeout=WAIT)
        port = server.port
        server.kill()
        expect(status).to_have_text("reconnecting", timeout=WAIT)
        server.start(port=port)
        expect(status).to_have_text("paused", timeout=WAIT)
        expect(page.locator("#controls")).to_be_visible()
        assert not errors, errors


def test_the_page_shows_the_model_setup_its_intent_and_conflicts(
        browser, tmp_path: Path, fake_model: FakeModel) -> None:
    with ServerProcess(tmp_path / "data", "--open", "--model-url", fake_model.url,
                       "--model", "fake-model", "--model-timeout", "5") as server:
        # wait_for_function evaluates strings, which the page's CSP forbids (server/headers.py)
        page = browser.new_page(viewport={"width": 1280, "height": 900}, bypass_csp=True)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        # A mapping whose second span lies outside the threat: the labelled fallback, with
        # the finite stage and code and our own contract message.
        outside = {"organisms": [span("world", "algae", "A"),
                                 {"slot": "B", "source": "threat", "start": 30, "end": 300}]}
        fake_model.script = [outside]
        page.goto(f"{server.http_url}/ecosystem/")
        fill_form(page, ANSWERS["world"], ANSWERS["threat"], ANSWERS["reward"])
        page.fill("#run-name", "fellback")
        page.click("#create")
        expect(page.locator("#source-label")).to_have_text(
            "deterministic fallback (keyword setup)", timeout=WAIT)
        expect(page.locator("#failure")).to_contain_text("failed at mapping: invalid_output")
        expect(page.locator("#failure .conflicts")).to_have_text("organisms[1].end must be 31..39")
        # Through the model: its label and the named intent.
        fake_model.script = copy.deepcopy(HAPPY)
        page.goto(f"{server.http_url}/ecosystem/")
        fill_form(page, ANSWERS["world"], ANSWERS["threat"], ANSWERS["reward"])
        page.fill("#run-name", "modelled")
        page.click("#create")
        expect(page.locator("#source-label")).to_have_text("set up by the model · 6 calls",
                                                           timeout=WAIT)
        expect(page.locator("#intent")).to_contain_text("C: \u2068pike\u2069 (threat 9..13)")
        # A persistent rejection: blocked, with its finite review focus; the form stays.
        fake_model.script = copy.deepcopy(HAPPY[:4] + [REJECT, ROLES, HAPPY[3],
                                                       {"verdict": "reject", "focus": "B"}])
        page.goto(f"{server.http_url}/ecosystem/")
        fill_form(page, ANSWERS["world"], ANSWERS["threat"], ANSWERS["reward"])
        page.fill("#run-name", "blocked")
        page.click("#create")
        expect(page.locator("#source-label")).to_have_text("blocked by the fidelity review",
                                                           timeout=WAIT)
        expect(page.locator("#failure")).to_contain_text(
            "failed at fidelity: not_approved · review focus B")
        expect(page.locator("#intent")).to_contain_text("A: \u2068algae\u2069")
        expect(page.locator("#setup-form")).to_be_visible()
        assert fits(page) and not errors, errors


# Every edge of the food web in `sel`, sampled along its segment: the nodes it passes
# through other than its ends, the node labels it crosses, and any text outside the viewBox.
CROSSINGS = """(sel) => {
    const svg = document.querySelector(sel);
    const box = (b) => ({ x: b.x, y: b.y, w: b.width, h: b.height });
    const inside = (p, b) => p.x >= b.x && p.x <= b.x + b.w && p.y >= b.y && p.y <= b.y + b.h;
    const nodes = [...svg.querySelectorAll(".node")].map((g) => {
        const c = g.querySelector("circle");
        return { id: g.dataset.species, box: c ? null : box(g.querySelector("rect").getBBox()),
                 c: c && { x: +c.getAttribute("cx"), y: +c.getAttribute("cy"), r: +c.getAttribute("r") } };
    });
    const labels = [...svg.querySelectorAll(".node text.label")].map((t) => ({
        id: t.parentNode.dataset.species, box: box(t.getBBox()) }));
    const out = new Set();
    for (const e of svg.querySelectorAll(".edge")) {
        const [x1, y1, x2, y2] = e.getAttribute("d").slice(1).split(/[\\s,L]+/).map(Number);
        for (let i = 0; i <= 400; i++) {
            const p = { x: x1 + ((x2 - x1) * i) / 400, y: y1 + ((y2 - y1) * i) / 400 };
            for (const n of nodes) {
                if (n.id === e.dataset.from || n.id === e.dataset.to) continue;
                if (n.c ? Math.hypot(p.x - n.c.x, p.y - n.c.y) <= n.c.r : inside(p, n.box)) {
                    out.add(`${e.dataset.pair} passes through ${n.id}`);
                }
            }
            for (const l of labels) if (inside(p, l.box)) out.add(`${e.dataset.pair} crosses ${l.id}'s label`);
        }
    }
    for (const t of svg.querySelectorAll("text")) {
        const b = t.getBBox();
        if (b.x < 0 || b.y < 0 || b.x + b.width > 400 || b.y + b.height > 300) out.add(`${t.textContent} outside`);
    }
    return [...out];
}"""

# The densest web of n species drawn by the page's own module: every pair drawn (eats or
# competition), every species a basal feeder (an arrow to the resource each).
DENSEST = """async (n) => {
    const { drawFoodWeb } = await import("/ecosystem/foodweb.js");
    const ids = ["A", "B", "C", "D"].slice(0, n);
    const names = ["algae", "snails", "pike", "herons"];
    const species = ids.map((id, k) => ({ id, name: names[k], role: "grazer", self: "territorial" }));
    const interactions = [];
    for (let a = 0; a < n; a++) {
        for (let b = a + 1; b < n; b++) {
            interactions.push({ pair: `${ids[a]}-${ids[b]}`, mode: (a + b) % 2 ? "a_consumes_b" : "competition" });
        }
    }
    document.querySelector("#web").hidden = false;
    drawFoodWeb(document.querySelector("#foodweb"), { version: n, species, interactions },
                { A: "#2f7d5b", B: "#3b6fb6", C: "#b0602c", D: "#8a4bb0" });
    return document.querySelectorAll("#foodweb .edge").length;
}"""


def test_no_food_web_edge_passes_through_another_node(browser, tmp_path: Path) -> None:
    """The default two-species web (where the hunters' arrow once ran through the grazers
    to the resource) and the densest web of 1..4 species: every edge runs clear of the
    nodes other than its ends and of the node labels; every label is in the picture."""
    with ServerProcess(tmp_path / "data", "--open") as server:
        ask_all(server.ws_url, server.owner_token, ("ecosystem.create", "ecosystem:plain", {
            "answers": {"world": "a quiet place", "threat": "nothing much",
                        "reward": "anything"}, "size": 16, "seed": 1}))
        for width, height in ((1280, 800), (390, 844)):
            page = browser.new_page(viewport={"width": width, "height": height}, bypass_csp=True)
            errors: list[str] = []
            page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
            page.goto(f"{server.http_url}/ecosystem/?id=ecosystem:plain")
            web = page.locator("#foodweb")
            expect(web).to_have_attribute("data-version", "1", timeout=WAIT)
            assert web.locator("circle").count() == 2  # the default graph
            assert page.evaluate(CROSSINGS, "#foodweb") == []
            page.goto(f"{server.http_url}/ecosystem/")  # no run to redraw its own web
            expect(page.locator("#setup-form")).to_be_visible()
            for n in range(1, 5):
                assert page.evaluate(DENSEST, n) == n * (n - 1) // 2 + n
                assert page.evaluate(CROSSINGS, "#foodweb") == [], n
            assert not errors, errors
            page.close()


def test_the_forms_follow_the_run(browser, tmp_path: Path) -> None:
    """A seed past 2^53-1 is refused by the form (a JavaScript number would round it) and
    nothing is sent; the schedule form's "from" keeps up with the run's generation (what
    was typed above it stays); a change scheduled after_24 says, and the timeline draws,
    the generation it may fire from, delay included."""
    with ServerProcess(tmp_path / "data", "--open") as server:
        page, errors = pond_form(browser, server, 1280, 800, "follows")
        page.fill("#seed", "9007199254740993")
        page.click("#create")
        expect(page.locator('[data-error="form"]')).to_have_text(
            "seed must be between 0 and 9007199254740991")
        with pytest.raises(RequestError, match=r"^unknown_actor: "):  # nothing was sent
            ask_all(server.ws_url, server.owner_token, ("ecosystem.view", "ecosystem:follows", {}))
        page.fill("#seed", "7")
        page.click("#create")
        generation, start = page.locator("#generation"), page.locator("#change-generation")
        expect(page.locator("#controls")).to_be_visible(timeout=WAIT)
        for g in range(1, 6):
            page.click("#step")
            expect(generation).to_have_text(str(g), timeout=WAIT)
        expect(start).to_have_value("5")
        expect(start).to_have_attribute("min", "5")
        page.select_option("#change-activation", "after_24")
        page.click("#schedule")
        expect(page.locator('[data-error="patch"]')).to_have_text(
            "decision 0 scheduled from generation 29", timeout=WAIT)
        bar = page.locator('#timeline rect[data-decision="0"] title')
        expect(bar).to_have_text("decision 0 may fire from 29", timeout=WAIT)
        expect(page.locator("#happenings")).to_contain_text("(may fire from 29)")
        start.fill("40")
        page.click("#step")
        expect(generation).to_have_text("6", timeout=WAIT)
        expect(start).to_have_value("40")
        assert fits(page) and not errors, errors


def test_a_page_on_a_run_not_created_yet_follows_it_once_created(browser,
                                                                  tmp_path: Path) -> None:
    """On a phone: the page names the run in the form and says there is no such run yet,
    then goes live when someone creates it."""
    with ServerProcess(tmp_path / "data", "--open") as server:
        page = browser.new_page(viewport={"width": 390, "height": 844})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{server.http_url}/ecosystem/?id=ecosystem:later")
        status = page.locator("#status")
        expect(status).to_have_text("no such run yet", timeout=WAIT)
        expect(page.locator("#run-name")).to_have_value("later")
        expect(page.locator("#setup-form")).to_be_visible()
        assert fits(page)
        ask_all(server.ws_url, server.owner_token, ("ecosystem.create", "ecosystem:later", {
            "answers": dict(zip(("world", "threat", "reward"), POND, strict=True)),
            "size": 16}))
        expect(page.locator("#live")).to_be_visible(timeout=WAIT)
        expect(status).to_have_text("paused", timeout=WAIT)
        expect(page.locator("#setup")).to_be_hidden()
        expect(page.locator("#foodweb")).to_have_attribute("data-version", "1")
        assert fits(page) and not errors, errors


def sent_frames(page: Page) -> list[str]:
    """The frames the page will send on its websockets."""
    sent: list[str] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda p: sent.append(str(p))))
    return sent


def test_a_spectator_page_reads_each_decision_from_its_push(browser, tmp_path: Path) -> None:
    """The page asked for the whole view (every decision in it) once per decision pushed,
    to read when it may fire: it works it out from the view's vocabulary, and asks for
    nothing. The timeline says each decision's first generation, delays and triggers
    included, on a desktop and a phone."""
    changes = [("immediate", 1), ("after_6", 6), ("after_24", 24), ("population_boom", 2)] * 4
    with ServerProcess(tmp_path / "data") as server:  # the page: an anonymous spectator
        for width, height in ((1280, 800), (390, 844)):
            run = f"ecosystem:pushed-{width}"
            ask_all(server.ws_url, server.owner_token, ("ecosystem.create", run, {
                "answers": dict(zip(("world", "threat", "reward"), POND, strict=True)),
                "size": 16}))
            page = browser.new_page(viewport={"width": width, "height": height})
            errors = inflight.errors(page)
            sent = sent_frames(page)
            page.goto(f"{server.http_url}/ecosystem/?id={run}")
            expect(page.locator("#foodweb")).to_have_attribute("data-version", "1", timeout=WAIT)
            # Its first view and history asked (the panels show once they are answered).
            expect(page.locator("#timeline-panel")).to_be_visible(timeout=WAIT)
            asked = len(sent)
            ask_all(server.ws_url, server.owner_token, *[("ecosystem.schedule", run, {"change": {
                "generation": 0, "activation": activation, "duration": "short",
                "transition": "abrupt",
                "patch": {"kind": "environment", "field": "pressure", "value": "drought"}}})
                for activation, _ in changes])
            happenings = page.locator("#happenings li")
            expect(happenings).to_have_count(len(changes), timeout=WAIT)
            for k, (_, first) in enumerate(changes):
                expect(page.locator(f'#timeline rect[data-decision="{k}"] title')).to_have_text(
                    f"decision {k} may fire from {first}")
                expect(happenings.nth(k)).to_contain_text(f"(may fire from {first})")
            assert [frame for frame in sent[asked:] if '"op"' in frame] == []
            assert fits(page) and not errors, errors
            page.close()
