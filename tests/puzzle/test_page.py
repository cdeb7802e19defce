"""The puzzle pages in headless Chromium against a real server process: the player page draws
the board, keys move YOU (the pixels where YOU was and is change), Z undoes, a win shows the
banner, a second page watches live and replays with the slider, a share link opens the same
level in a fresh page; at 390x844 the board fits and swipes move, and fits again on both pages
when the window narrows to it; the editor saves a level
that the server validates and the solver solves; through an outage each page says it
reconnects, then its own word again."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import attrs
import pytest
from playwright.sync_api import Page, expect

from actors.puzzle.catalog import bundled
from actors.puzzle.hint import EXPANSIONS_PER_MS
from actors.puzzle.pack import pack_of
from actors.puzzle.share import make_link
from actors.puzzle.words import NOUNS, WORDS
from server.auth import TokenStore
from tests import inflight
from tests.server.server_process import ServerProcess

WAIT = 30_000  # ms
BG = [27, 31, 37, 255]  # render.js BOARD_BG


def _pixel(page: Page, x: int, y: int) -> list[int]:
    return page.evaluate(f"window.puzzlePage.pixelAt({x}, {y})")


def _revision(page: Page, rev: int) -> None:
    expect(page.locator("#board")).to_have_attribute("data-revision", str(rev), timeout=WAIT)


def _start(page: Page, url: str) -> None:
    """Open `url` and wait until its player can play: the first render (revision 1) marks the
    page `watching`; the render once the hello names the room's player clears it. (Not
    wait_for_function: its polls evaluate strings, which the page's CSP forbids.)"""
    page.goto(url)
    _revision(page, 1)
    expect(page.locator("body")).not_to_have_class(re.compile(r"\bwatching\b"), timeout=WAIT)
    assert page.evaluate("window.puzzlePage.canPlay")


def test_the_player_page_plays_watches_replays_and_shares(browser: Any, tmp_path: Path) -> None:
    solution = bundled("starter").levels[0].solution or ""
    tokens = TokenStore(tmp_path / "data")
    ann, bob = tokens.create("agent", "ann"), tokens.create("agent", "bob")
    # (The anonymous watcher's page load and scrubs spent more than the default burst of
    # 0.25 s of server time once in CI, while other work loaded the machine. Budgets are
    # tests/server/test_budgets.py's subject, not this page's.)
    with ServerProcess(tmp_path / "data", "--budget", "cpu_burst_anonymous=2") as server:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = inflight.errors(page)
        _start(page, f"{server.http_url}/puzzle/?pack=starter&level=first-steps&token={ann}")
        room = page.evaluate("window.puzzlePage.room")
        assert page.evaluate("location.search") == f"?id={room.replace(':', '%3A')}"
        vocabulary = page.evaluate("""async () => {
            const r = await import("/puzzle/render.js");
            return [r.NOUNS, r.WORDS, Object.keys(r.NOUN_STYLE)];
        }""")
        assert vocabulary == [list(NOUNS), list(WORDS), list(NOUNS)]
        expect(page.locator("#rules")).to_contain_text("baba is you")
        expect(page.locator("#levels li.current")).to_have_text("First steps")
        baba, empty = _pixel(page, 1, 2), _pixel(page, 2, 2)
        assert baba != BG and empty == BG, "YOU drawn on its cell, the next cell empty"

        watcher = browser.new_page(viewport={"width": 1000, "height": 800})
        watch_errors = inflight.errors(watcher)
        watcher.goto(f"{server.http_url}/puzzle/?id={room}")
        _revision(watcher, 1)
        expect(watcher.locator("body")).to_have_class("watching")
        assert not watcher.evaluate("window.puzzlePage.canPlay")

        page.keyboard.press("ArrowRight")
        _revision(page, 2)
        assert _pixel(page, 1, 2) == BG and _pixel(page, 2, 2) != BG, "YOU moved right"
        expect(page.locator("#moves")).to_have_text("1 move")
        _revision(watcher, 2)  # the watcher follows live
        page.keyboard.press("z")
        _revision(page, 3)
        assert _pixel(page, 1, 2) == baba and _pixel(page, 2, 2) == BG, "Z undid the move"
        for letter in solution:
            page.keyboard.press({"r": "d", "l": "a", "u": "w", "d": "s"}[letter])
        _revision(page, 3 + len(solution))
        banner = page.locator("#banner")
        expect(banner).to_be_visible()
        expect(banner).to_have_attribute("data-kind", "win")
        expect(page.locator("#banner-text")).to_contain_text(f"Solved in {len(solution)} moves")
        expect(page.locator("#leaders")).to_contain_text("ann", timeout=WAIT)

        # The finished room replayed on the watcher's slider.
        _revision(watcher, 3 + len(solution))
        expect(watcher.locator("#banner")).to_be_visible()
        watcher.evaluate("window.puzzlePage.scrub(0)")
        expect(watcher.locator("#board")).to_have_attribute("data-move", "0", timeout=WAIT)
        assert _pixel(watcher, 1, 2) == baba and _pixel(watcher, 5, 2) == BG
        watcher.evaluate(f"window.puzzlePage.scrub({len(solution) - 1})")
        expect(watcher.locator("#board")).to_have_attribute("data-move", str(len(solution) - 1),
                                                            timeout=WAIT)
        assert _pixel(watcher, 1, 2) == BG and _pixel(watcher, 5, 2) != BG
        watcher.click("#live")
        expect(watcher.locator("#board")).to_have_attribute("data-mode", "live")

        # Share: the link opens the same level in a fresh page (a new room of its own).
        page.click("#share")
        link = page.locator("#share-link")
        expect(link).to_be_visible()
        url = link.input_value()
        assert url.startswith(f"{server.http_url}/puzzle/?link=pd1.")
        fresh = browser.new_context().new_page()
        fresh_errors = inflight.errors(fresh)
        _start(fresh, f"{url}&token={bob}")
        mine, theirs = page.evaluate("window.puzzlePage.view"), fresh.evaluate(
            "window.puzzlePage.view")
        assert fresh.evaluate("window.puzzlePage.room") != room
        assert theirs["level_id"] == "first-steps" and theirs["moves"] == ""
        start = watcher.evaluate(f"""async () => (await (await import("/js/client.js"))
            .Client.connect()).request("puzzle.history", "{room}", {{move: 0}})""")
        assert theirs["board"]["objects"] == start["board"]["objects"]
        assert mine["title"] == theirs["title"]
        assert not errors and not watch_errors and not fresh_errors, (errors, watch_errors,
                                                                      fresh_errors)


