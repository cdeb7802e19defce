"""The lab's page sources, read as text: the prelude the pages compile is the contract's,
and no page needs what its Content-Security-Policy forbids (inline script, inline event
handlers, style attributes, resources from elsewhere)."""

from __future__ import annotations

import json
import re

from actors.lab.contract import SHADER_PRELUDE
from server.config import WEB_DIR

LAB = WEB_DIR / "lab"


def test_the_pages_prelude_is_the_contracts() -> None:
    text = (LAB / "prelude.js").read_text()
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', text.split("export const PRELUDE =", 1)[1])
    assert "".join(json.loads(f'"{p}"') for p in parts) == SHADER_PRELUDE


def test_no_page_needs_what_its_policy_forbids() -> None:
    pages = sorted(LAB.glob("*.html"))
    assert {p.name for p in pages} == {"arena.html", "judge.html", "gallery.html", "index.html"}
    for page in pages:
        html = page.read_text()
        for tag in re.findall(r"<script\b[^>]*>", html):
            assert re.search(r'\bsrc="/lab/\w+\.js"', tag) and 'type="module"' in tag, tag
        assert not re.search(r"<script\b[^>]*>\s*[^<\s]", html), page.name  # no inline script
        assert not re.search(r"\son\w+\s*=", html), page.name
        assert not re.search(r"\sstyle\s*=", html), page.name
        assert not re.search(r"<style\b", html), page.name
        for url in re.findall(r'(?:src|href)="([^"]+)"', html):
            assert url.startswith("/"), (page.name, url)  # same origin only
    for script in LAB.glob("*.js"):
        text = script.read_text()
        assert "eval(" not in text and "new Function" not in text, script.name
        for module in re.findall(r'from "([^"]+)"', text):
            assert module.startswith("/"), (script.name, module)
