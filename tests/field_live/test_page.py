"""The field page in headless Chromium: the daily field drawn, updated live, scrubbed back."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import trio
from playwright.sync_api import expect

from protocol.client import Client
from tests.field_live._live import ready
from tests.server.server_process import ServerProcess

WAIT = 60_000  # ms: the daily field is generated when the page first asks for it
BG = [238, 240, 236, 255]


def _play(url: str, game: str, step: str, state: dict) -> None:
    """Join and reveal (step "reveal"), or make one correct commit (step "commit")."""

    async def run() -> None:
        to = f"field:{game}"
        async with Client.connect(url) as c:
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


def test_field_page_draws_updates_and_scrubs(browser, tmp_path: Path) -> None:
    game = f"day-{datetime.now(UTC).date().isoformat()}"
    with ServerProcess(tmp_path / "data", "--open") as server:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{server.http_url}/field.html")
        expect(page.locator("#game")).to_have_text(game)
        expect(page.locator("#status")).to_contain_text("live · revision 1", timeout=WAIT)
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
        # hues: neighbours differ, and an agent's hue never changes as others join
        hues = page.evaluate("""async () => {
            const { assignHues } = await import("/js/field-render.js");
            const tiles = [0, 1, 2, 3].map((k) => ({ x0: 20 * k, y0: 0, w: 20, h: 20 }));
            tiles.push({ x0: 900, y0: 900, w: 20, h: 20 });
            const agents = [0, 1, 2, 3, 4].map((k) => ({ seed_tile: k }));
            return [assignHues(agents.slice(0, 4), tiles), assignHues(agents, tiles)];
        }""")
        four, five = hues
        assert five[:4] == four
        gaps = [min(abs(a - b), 360 - abs(a - b)) for i, a in enumerate(four) for b in four[i + 1:]]
        assert min(gaps) >= 30
        assert not errors, errors


def test_field_page_opens_the_game_the_lobby_links_to(browser, tmp_path: Path) -> None:
    """The lobby links `field.html?id=field:NAME`; the page must open NAME, not the daily field."""
    with ServerProcess(tmp_path / "data", "--open") as server:
        page = browser.new_page()
        page.goto(f"{server.http_url}/field.html?id=field:lobby-link_1")
        expect(page.locator("#game")).to_have_text("lobby-link_1")
        page.goto(f"{server.http_url}/field.html?game=by-game")
        expect(page.locator("#game")).to_have_text("by-game")