def _swipe(page: Page, x: float, y: float, dx: float, dy: float) -> None:
    """A one-finger swipe, as touch events (Chromium turns them into pointer events)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    for k in range(1, 6):
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [
            {"x": x + dx * k / 5, "y": y + dy * k / 5}]})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})


def test_on_a_phone_the_board_fits_and_swipes_move(browser: Any, tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", "--open") as server:
        context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True,
                                      is_mobile=True, device_scale_factor=2)
        page = context.new_page()
        errors = inflight.errors(page)
        _start(page, f"{server.http_url}/puzzle/?pack=starter&level=walls")
        box = page.locator("#board").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        assert box["y"] + box["height"] <= 844 and box["width"] >= 200
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        view = page.evaluate("window.puzzlePage.view")
        (you,) = [o for o in view["board"]["objects"] if o["id"] in view["board"]["you"]]
        x, y = you["x"], you["y"]
        before = _pixel(page, x, y)
        _swipe(page, box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, 0, -80)
        _revision(page, 2)
        assert _pixel(page, x, y) != before and _pixel(page, x, y - 1) == before, "swiped up"
        page.locator("#pad .down").tap()
        _revision(page, 3)
        assert _pixel(page, x, y) == before, "the pad's down button moved it back"
        assert not errors, errors


def test_on_a_phone_a_long_level_name_and_hint_wrap(browser: Any, tmp_path: Path) -> None:
    """A level's name and hint are anyone's (200 characters each): one unbroken word
    widened the page to 2,700 px, and the board and every control with it."""
    level = attrs.evolve(bundled("starter").levels[0], name="N" * 200, hint="H" * 200)
    link = make_link(pack_of(level))
    with ServerProcess(tmp_path / "data", "--open") as server:
        context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True,
                                      is_mobile=True, device_scale_factor=2)
        page = context.new_page()
        _start(page, f"{server.http_url}/puzzle/?link={quote(link)}")
        assert page.locator("#title").text_content().endswith("N" * 200)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        for control in ("#board", "#pad .up", "#undo"):
            box = page.locator(control).bounding_box()
            assert box is not None and 0 <= box["x"] and box["x"] + box["width"] <= 390, control


def _click_cell(page: Page, x: int, y: int, button: str = "left") -> None:
    box = page.locator("#editor-board").bounding_box()
    cell = page.evaluate("window.editorPage.cell")
    page.mouse.click(box["x"] + (x + 0.5) * cell, box["y"] + (y + 0.5) * cell, button=button)


def _fits(page: Page, board: str, width: int) -> dict[str, float]:
    """Wait until the page is no wider than `width` and the `board` canvas fits inside its
    frame's padding (the layout settles a frame or two after a resize); the last reading."""
    measure = f"""() => {{
        const canvas = document.querySelector("{board}");
        const frame = canvas.parentElement;
        const pad = parseFloat(getComputedStyle(frame).paddingLeft)
          + parseFloat(getComputedStyle(frame).paddingRight);
        return {{page: document.documentElement.scrollWidth,
                 canvas: canvas.getBoundingClientRect().width,
                 room: frame.clientWidth - pad}};
    }}"""
    for _ in range(100):  # polled: up to about 5 s
        seen = page.evaluate(measure)
        if seen["page"] <= width and 0 < seen["canvas"] <= seen["room"]:
            return seen
        page.wait_for_timeout(50)
    raise AssertionError(f"after the resize to {width} px: {seen}")


def _editor_pixel(page: Page, x: int, y: int) -> list[int]:
    return page.evaluate(f"""async () => {{
        const r = await import("/puzzle/render.js");
        return r.pixelAt(document.querySelector("#editor-board"), window.editorPage.cell,
                         {x}, {y});
    }}""")


def test_narrowed_to_a_phone_a_page_fits_its_board_again(browser: Any, tmp_path: Path) -> None:
    """A desktop window narrowed to a phone's 390 px (or a phone turned upright): each page
    sizes its board again from the room it now has, drawn and usable, and the editor keeps
    an edit of its JSON not applied yet (a resize rewrote the box). The editor's board
    kept its desktop width (695 px: its panel in the phone's one column took the width of
    its content, the canvas, and the board was fitted to that)."""
    with ServerProcess(tmp_path / "data", "--open") as server:
        editor = browser.new_page(viewport={"width": 1280, "height": 800})
        errors = inflight.errors(editor)
        editor.goto(f"{server.http_url}/puzzle/editor.html")
        expect(editor.locator("#status")).to_contain_text("live", timeout=WAIT)
        editor.click('#nouns button[data-noun="baba"]')
        _click_cell(editor, 8, 6)
        wide = editor.evaluate("window.editorPage.cell")
        editor.click("text=Level JSON")
        editor.fill("#json", '{"width": 3')  # an edit not applied yet
        editor.set_viewport_size({"width": 390, "height": 844})
        _fits(editor, "#editor-board", 390)
        assert editor.input_value("#json") == '{"width": 3', "a resize kept the edit"
        cell = editor.evaluate("window.editorPage.cell")
        assert 8 <= cell < wide and cell * 9 <= 390
        assert _editor_pixel(editor, 8, 6) != BG and _editor_pixel(editor, 7, 6) == BG
        editor.click('#words button[data-word="you"]')
        _click_cell(editor, 7, 6)  # at the new size, the click lands on its cell
        assert [(t["word"], t["x"], t["y"]) for t in editor.evaluate(
            "window.editorPage.level")["text"]] == [("you", 7, 6)]
        assert _editor_pixel(editor, 7, 6) != BG

        player = browser.new_page(viewport={"width": 1280, "height": 800})
        player_errors = inflight.errors(player)
        _start(player, f"{server.http_url}/puzzle/?pack=starter&level=first-steps")
        player.set_viewport_size({"width": 390, "height": 844})
        _fits(player, "#board", 390)
        assert _pixel(player, 1, 2) != BG and _pixel(player, 2, 2) == BG
        player.locator("#pad .right").click()
        _revision(player, 2)
        assert _pixel(player, 1, 2) == BG and _pixel(player, 2, 2) != BG, "the pad moved YOU"
        assert not errors and not player_errors, (errors, player_errors)


def _server_side(url: str, pack: str, level_id: str, key: str) -> dict[str, Any]:
    """What the server makes of the saved level: its check, a fresh solve, and a room of
    the installed pack played with the recorded solution (as the page's anonymous caller,
    whose `key` the page holds: only a pack's owner runs its solver)."""
    import trio

    from protocol.client import Client

    async def run() -> dict[str, Any]:
        async with Client.connect(url, key=key) as c:
            to = f"puzzlepack:{pack}"
            saved = (await c.request("puzzlepack.level", to, {"level": level_id}))["level"]
            check = await c.request("puzzlepack.check", to, {"level": saved})
            solve = await c.request("puzzlepack.solve", to, {"level": saved, "budget_ms": 8000})
            room = await c.request("puzzle.create", "puzzle:from-editor",
                                   {"installed": pack, "level": level_id})
            rev = room["revision"]
            for letter in saved["solution"]:
                reply = await c.request("puzzle.move", "puzzle:from-editor", {
                    "dir": {"u": "up", "d": "down", "l": "left", "r": "right",
                            "s": "wait"}[letter], "expected_revision": rev})
                rev = reply["room"]["revision"]
            return {"saved": saved, "check": check, "solve": solve, "won": reply["room"]["won"]}

    return trio.run(run)


def test_the_editor_saves_a_level_the_server_validates_and_solves(browser: Any,
                                                                   tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", "--open") as server:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        errors = inflight.errors(page)
        page.goto(f"{server.http_url}/puzzle/editor.html")
        expect(page.locator("#status")).to_contain_text("live", timeout=WAIT)
        budgets = page.locator("#budget option")  # a budget is search work: its states
        assert budgets.all_inner_texts() == [
            f"{int(ms) * EXPANSIONS_PER_MS:,} states (~{int(ms) // 1000} s)"
            for ms in (budgets.nth(k).get_attribute("value") for k in range(budgets.count()))]
        page.fill("#width", "7")
        page.locator("#width").dispatch_event("change")
        page.fill("#height", "5")
        page.locator("#height").dispatch_event("change")
        page.fill("#level-id", "made")
        page.fill("#pack-name", "Made here")  # the name the pack is made with
        for word, x, y in (("baba", 0, 0), ("is", 1, 0), ("you", 2, 0), ("flag", 0, 4),
                           ("is", 1, 4), ("win", 2, 4)):
            page.click(f'#words button[data-word="{word}"]')
            _click_cell(page, x, y)
        for noun, x, y in (("baba", 1, 2), ("flag", 5, 2)):
            page.click(f'#nouns button[data-noun="{noun}"]')
            _click_cell(page, x, y)
        level = page.evaluate("window.editorPage.level")
        assert (level["width"], level["height"], len(level["objects"]), len(level["text"])) == (
            7, 5, 2, 6)

        # A bad thing (through the JSON box): the server's diagnostic shows beside its cell.
        level["objects"].append({"id": "frog1", "noun": "frog", "x": 3, "y": 1})
        page.click("summary")
        page.fill("#json", __import__("json").dumps(level))
        page.click("#apply-json")
        page.click("#validate")
        mark = page.locator('#marks .mark[data-cell="3,1"]')
        expect(mark).to_contain_text('objects[2].noun: unknown noun "frog"', timeout=WAIT)
        expect(page.locator("#diagnostics li")).to_have_count(1)
        _click_cell(page, 3, 1, button="right")  # right-click removes it
        page.click("#validate")
        expect(page.locator("#message")).to_contain_text("valid · rules: baba is you, flag is win",
                                                         timeout=WAIT)
        expect(page.locator("#marks .mark")).to_have_count(0)

        page.click("#solve")
        expect(page.locator("#solver")).to_have_attribute("data-status", "solved", timeout=WAIT)
        expect(page.locator("#progress")).to_be_hidden()  # the search is over
        solution = page.evaluate("window.editorPage.level.solution")
        assert solution
        page.click("#save")
        expect(page.locator("#message")).to_contain_text("saved into Made here", timeout=WAIT)
        expect(page.locator("#pack-levels li")).to_contain_text(f"solved in {len(solution)}")
        pack = page.evaluate("window.editorPage.pack")

        found = _server_side(server.ws_url, pack, "made", page.evaluate("window.editorPage.key"))
        assert found["saved"]["solution"] == solution and found["check"]["ok"]
        assert found["check"]["diagnostics"] == [] and found["solve"]["status"] == "solved"
        assert found["won"], "the recorded solution wins in a room of the installed pack"

        page.click("#publish")
        link = page.locator("#share-link")
        expect(link).to_be_visible(timeout=WAIT)
        fresh = browser.new_context().new_page()
        _start(fresh, link.input_value())
        assert fresh.evaluate("window.puzzlePage.view.level_id") == "made"
        assert not errors, errors



# A level's id: a number in its JSON (its decimal text on the wire: "1"), or any string, also
# one with a carriage return (which HTML reads as a newline).
IDS = (1, 2, "three\rlines\r\n")


def _pack_of_ids(url: str, token: str, pack: str) -> list[str]:
    """Save the starter pack's first levels into `puzzlepack:pack`, one for each of `IDS`;
    their titles."""
    import trio

    from protocol.client import Client

    starter = Path(__file__).parents[2] / "actors/puzzle/packs/starter.json"
    levels = json.loads(starter.read_text())["levels"][:len(IDS)]

    async def run() -> None:
        async with Client.connect(url, token=token) as c:
            to = f"puzzlepack:{pack}"
            await c.request("puzzlepack.create", to, {"name": "Odd ids"})
            for level_id, level in zip(IDS, levels, strict=True):
                await c.request("puzzlepack.save", to, {"level": {**level, "id": level_id}})

    trio.run(run)
    return [lv["name"] for lv in levels]


def test_a_level_opens_from_its_list_whatever_its_id(browser: Any, tmp_path: Path) -> None:
    """A click on a level in the player page's list goes to it, and in the editor's pack
    list loads it, for a number id and a string id with a carriage return alike: the page
    sends the id the server gave it."""
    ann = TokenStore(tmp_path / "data").create("agent", "ann")
    with ServerProcess(tmp_path / "data") as server:
        titles = _pack_of_ids(server.ws_url, ann, "odd")
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = inflight.errors(page)
        _start(page, f"{server.http_url}/puzzle/?installed=odd&token={ann}")
        current = page.locator("#levels li.current")
        expect(current).to_have_text(titles[0])
        for index in (2, 1):
            page.locator("#levels li", has_text=titles[index]).click()
            expect(current).to_have_text(titles[index], timeout=WAIT)
            assert page.evaluate("window.puzzlePage.view.level_id") == str(IDS[index])

        editor = browser.new_page(viewport={"width": 1280, "height": 1000})
        editor_errors = inflight.errors(editor)
        editor.goto(f"{server.http_url}/puzzle/editor.html?pack=odd&token={ann}")
        for index in (2, 1):
            editor.locator("#pack-levels li", has_text=titles[index]).click()
            expect(editor.locator("#level-name")).to_have_value(titles[index], timeout=WAIT)
        expect(editor.locator("#pack-name")).to_have_value("Odd ids")  # its name, as made
        expect(editor.locator("#pack-name")).not_to_be_editable()
        assert not errors and not editor_errors, (errors, editor_errors)


def _pack_ids(url: str, token: str, pack: str) -> list[str]:
    """The ids of `puzzlepack:pack`'s levels, in order, as the server holds them."""
    import trio

    from protocol.client import Client

    async def run() -> list[str]:
        async with Client.connect(url, token=token) as c:
            view = await c.request("puzzlepack.view", f"puzzlepack:{pack}", {})
            return [lv["id"] for lv in view["levels"]]

    return trio.run(run)


def test_the_editor_saves_a_loaded_level_under_its_own_id(browser: Any, tmp_path: Path) -> None:
    """A level whose id the one-line id box cannot hold (a line break, which the box strips)
    shows it as JSON, read-only and marked (also on a phone), and is saved again under that
    id, not as a new level; an id typed into the box is the level's id from then on."""
    ann = TokenStore(tmp_path / "data").create("agent", "ann")
    with ServerProcess(tmp_path / "data") as server:
        titles = _pack_of_ids(server.ws_url, ann, "odd")
        ids = [str(level_id) for level_id in IDS]
        editor = browser.new_page(viewport={"width": 1280, "height": 1000})
        errors = inflight.errors(editor)
        editor.goto(f"{server.http_url}/puzzle/editor.html?pack=odd&token={ann}")
        saved = editor.locator("#message")
        for index in (2, 1):
            editor.locator("#pack-levels li", has_text=titles[index]).click()
            expect(editor.locator("#level-name")).to_have_value(titles[index], timeout=WAIT)
            assert editor.evaluate("window.editorPage.level.id") == ids[index]
            escaped = "\n" in ids[index]
            box = editor.locator("#level-id")
            expect(box).to_have_value(json.dumps(ids[index]) if escaped else ids[index])
            expect(box).to_be_editable(editable=not escaped)
            expect(editor.locator('label[for="level-id"]')).to_have_text(
                "Id (JSON)" if escaped else "Id")
            if escaped:
                editor.set_viewport_size({"width": 390, "height": 844})
                shown = box.bounding_box()
                assert shown is not None and 0 <= shown["x"] and shown["x"] + shown["width"] <= 390
                editor.set_viewport_size({"width": 1280, "height": 1000})
            editor.fill("#level-name", f"{titles[index]} again")
            editor.click("#save")
            expect(saved).to_have_text("saved into Odd ids", timeout=WAIT)
            assert _pack_ids(server.ws_url, ann, "odd") == ids
            saved.evaluate("(el) => { el.textContent = ''; }")
        expect(editor.locator("#pack-levels li")).to_have_count(len(IDS))

        editor.fill("#level-id", "renamed")
        editor.click("#save")
        expect(saved).to_have_text("saved into Odd ids", timeout=WAIT)
        assert _pack_ids(server.ws_url, ann, "odd") == [*ids, "renamed"]
        assert not errors, errors


# Each page's own word to a spectator: its path, state and text.
SPECTATED = {
    "player": ("/puzzle/", "error", "a spectator can only watch: open a room with ?id=puzzle:NAME"),
    "editor": ("/puzzle/editor.html", "open", "live · spectator"),
}


# The player's page in `make test` (its word, a refusal, was the one lost after a
# reconnect); the editor's, through the same `statusLine`, behind `-m deep` (its budget).
@pytest.mark.parametrize("name", [pytest.param(name, marks=[] if name == "player" else
                                               pytest.mark.deep) for name in SPECTATED])
def test_through_an_outage_a_puzzle_page_says_it_reconnects_then_its_own_word(
        browser: Any, tmp_path: Path, name: str) -> None:
    """With the server killed under it, the page's status says it reconnects; with the
    server back, it says what the page said before (the shared `statusLine`), not a word of
    its own for the connection (a spectator's player page is told again that it can only
    watch)."""
    path, state, said = SPECTATED[name]
    with ServerProcess(tmp_path / "data") as server:
        page, errors = inflight.watched(browser)
        page.goto(server.http_url + path)
        expect(page.locator("#status")).to_have_text(said, timeout=WAIT)
        inflight.through_an_outage(page, errors, server, state, said)
        page.close()


PLAY_CONTROLS = ("#pad .up", "#undo", "#reset", "#hint", "#share", "#history")


def test_the_player_page_without_a_room_shows_no_controls_nor_the_token(
        browser: Any, tmp_path: Path) -> None:
    """An unknown room, and a room the URL could not create (an unknown pack, a bad link):
    the page says why and shows nothing to play or share; the token is gone from the address
    bar whatever came of the create."""
    ann = TokenStore(tmp_path / "data").create("agent", "ann")
    with ServerProcess(tmp_path / "data") as server:
        page = browser.new_page(viewport={"width": 390, "height": 844})
        errors = inflight.errors(page)
        status = page.locator("#status")
        page.goto(f"{server.http_url}/puzzle/?id=puzzle:doesnotexist")
        expect(status).to_contain_text("there is no world 'puzzle:doesnotexist'", timeout=WAIT)
        for control in PLAY_CONTROLS:
            expect(page.locator(control)).to_be_hidden()
        for query, kept in ((f"pack=nosuch&token={ann}", "?pack=nosuch"),
                            (f"link=pd1.garbage&token={ann}&profile=keke",
                             "?link=pd1.garbage&profile=keke")):
            page.goto(f"{server.http_url}/puzzle/?{query}")
            expect(status).to_contain_text("cannot open this level", timeout=WAIT)
            assert page.evaluate("location.search") == kept
            for control in PLAY_CONTROLS:
                expect(page.locator(control)).to_be_hidden()
        assert not errors, errors


def test_after_a_reconnect_the_player_page_drops_a_stale_note(browser: Any,
                                                             tmp_path: Path) -> None:
    """A move refused before an outage ("blocked") is not said still once the page is back:
    the room may have moved on meanwhile."""
    with ServerProcess(tmp_path / "data", "--open") as server:
        page, errors = inflight.watched(browser, viewport={"width": 1280, "height": 800})
        _start(page, f"{server.http_url}/puzzle/?pack=starter&level=first-steps")
        for expected in (2, 2):  # YOU steps onto the left edge, then cannot go further
            page.keyboard.press("ArrowLeft")
            _revision(page, expected)
        expect(page.locator("#message")).to_have_text("blocked", timeout=WAIT)
        inflight.through_an_outage(page, errors, server, "open", "live · agent")
        expect(page.locator("#message")).to_have_text("")


def test_the_editor_on_a_phone_insets_its_panel_and_names_its_pack_once(
        browser: Any, tmp_path: Path) -> None:
    """At 390 px the side panel's headings and the solver's bar stay inside the panel; level
    JSON without a height says "?" for it (the height box left empty, not "undefined"); the
    pack is made with the name typed before its first use, which is then shown read-only (no
    op renames a pack)."""
    with ServerProcess(tmp_path / "data", "--open") as server:
        page = browser.new_page(viewport={"width": 390, "height": 844})
        errors = inflight.errors(page)
        page.goto(f"{server.http_url}/puzzle/editor.html")
        expect(page.locator("#status")).to_contain_text("live", timeout=WAIT)
        panel = page.locator(".panel.side").bounding_box()
        assert panel is not None
        for heading in page.locator(".panel.side > h2").all():
            box = heading.bounding_box()
            assert box is not None and box["x"] >= panel["x"] + 10, box
        page.evaluate("document.querySelector('#progress').hidden = false")
        bar = page.locator("#progress").bounding_box()
        assert bar is not None and bar["x"] + bar["width"] <= panel["x"] + panel["width"], bar
        page.evaluate("document.querySelector('#progress').hidden = true")

        page.click("summary")
        page.fill("#json", '{"id": "tall", "width": 6, "objects": [], "text": []}')
        page.click("#apply-json")
        expect(page.locator("#summary")).to_have_text("6 × ? · 0 objects · 0 words")
        expect(page.locator("#height")).to_have_value("")

        name = page.locator("#pack-name")
        name.fill("Ann's levels")
        page.click("#validate")  # the pack's first use makes it
        expect(name).not_to_be_editable(timeout=WAIT)
        expect(name).to_have_value("Ann's levels")
        assert "set when it is made" in (name.get_attribute("title") or "")
        assert not errors, errors


def test_the_player_page_plays_on_after_a_reload(browser: Any, tmp_path: Path) -> None:
    """The token left the address bar and was kept nowhere: a reload made the player a
    spectator. The tab keeps it (another browser given the address watches)."""
    ann = TokenStore(tmp_path / "data").create("agent", "ann")
    with ServerProcess(tmp_path / "data") as server:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors = inflight.errors(page)
        _start(page, f"{server.http_url}/puzzle/?pack=starter&level=first-steps&token={ann}")
        status = page.locator("#status")
        expect(status).to_have_text("live · agent")
        assert ann not in page.url
        page.reload()
        _revision(page, 1)
        expect(status).to_have_text("live · agent", timeout=WAIT)
        expect(page.locator("body")).not_to_have_class(re.compile(r"\bwatching\b"), timeout=WAIT)
        assert page.evaluate("window.puzzlePage.canPlay") and ann not in page.url
        page.keyboard.press("ArrowRight")
        _revision(page, 2)
        other = browser.new_page()
        other.goto(page.url)
        expect(other.locator("#status")).to_have_text("live · spectator", timeout=WAIT)
        assert not errors, errors
        # A refused token is not kept, the tab's is: a reload plays on.
        room = page.url
        page.goto(f"{room}&token=not-a-token")
        expect(status).to_contain_text("unauthorized", timeout=WAIT)
        page.reload()
        expect(status).to_have_text("live · agent", timeout=WAIT)
        # An empty one forgets the tab's.
        page.goto(f"{room}&token=")
        expect(status).to_have_text("live · spectator", timeout=WAIT)
        page.reload()
        expect(status).to_have_text("live · spectator", timeout=WAIT)
